import Foundation
import GRDB

/// Collects, while a save writes, the history records of what it writes: the same values, in
/// the same transaction (see ``HistoryLog``).
struct HistoryCapture {
    private(set) var records: [HistoryRecord] = []
    private var preserved: [String: [PropertyLayout]] = [:]

    /// An inserted row with every stored value (an upsert is recorded as an update of the row it
    /// took over).
    mutating func inserted(_ storage: AnyModelStorage, layout: EntityLayout, row: Int64, values: [DatabaseValue], upserted: Bool) {
        var properties: [(name: String, value: DatabaseValue?)] = []
        properties.reserveCapacity(values.count)
        for (column, value) in zip(layout.columns, values) { properties.append((column.name, value)) }
        for property in layout.relationships {
            guard case .joinTable? = property.relationship?.storage else { continue }
            properties.append((property.name, joinValue(storage, property)))
        }
        records.append(HistoryRecord(kind: upserted ? .update : .insert, entity: layout.name, primaryKey: row, properties: properties))
    }

    /// A changed row: the changed properties, with the new stored values of those that have one.
    mutating func updated(_ storage: AnyModelStorage, layout: EntityLayout, row: Int64, values: [Int: DatabaseValue]) {
        var properties: [(name: String, value: DatabaseValue?)] = []
        for index in storage.changedProperties.sorted() {
            let property = layout.properties[index]
            if let column = property.columnIndex {
                properties.append((property.name, values[column]))
            } else if let relationship = property.relationship {
                if case .joinTable = relationship.storage {
                    properties.append((property.name, joinValue(storage, property)))
                } else {
                    properties.append((property.name, nil))
                }
            }
            // Ephemeral attributes are not stored, so not recorded.
        }
        guard !properties.isEmpty else { return }
        records.append(HistoryRecord(kind: .update, entity: layout.name, primaryKey: row, properties: properties))
    }

    /// A deleted row, with the values of its `.preserveValueOnDeletion` attributes.
    mutating func deleted(entity layout: EntityLayout, row: Int64, preservedValues: (PropertyLayout) -> DatabaseValue?) {
        let properties = preservedColumns(of: layout).map { ($0.name, preservedValues($0)) }
        records.append(HistoryRecord(kind: .delete, entity: layout.name, primaryKey: row, properties: properties))
    }

    /// The attributes whose values a deletion keeps in its tombstone.
    mutating func preservedColumns(of layout: EntityLayout) -> [PropertyLayout] {
        if let known = preserved[layout.name] { return known }
        let columns = layout.columns.filter { $0.attribute?.options.contains(.preserveValueOnDeletion) == true }
        preserved[layout.name] = columns
        return columns
    }

    /// A many-to-many relationship's value as recorded: the related rows' keys as a JSON array.
    private func joinValue(_ storage: AnyModelStorage, _ property: PropertyLayout) -> DatabaseValue? {
        guard case let .loaded(refs) = storage.toManySlot(property) else { return nil }
        let keys = (refs ?? []).compactMap { $0.base.rowKey }
        return ("[" + keys.map(String.init).joined(separator: ",") + "]").databaseValue
    }
}
