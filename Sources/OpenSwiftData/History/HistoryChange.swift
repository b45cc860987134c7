import Foundation

/// One model's change in a history transaction.
public enum HistoryChange: Sendable {
    /// The model was inserted.
    case insert(any HistoryInsert)
    /// The model was changed (or an inserted model took over an existing row with the same
    /// unique values).
    case update(any HistoryUpdate)
    /// The model was deleted.
    case delete(any HistoryDelete)

    /// The identifier of the changed model.
    public var changedPersistentIdentifier: PersistentIdentifier {
        switch self {
        case let .insert(change): return change.changedPersistentIdentifier
        case let .update(change): return change.changedPersistentIdentifier
        case let .delete(change): return change.changedPersistentIdentifier
        }
    }

    private var stored: (any StoredHistoryChange)? {
        switch self {
        case let .insert(change): return change as? any StoredHistoryChange
        case let .update(change): return change as? any StoredHistoryChange
        case let .delete(change): return change as? any StoredHistoryChange
        }
    }

    /// The names of the properties the change wrote: every stored property for an insert
    /// (columns, then many-to-many relationships), the changed ones for an update, the
    /// `.preserveValueOnDeletion` ones for a delete. An insert whose row has been deleted
    /// since has none (its deletion follows in a later transaction).
    public var changedPropertyNames: [String] { stored?.record.properties.map(\.name) ?? [] }

    /// The stored form of the values the change wrote, by property name (see
    /// ``HistoryValue``): the new values of an update, the preserved values of a delete.
    ///
    /// An insert's values are read from its row when the history is fetched (a save does not
    /// write them twice, so a bulk insert costs no more than the rows): they are the values the
    /// row holds at that moment, not at the insertion. Changes made after the insertion follow
    /// as their own transactions, so applying all the fetched changes in order ends at the
    /// store's values; the steps in between need not be states the store was in (an insertion
    /// may already name a row inserted later, or a unique value another row held then), so a
    /// replica should apply them with constraint checks deferred to the end. A to-many
    /// relationship kept by the other side's foreign key has a name in
    /// ``changedPropertyNames`` of an update and no value here (the other side's change
    /// carries it). A many-to-many relationship's value is a JSON array of the related keys:
    /// in key order for an insert, in the model's order for an update.
    public var storedValues: [String: HistoryValue] {
        var values: [String: HistoryValue] = [:]
        for (name, value) in stored?.record.properties ?? [] {
            if let value { values[name] = HistoryValue(value) }
        }
        return values
    }
}

/// What OpenSwiftData's history changes share: the record read from the log.
protocol StoredHistoryChange {
    var record: HistoryRecord { get }
}

/// An insertion in a history transaction.
public protocol HistoryInsert<Model>: Hashable, Identifiable, Sendable {
    /// The type of the inserted model.
    associatedtype Model: PersistentModel
    /// The identifier of the inserted model.
    var changedPersistentIdentifier: PersistentIdentifier { get }
    /// The change's position in its transaction.
    var changeIdentifier: Int64 { get }
    /// The number of the change's transaction.
    var transactionIdentifier: Int64 { get }
}

/// An update in a history transaction.
public protocol HistoryUpdate<Model>: Hashable, Identifiable, Sendable {
    /// The type of the updated model.
    associatedtype Model: PersistentModel
    /// The identifier of the updated model.
    var changedPersistentIdentifier: PersistentIdentifier { get }
    /// The change's position in its transaction.
    var changeIdentifier: Int64 { get }
    /// The number of the change's transaction.
    var transactionIdentifier: Int64 { get }
    /// The properties the save changed (attributes and relationships).
    var updatedAttributes: [PartialKeyPath<Model> & Sendable] { get }
}

/// A deletion in a history transaction.
public protocol HistoryDelete<Model>: Hashable, Identifiable, Sendable {
    /// The type of the deleted model.
    associatedtype Model: PersistentModel
    /// The identifier the deleted model had.
    var changedPersistentIdentifier: PersistentIdentifier { get }
    /// The change's position in its transaction.
    var changeIdentifier: Int64 { get }
    /// The number of the change's transaction.
    var transactionIdentifier: Int64 { get }
    /// The values of the model's `.preserveValueOnDeletion` attributes.
    var tombstone: HistoryTombstone<Model> { get }
}

