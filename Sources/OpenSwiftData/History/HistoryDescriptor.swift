import Foundation

/// Which history transactions to fetch or delete, and in which order.
///
/// ```swift
/// var descriptor = HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.author == "importer" })
/// descriptor.fetchLimit = 10
/// let transactions = try context.fetchHistory(descriptor)
/// ```
public struct HistoryDescriptor<TransactionType: HistoryTransaction> {
    /// The transactions to include (all when nil). Conditions on `token`, `transactionIdentifier`,
    /// `timestamp` and `author` (compared with values, joined with `&&`, `||` and `!`) run in
    /// SQL; anything else runs on the transactions SQL returns.
    public var predicate: Predicate<TransactionType>?
    /// The most transactions to return; 0 for no limit.
    public var fetchLimit: UInt64 = 0
    /// The order of the transactions; oldest first when empty.
    public var sortBy: [SortDescriptor<TransactionType>]

    /// A descriptor of the transactions matching `predicate`, oldest first.
    public init(predicate: Predicate<TransactionType>? = nil) {
        self.predicate = predicate
        self.sortBy = []
    }

    /// A descriptor of the transactions matching `predicate`, in the order of `sortBy`.
    public init(predicate: Predicate<TransactionType>? = nil, sortBy: [SortDescriptor<TransactionType>]) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}
