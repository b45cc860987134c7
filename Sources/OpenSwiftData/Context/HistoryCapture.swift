import Foundation
import GRDB

/// Collects, while a save writes, the history of what it writes: the same values, encoded
/// into the transaction's history entry as they are written (see ``HistoryLog``).
struct HistoryCapture {
    let changes = HistoryCoding.Encoder()
    private var preserved: [String: [PropertyLayout]] = [:]
    private var shapes: [ObjectIdentifier: (names: [String], joinRelationships: [PropertyLayout])] = [:]
    private var referencing: [String: [(table: String, column: String)]] = [:]
    private var hierarchyLinks: [String: [(table: String, column: String)]] = [:]

    /// A new row, recorded by its key alone: its values are the row's, which the table already
    /// holds, and a bulk insert must not write them twice (later changes are recorded with
    /// their values).
    func inserted(entity: String, row: Int64) {
        changes.append(.insert, entity: entity, primaryKey: row, names: [], values: [])
    }

    /// An inserted model that took over an existing row with its unique values: recorded as an
    /// update of that row, with every stored value.
    mutating func upserted(_ storage: AnyModelStorage, layout: EntityLayout, row: Int64, values: [DatabaseValue]) {
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
    func updated(_ storage: AnyModelStorage, layout: EntityLayout, row: Int64, changed: [Int], columnValues: [DatabaseValue]) {
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

    /// Before rows of `layout` are deleted: sets the foreign keys that point at them to NULL
    /// (what SQLite's `ON DELETE SET NULL` would do unseen) and records those rows' updates.
    /// `rows` is SQL selecting the deleted keys, with its arguments. `sparing` names, per table,
    /// the keys (a JSON array) of rows the same save deletes: their deletion is their record, so
    /// they are neither updated nor recorded as updated first.
    mutating func nullifyReferences(to layout: EntityLayout, rows: String, arguments: [DatabaseValue], sparing: [String: String] = [:], in container: ModelContainer, db: Database) throws {
        let primaryKey = quoted(TableDescription.primaryKey)
        for (table, column) in referencingColumns(of: layout.name, in: container) {
            var sql = "UPDATE \(quoted(table)) SET \(quoted(column)) = NULL WHERE \(quoted(column)) IN (\(rows))"
            var values = arguments
            if let spared = sparing[table] {
                sql += " AND \(primaryKey) NOT IN (SELECT value FROM json_each(?))"
                values.append(spared.databaseValue)
            }
            let keys = try Int64.fetchAll(db, sql: sql + " RETURNING \(primaryKey)", arguments: StatementArguments(values))
            for key in keys {
                changes.append(.update, entity: table, primaryKey: key, names: [column], values: [.null])
            }
        }
        // The links of join-table sides that hold keys of a class hierarchy, which SQLite's
        // `ON DELETE CASCADE` cannot reach: deleted as the cascade would (unrecorded, as its
        // deletions are: the deleted row's record covers them).
        for (table, column) in hierarchyLinkColumns(of: layout.name, in: container) {
            try db.execute(sql: "DELETE FROM \(quoted(table)) WHERE \(quoted(column)) IN (\(rows))", arguments: StatementArguments(arguments))
        }
    }

    /// The join-table columns that may hold keys of `entity`'s rows without a foreign-key
    /// constraint (a side whose class has subclasses: `JoinTableDescription.targetSpansHierarchy`),
    /// found once per entity and save.
    private mutating func hierarchyLinkColumns(of entity: String, in container: ModelContainer) -> [(table: String, column: String)] {
        if let known = hierarchyLinks[entity] { return known }
        var targets: Set<String> = [entity]
        var ancestor = container.layout(named: entity)?.superLayout
        while let superLayout = ancestor {
            targets.insert(superLayout.name)
            ancestor = superLayout.superLayout
        }
        var columns: [(table: String, column: String)] = []
        for join in container.store.layout.joinTables {
            if join.sourceSpansHierarchy && targets.contains(join.sourceTable) { columns.append((join.name, JoinTableDescription.sourceColumn)) }
            if join.targetSpansHierarchy && targets.contains(join.targetTable) { columns.append((join.name, JoinTableDescription.targetColumn)) }
        }
        hierarchyLinks[entity] = columns
        return columns
    }

    /// The foreign-key columns (table and column) that hold keys of `entity`'s rows, found once
    /// per entity and save.
    private mutating func referencingColumns(of entity: String, in container: ModelContainer) -> [(table: String, column: String)] {
        if let known = referencing[entity] { return known }
        var columns: [(table: String, column: String)] = []
        // A foreign key to a superclass may hold the key of a subclass's row (keys are shared
        // across a class hierarchy).
        var targets: Set<String> = [entity]
        var ancestor = container.layout(named: entity)?.superLayout
        while let superLayout = ancestor {
            targets.insert(superLayout.name)
            ancestor = superLayout.superLayout
        }
        for other in container.schema.entities {
            guard let layout = container.layout(named: other.name) else { continue }
            for column in layout.columns where column.relationship.map({ targets.contains($0.destinationName) }) == true {
                columns.append((layout.name, column.name))
            }
        }
        referencing[entity] = columns
        return columns
    }

    /// The values a tombstone of `layout`'s row keeps, read from the row (the stored values,
    /// whatever the model holds in memory).
    mutating func storedPreservedValues(of layout: EntityLayout, row: Int64, in db: Database) throws -> [String: DatabaseValue] {
        let columns = preservedColumns(of: layout)
        guard !columns.isEmpty else { return [:] }
        let statement = try db.cachedStatement(sql: "SELECT \(columns.map { quoted($0.name) }.joined(separator: ", ")) FROM \(quoted(layout.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?")
        guard let values = try Row.fetchOne(statement, arguments: [row]) else { return [:] }
        return Dictionary(uniqueKeysWithValues: columns.enumerated().map { ($1.name, values[$0] as DatabaseValue) })
    }

    /// The attributes whose values a deletion keeps in its tombstone.
    mutating func preservedColumns(of layout: EntityLayout) -> [PropertyLayout] {
        if let known = preserved[layout.name] { return known }
        let columns = layout.columns.filter { $0.attribute?.options.contains(.preserveValueOnDeletion) == true }
        preserved[layout.name] = columns
        return columns
    }

    /// The names an upsert of `layout` records (its columns, then its many-to-many
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
        return jsonKeyArray(keys).databaseValue
    }
}
