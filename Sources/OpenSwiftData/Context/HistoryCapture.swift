import Foundation
import GRDB

/// Collects, while a save writes, the history of what it writes: the same values, encoded
/// into the transaction's history entry as they are written (see ``HistoryLog``).
struct HistoryCapture {
    let changes = HistoryCoding.Encoder()
    private var preserved: [String: [PropertyLayout]] = [:]
    private var shapes: [ObjectIdentifier: (names: [String], joinRelationships: [PropertyLayout])] = [:]

    /// An inserted row with every stored value (an upsert is recorded as an update of the row it
    /// took over).
    mutating func inserted(_ storage: AnyModelStorage, layout: EntityLayout, row: Int64, values: [DatabaseValue], upserted: Bool) {
        let shape = insertShape(of: layout)
        var values = values
        var valueless: [Int] = []
        for property in shape.joinRelationships {
            let value = joinValue(storage, property)
            if value == nil { valueless.append(values.count) }
            values.append(value ?? .null)
        }
        changes.append(upserted ? .update : .insert, entity: layout.name, primaryKey: row, names: shape.names, values: values, valueless: valueless)
    }

    /// A changed row: the changed properties, with the new stored values of those that have one.
    func updated(_ storage: AnyModelStorage, layout: EntityLayout, row: Int64, values: [Int: DatabaseValue]) {
        var names: [String] = []
        var recorded: [DatabaseValue] = []
        var valueless: [Int] = []
        for index in storage.changedProperties.sorted() {
            let property = layout.properties[index]
            let value: DatabaseValue?
            if let column = property.columnIndex {
                value = values[column]
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
    mutating func deleted(entity layout: EntityLayout, row: Int64, preservedValues: (PropertyLayout) -> DatabaseValue?) {
        var names: [String] = []
        var values: [DatabaseValue] = []
        var valueless: [Int] = []
        for property in preservedColumns(of: layout) {
            let value = preservedValues(property)
            if value == nil { valueless.append(names.count) }
            names.append(property.name)
            values.append(value ?? .null)
        }
        changes.append(.delete, entity: layout.name, primaryKey: row, names: names, values: values, valueless: valueless)
    }

    /// The attributes whose values a deletion keeps in its tombstone.
    mutating func preservedColumns(of layout: EntityLayout) -> [PropertyLayout] {
        if let known = preserved[layout.name] { return known }
        let columns = layout.columns.filter { $0.attribute?.options.contains(.preserveValueOnDeletion) == true }
        preserved[layout.name] = columns
        return columns
    }

    /// The names an insert of `layout` records (its columns, then its many-to-many
    /// relationships), made once per entity and shared by its records.
    private mutating func insertShape(of layout: EntityLayout) -> (names: [String], joinRelationships: [PropertyLayout]) {
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
        return ("[" + keys.map(String.init).joined(separator: ",") + "]").databaseValue
    }
}
