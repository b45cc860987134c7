import GRDB

/// What deleting rows involves beside the `DELETE` itself, shared by saves and deletions by
/// predicate (``ModelContainer/erase(author:)`` deletes every row, so it has nothing to clear):
/// clearing the foreign keys that point at the
/// deleted rows, removing the join-table links a cascade cannot reach, and reading the values
/// tombstones keep. Serves one save, caching per entity what it looks up in the schema.
struct DeletedReferences {
    let container: ModelContainer
    private var referencing: [String: [(table: String, column: String)]] = [:]
    private var hierarchyLinks: [String: [(table: String, column: String)]] = [:]

    init(container: ModelContainer) {
        self.container = container
    }

    /// Before rows of `layout` are deleted: sets the foreign keys that point at them to NULL
    /// (what SQLite's `ON DELETE SET NULL` would do unseen) and tells the captures of each row
    /// it changed. `rows` is SQL selecting the deleted keys, with its arguments. `sparing`
    /// names, per table, the keys (a JSON array) of rows the same save deletes: their deletion
    /// is their record, so they are neither updated nor reported as updated first.
    mutating func clear(
        referencesTo layout: EntityLayout, rows: String, arguments: [DatabaseValue], sparing: [String: String] = [:], captures: [any SaveCapture],
        db: Database
    ) throws {
        let primaryKey = quoted(TableDescription.primaryKey)
        for (table, column) in referencingColumns(of: layout.name) {
            var sql = "UPDATE \(quoted(table)) SET \(quoted(column)) = NULL WHERE \(quoted(column)) IN (\(rows))"
            var values = arguments
            if let spared = sparing[table] {
                sql += " AND \(primaryKey) NOT IN (SELECT value FROM json_each(?))"
                values.append(spared.databaseValue)
            }
            let keys = try Int64.fetchAll(db, sql: sql + " RETURNING \(primaryKey)", arguments: StatementArguments(values))
            for key in keys {
                for capture in captures { capture.referenceCleared(table: table, column: column, row: key) }
            }
        }
        // The links of join-table sides that hold keys of a class hierarchy, which SQLite's
        // `ON DELETE CASCADE` cannot reach: deleted as the cascade would (unreported, as its
        // deletions are: the deleted row's record covers them).
        for (table, column) in hierarchyLinkColumns(of: layout.name) {
            try db.execute(sql: "DELETE FROM \(quoted(table)) WHERE \(quoted(column)) IN (\(rows))", arguments: StatementArguments(arguments))
        }
    }

    /// The values a tombstone of `layout`'s row keeps, read from the row (the stored values,
    /// whatever the model holds in memory).
    static func storedPreservedValues(of layout: EntityLayout, row: Int64, in db: Database) throws -> [String: DatabaseValue] {
        let columns = layout.preservedColumns
        guard !columns.isEmpty else { return [:] }
        let statement = try db.cachedStatement(
            sql:
                "SELECT \(columns.map { quoted($0.name) }.joined(separator: ", ")) FROM \(quoted(layout.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?"
        )
        guard let values = try Row.fetchOne(statement, arguments: [row]) else { return [:] }
        return Dictionary(uniqueKeysWithValues: columns.enumerated().map { ($1.name, values[$0] as DatabaseValue) })
    }

    /// The names of `entity` and of its superclasses: a foreign key to a superclass may hold the
    /// key of a subclass's row (keys are shared across a class hierarchy).
    private func hierarchy(of entity: String) -> Set<String> {
        var targets: Set<String> = [entity]
        var ancestor = container.layout(named: entity)?.superLayout
        while let superLayout = ancestor {
            targets.insert(superLayout.name)
            ancestor = superLayout.superLayout
        }
        return targets
    }

    /// The join-table columns that may hold keys of `entity`'s rows without a foreign-key
    /// constraint (a side whose class has subclasses: `JoinTableDescription.targetSpansHierarchy`),
    /// found once per entity and save.
    private mutating func hierarchyLinkColumns(of entity: String) -> [(table: String, column: String)] {
        if let known = hierarchyLinks[entity] { return known }
        let targets = hierarchy(of: entity)
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
    private mutating func referencingColumns(of entity: String) -> [(table: String, column: String)] {
        if let known = referencing[entity] { return known }
        let targets = hierarchy(of: entity)
        var columns: [(table: String, column: String)] = []
        for other in container.schema.entities {
            guard let layout = container.layout(named: other.name) else { continue }
            for column in layout.columns where column.relationship.map({ targets.contains($0.destinationName) }) == true {
                columns.append((layout.name, column.name))
            }
        }
        referencing[entity] = columns
        return columns
    }
}
