import Foundation
import GRDB

/// Collects, while a save writes, the history of what it writes: the same values, encoded
/// into the transaction's history entry as they are written, appended by
/// ``finish(author:in:)`` (see ``HistoryLog``). Always active: every save keeps its history.
///
/// Not `Sendable`: it serves one save, on the thread running that save's transaction.
final class HistoryCapture: SaveCapture {
    let changes = HistoryCoding.Encoder()
    /// The history transaction ``finish(author:in:)`` appended (nil before, or when the save
    /// recorded nothing).
    private(set) var transaction: Int64?
    private var shapes: [ObjectIdentifier: (names: [String], joinRelationships: [PropertyLayout])] = [:]

    /// Nothing to read before rows go: the save hands ``deleted(_:row:preserved:)`` the values
    /// tombstones keep.
    func willDelete(_ layout: EntityLayout, rows: DeletedRows, in db: Database) throws {}

    /// A foreign key cleared because its target is deleted: an update of that row.
    func referenceCleared(table: String, column: String, row: Int64) {
        changes.append(.update, entity: table, primaryKey: row, names: [column], values: [.null])
    }

    /// A new row, recorded by its key alone: its values are the row's, which the table already
    /// holds, and a bulk insert must not write them twice (later changes are recorded with
    /// their values).
    func inserted(_ registration: Registration, layout: EntityLayout, row: Int64, values: [DatabaseValue], in db: Database) throws {
        changes.append(.insert, entity: layout.name, primaryKey: row, names: [], values: [])
    }

    /// An inserted model that took over an existing row with its unique values: recorded as an
    /// update of that row, with every stored value.
    func upserted(_ registration: Registration, layout: EntityLayout, row: Int64, values: [DatabaseValue], in db: Database) throws {
        let storage = registration.storage
        let shape = insertShape(of: layout)
        var values = values
        var valueless: [Int] = []
        for property in shape.joinRelationships {
            let value = joinValue(storage, property)
            if value == nil { valueless.append(values.count) }
            values.append(value ?? .null)
        }
        changes.append(.update, entity: layout.name, primaryKey: row, names: shape.names, values: values, valueless: valueless)
    }

    /// A changed row: the changed properties (`changed`, sorted indexes), with the new stored
    /// values of those that have one. `columnValues` holds the values written, in the order of
    /// the changed properties that are columns.
    func updated(
        _ registration: Registration, layout: EntityLayout, row: Int64, properties changed: [Int], columns: [Int],
        values columnValues: [DatabaseValue], in db: Database
    ) throws {
        let storage = registration.storage
        var names: [String] = []
        var recorded: [DatabaseValue] = []
        var valueless: [Int] = []
        names.reserveCapacity(changed.count)
        recorded.reserveCapacity(changed.count)
        var nextColumnValue = columnValues.makeIterator()
        for index in changed {
            let property = layout.properties[index]
            let value: DatabaseValue?
            if property.columnIndex != nil {
                value = nextColumnValue.next()
            } else if let relationship = property.relationship {
                if case .joinTable = relationship.storage { value = joinValue(storage, property) } else { value = nil }
            } else {
                continue  // Ephemeral attributes are not stored, so not recorded.
            }
            if value == nil { valueless.append(names.count) }
            names.append(property.name)
            recorded.append(value ?? .null)
        }
        guard !names.isEmpty else { return }
        changes.append(.update, entity: layout.name, primaryKey: row, names: names, values: recorded, valueless: valueless)
    }

    /// A deleted row, with the values of its `.preserveValueOnDeletion` attributes.
    func deleted(_ layout: EntityLayout, row: Int64, preserved preservedValues: (PropertyLayout) -> DatabaseValue?) {
        var names: [String] = []
        var values: [DatabaseValue] = []
        var valueless: [Int] = []
        for property in layout.preservedColumns {
            let value = preservedValues(property)
            if value == nil { valueless.append(names.count) }
            names.append(property.name)
            values.append(value ?? .null)
        }
        changes.append(.delete, entity: layout.name, primaryKey: row, names: names, values: values, valueless: valueless)
    }

    /// The names an upsert of `layout` records (its columns, then its many-to-many
    /// relationships), made once per entity and shared by its records.
    /// Appends the save's history entry, when it recorded anything.
    func finish(author: String?, in db: Database) throws {
        transaction = try HistoryLog.append(changes, author: author, in: db)
    }

    private func insertShape(of layout: EntityLayout) -> (names: [String], joinRelationships: [PropertyLayout]) {
        if let known = shapes[ObjectIdentifier(layout)] { return known }
        let joins = layout.relationships.filter { property in
            if case .joinTable? = property.relationship?.storage { return true }
            return false
        }
        let shape = (layout.columns.map(\.name) + joins.map(\.name), joins)
        shapes[ObjectIdentifier(layout)] = shape
        return shape
    }

    /// A many-to-many relationship's value as recorded: the related rows' keys as a JSON array.
    private func joinValue(_ storage: AnyModelStorage, _ property: PropertyLayout) -> DatabaseValue? {
        guard case let .loaded(refs) = storage.toManySlot(property) else { return nil }
        let keys = (refs ?? []).compactMap { $0.base.rowKey }
        return jsonKeyArray(keys).databaseValue
    }
}
