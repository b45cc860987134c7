import Foundation

/// What to fetch: a predicate, a sort order, a window, and whether unsaved changes count.
///
/// ```swift
/// var descriptor = FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate, order: .reverse)])
/// descriptor.fetchLimit = 10
/// let recent = try context.fetch(descriptor)
/// ```
public struct FetchDescriptor<T: PersistentModel>: @unchecked Sendable {
    // @unchecked Sendable: every field is a value type (`Predicate` and `SortDescriptor` are
    // immutable values built from key paths and captured Sendable constants, key paths are
    // Sendable); SwiftData marks it the same way.

    /// Which models to fetch; nil fetches all.
    public var predicate: Predicate<T>?
    /// The order of the results, first descriptor first.
    public var sortBy: [SortDescriptor<T>]
    /// The largest number of results, or nil for no limit.
    public var fetchLimit: Int?
    /// How many results to skip, or nil for none.
    public var fetchOffset: Int?
    /// Whether unsaved inserts, changes and deletions of the context count (default true).
    public var includePendingChanges: Bool = true
    /// The properties to load (all of them when empty). The others are read from the store
    /// when first accessed (one query per model); relationships are always loaded.
    public var propertiesToFetch: [PartialKeyPath<T>] = []
    /// Relationships to load with the results.
    public var relationshipKeyPathsForPrefetching: [PartialKeyPath<T>] = []

    /// Creates a descriptor.
    public init(predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}