/// An insertion, as OpenSwiftData records it.
public struct DefaultHistoryInsert<Model: PersistentModel>: HistoryInsert, StoredHistoryChange {
    /// The identifier of the inserted model.
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The change's position in its transaction.
    public let changeIdentifier: Int64
    /// The number of the change's transaction.
    public let transactionIdentifier: Int64
    let record: HistoryRecord

    /// The change's position in its transaction.
    public var id: Int64 { changeIdentifier }

    /// Equal when they are the same change of the same transaction.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.transactionIdentifier == rhs.transactionIdentifier && lhs.changeIdentifier == rhs.changeIdentifier
            && lhs.changedPersistentIdentifier == rhs.changedPersistentIdentifier
    }

    /// Hashes the identifiers.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(transactionIdentifier)
        hasher.combine(changeIdentifier)
    }
}

/// An update, as OpenSwiftData records it.
public struct DefaultHistoryUpdate<Model: PersistentModel>: HistoryUpdate, StoredHistoryChange {
    /// The identifier of the updated model.
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The change's position in its transaction.
    public let changeIdentifier: Int64
    /// The number of the change's transaction.
    public let transactionIdentifier: Int64
    /// The properties the save changed (attributes and relationships).
    public let updatedAttributes: [PartialKeyPath<Model> & Sendable]
    let record: HistoryRecord

    /// The change's position in its transaction.
    public var id: Int64 { changeIdentifier }

    /// Equal when they are the same change of the same transaction.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.transactionIdentifier == rhs.transactionIdentifier && lhs.changeIdentifier == rhs.changeIdentifier
            && lhs.changedPersistentIdentifier == rhs.changedPersistentIdentifier
    }

    /// Hashes the identifiers.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(transactionIdentifier)
        hasher.combine(changeIdentifier)
    }
}

/// A deletion, as OpenSwiftData records it.
public struct DefaultHistoryDelete<Model: PersistentModel>: HistoryDelete, StoredHistoryChange {
    /// The identifier the deleted model had.
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The change's position in its transaction.
    public let changeIdentifier: Int64
    /// The number of the change's transaction.
    public let transactionIdentifier: Int64
    /// The values of the model's `.preserveValueOnDeletion` attributes.
    public let tombstone: HistoryTombstone<Model>
    let record: HistoryRecord

    /// The change's position in its transaction.
    public var id: Int64 { changeIdentifier }

    /// Equal when they are the same change of the same transaction.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.transactionIdentifier == rhs.transactionIdentifier && lhs.changeIdentifier == rhs.changeIdentifier
            && lhs.changedPersistentIdentifier == rhs.changedPersistentIdentifier
    }

    /// Hashes the identifiers.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(transactionIdentifier)
        hasher.combine(changeIdentifier)
    }
}

/// The values a deleted model kept: those of its attributes marked `.preserveValueOnDeletion`.
///
/// ```swift
/// if case let .delete(deletion) = change, let deletion = deletion as? DefaultHistoryDelete<Trip> {
///     print(deletion.tombstone[\.name] as? String ?? "?")
/// }
/// ```
public struct HistoryTombstone<Model: PersistentModel>: Sequence, @unchecked Sendable {
    // @unchecked Sendable: immutable; the values are copies decoded from the history log for
    // this tombstone alone (strings, numbers, dates, Codable values), shared with nothing.

    /// A preserved attribute and its value.
    public typealias Element = (keyPath: PartialKeyPath<Model> & Sendable, value: Any)

    let elements: [Element]

    /// The preserved value of an attribute, or nil when it was not preserved.
    public subscript(keyPath: PartialKeyPath<Model>) -> Any? {
        elements.first { $0.keyPath == keyPath }?.value
    }

    /// The preserved attributes and values.
    public func makeIterator() -> IndexingIterator<[Element]> {
        elements.makeIterator()
    }
}
