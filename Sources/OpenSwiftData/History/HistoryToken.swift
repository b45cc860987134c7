import Foundation

/// A position in a store's history: the changes after a token are the ones not seen yet.
public protocol HistoryToken: Comparable, Codable, Hashable, Identifiable, Sendable {
    /// The token's underlying value.
    associatedtype TokenType: Codable, Hashable, Sendable
    /// The token's underlying value.
    var tokenValue: TokenType? { get }
}

/// The history token of OpenSwiftData's stores: the number of a transaction, per store.
///
/// Keep the token of the last transaction you processed (it is `Codable`), and fetch the ones
/// after it next time:
///
/// ```swift
/// let token = transactions.last?.token
/// let newer = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>(
///     predicate: #Predicate { $0.token > token! }))
/// ```
public struct DefaultHistoryToken: HistoryToken {
    /// Transaction numbers by store identifier.
    public typealias TokenType = [String: Int64]

    /// The transaction number (of the first store, for a token that names several).
    public var id: Int
    /// Transaction numbers by store identifier.
    public var tokenValue: TokenType?

    init(storeIdentifier: String, transaction: Int64) {
        id = Int(transaction)
        tokenValue = [storeIdentifier: transaction]
    }

    /// The transaction number this token records for a store.
    func transaction(in storeIdentifier: String) -> Int64? {
        tokenValue?[storeIdentifier]
    }

    /// Orders by transaction number, store by store (stores in identifier order).
    public static func < (lhs: DefaultHistoryToken, rhs: DefaultHistoryToken) -> Bool {
        let left = (lhs.tokenValue ?? [:]).sorted { $0.key < $1.key }
        let right = (rhs.tokenValue ?? [:]).sorted { $0.key < $1.key }
        for (a, b) in zip(left, right) {
            if a.key != b.key { return a.key < b.key }
            if a.value != b.value { return a.value < b.value }
        }
        return left.count < right.count
    }
}
