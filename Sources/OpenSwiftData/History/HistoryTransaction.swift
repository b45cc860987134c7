import Foundation

/// One committed save as the history records it.
public protocol HistoryTransaction: Hashable, Identifiable, Sendable {
    /// The type of the transaction's token.
    associatedtype TokenType: HistoryToken
    /// The type of the transaction's identifier.
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    /// When the save committed.
    var timestamp: Date { get }
    /// What the save inserted, updated and deleted, one change per model.
    var changes: [HistoryChange] { get }
    /// The position of this transaction in the history.
    var token: TokenType { get }
    /// The transaction's number in its store.
    var transactionIdentifier: TransactionIdentifier { get }
    /// The store the save wrote.
    var storeIdentifier: String { get }
    /// The ``ModelContext/author`` of the context that saved.
    var author: String? { get }
}

/// The history transactions of OpenSwiftData's stores.
public struct DefaultHistoryTransaction: HistoryTransaction {
    /// The token type.
    public typealias TokenType = DefaultHistoryToken
    /// Transactions are numbered per store.
    public typealias TransactionIdentifier = Int64

    /// The transaction's number in its store.
    public let id: Int64
    /// When the save committed.
    public let timestamp: Date
    /// What the save inserted, updated and deleted, one change per model, in the order written
    /// (deletions first, then insertions, then updates).
    public let changes: [HistoryChange]
    /// The position of this transaction in the history.
    public let token: DefaultHistoryToken
    /// The transaction's number in its store (equal to ``id``).
    public var transactionIdentifier: Int64 { id }
    /// The store the save wrote.
    public let storeIdentifier: String
    /// The executable that saved.
    public let bundleIdentifier: String
    /// The process identifier of the process that saved.
    public let processIdentifier: String
    /// The ``ModelContext/author`` of the context that saved.
    public let author: String?

    /// Transactions are equal when they are the same transaction of the same store.
    public static func == (lhs: DefaultHistoryTransaction, rhs: DefaultHistoryTransaction) -> Bool {
        lhs.id == rhs.id && lhs.storeIdentifier == rhs.storeIdentifier
    }

    /// Hashes the store and transaction number.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storeIdentifier)
        hasher.combine(id)
    }
}
