import Foundation
import GRDB

/// Brings a store whose tables were created by an earlier schema to the current layout, for the
/// changes that need no code (what SwiftData calls a lightweight migration): an entity added or
/// removed, a property added (optional, or with a default that existing rows receive), removed or
/// renamed through `originalName:`, a property made optional, uniqueness constraints and indexes
/// added or removed, relationships added or removed.
///
/// The store's own tables are the truth: the plan compares them (`PRAGMA table_info`, the
/// indexes in `sqlite_master`) with the layout. Every change is planned, and every change the
/// migration cannot infer is refused with a typed error naming the entity and property, before
/// anything is written. The plan then runs in one transaction with foreign-key enforcement off
/// (so rebuilding a table does not fire `ON DELETE` actions), checks the foreign keys, and
/// records the new layout: a failure or a crash leaves the store exactly as it was.
struct LightweightMigration {
    /// One statement of the plan, with what it does for the log and errors.
    struct Step {
        let sql: String
        let purpose: String
        /// For the copy of a rebuild: the table read, so that rows are copied in batches of
        /// primary keys (bounded work per statement, progress between batches).
        var copy: (from: String, into: String)? = nil
    }

    let steps: [Step]
    /// Whether a table is copied into a new one (the store is backed up first).
    let rewritesTables: Bool

    private struct ExistingColumn {
        let name: String
        let type: String
        let isNullable: Bool
    }

    /// Plans the migration of the store open in `db` to `layout`, or throws a
    /// `SwiftDataError(.incompatibleSchema)` that names the change it cannot infer.
    static func plan(in db: Database, to layout: StoreLayout, metadataTable: String) throws -> LightweightMigration {
        let existingTables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))
        var steps: [Step] = []
        var rewrites = false
        let wanted = Set(layout.tables.map(\.name) + layout.joinTables.map(\.name) + [metadataTable])

        // Tables of entities and relationships that are gone.
        for table in existingTables.sorted() where !wanted.contains(table) {
            steps.append(Step(sql: "DROP TABLE \(quoted(table))", purpose: "remove the table \(table), whose entity or relationship is no longer in the schema"))
        }

        for table in layout.tables {
            guard existingTables.contains(table.name) else {
                steps += table.createStatements.map { Step(sql: $0, purpose: "add the entity \(table.name)") }
                continue
            }
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(quoted(table.name)))").map { row in
                ExistingColumn(name: row["name"], type: (row["type"] as String? ?? "").uppercased(), isNullable: (row["notnull"] as Int? ?? 0) == 0)
            }
            let (tableSteps, rewritten) = try migrateColumns(of: table, existing: columns)
            steps += tableSteps
            rewrites = rewrites || rewritten
            steps += try indexSteps(for: table, in: db, rebuilt: rewritten)
        }

        for join in layout.joinTables where !existingTables.contains(join.name) {
            steps += join.createStatements.map { Step(sql: $0, purpose: "add the relationship table \(join.name)") }
        }
        return LightweightMigration(steps: steps, rewritesTables: rewrites)
    }

    /// The steps that give `table` its columns: renames and additions in place, a rebuild when a
    /// column goes away or becomes optional.
    private static func migrateColumns(of table: TableDescription, existing: [ExistingColumn]) throws -> ([Step], Bool) {
        let entity = table.name
        let existingByName = Dictionary(existing.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var renames: [(from: String, to: String)] = []
        var additions: [ColumnDescription] = []
        var needsRebuild = false
        var sources: [String: String] = [:]  // target column -> existing column it is read from
        for column in table.columns {
            let source: ExistingColumn?
            if let same = existingByName[column.name] {
                source = same
            } else if let original = column.originalName, let renamed = existingByName[original] {
                source = renamed
                renames.append((original, column.name))
            } else {
                source = nil
            }
            guard let source else {
                if !column.isNullable && column.defaultValue == nil {
                    throw refusal(entity, column.name, "the property was added as non-optional without a default value, so existing rows would have no value for it; make it optional, give it a default, or migrate it with a custom stage")
                }
                additions.append(column)
                continue
            }
            sources[column.name] = source.name
            if source.type != column.type {
                throw refusal(entity, column.name, "its stored type changed from \(source.type) to \(column.type); a type change needs a custom migration stage")
            }
            if source.isNullable && !column.isNullable {
                throw refusal(entity, column.name, "it became non-optional; rows holding nil would have no value; migrate it with a custom stage")
            }
            if !source.isNullable && column.isNullable { needsRebuild = true }
        }
        let kept = Set(sources.values)
        if existing.contains(where: { !kept.contains($0.name) }) { needsRebuild = true }

        guard needsRebuild else {
            var steps = renames.map {
                Step(sql: "ALTER TABLE \(quoted(entity)) RENAME COLUMN \(quoted($0.from)) TO \(quoted($0.to))", purpose: "rename \(entity).\($0.from) to \($0.to)")
            }
            for column in additions {
                var definition = "\(quoted(column.name)) \(column.type)"
                if let target = column.references {
                    definition += " REFERENCES \(quoted(target))(\(quoted(TableDescription.primaryKey))) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED"
                }
                if let value = column.defaultValue, !value.isNull {
                    definition += (column.isNullable ? "" : " NOT NULL") + " DEFAULT \(literal(value))"
                }
                steps.append(Step(sql: "ALTER TABLE \(quoted(entity)) ADD COLUMN \(definition)", purpose: "add \(entity).\(column.name)"))
            }
            return (steps, false)
        }

        // Rebuild: a new table with the target definition, filled from the old one.
        let temporary = "_osd_migrating_\(entity)"
        let definition = TableDescription(name: temporary, columns: table.columns, uniqueConstraints: [], indexes: [])
        guard let create = definition.createStatements.first else { return ([], false) }
        let primaryKey = quoted(TableDescription.primaryKey)
        let targets = [primaryKey] + table.columns.map { quoted($0.name) }
        let values = [primaryKey] + table.columns.map { column -> String in
            if let source = sources[column.name] { return quoted(source) }
            return column.defaultValue.map(literal) ?? "NULL"
        }
        let steps = [
            Step(sql: create, purpose: "rebuild \(entity) with its new columns"),
            Step(sql: "INSERT INTO \(quoted(temporary)) (\(targets.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM \(quoted(entity))", purpose: "copy the rows of \(entity)", copy: (entity, temporary)),
            Step(sql: "DROP TABLE \(quoted(entity))", purpose: "replace \(entity)"),
            Step(sql: "ALTER TABLE \(quoted(temporary)) RENAME TO \(quoted(entity))", purpose: "replace \(entity)"),
        ]
        return (steps, true)
    }

    /// Drops the indexes the layout no longer has and creates the ones it lacks (all of them
    /// after a rebuild). A new unique index over duplicate rows fails, and the migration with it.
    private static func indexSteps(for table: TableDescription, in db: Database, rebuilt: Bool) throws -> [Step] {
        let expected = table.createStatements.dropFirst().map { statement in
            (name: indexName(in: statement), sql: statement.replacingOccurrences(of: "CREATE INDEX IF NOT EXISTS", with: "CREATE INDEX"))
        }
        let existing = rebuilt ? [] : try Row.fetchAll(
            db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name LIKE 'osd_%'", arguments: [table.name]
        ).map { (name: $0["name"] as String? ?? "", sql: $0["sql"] as String? ?? "") }
        // Compared by name and definition: constraints are numbered, so one added before another
        // renames the latter.
        func key(_ name: String, _ sql: String) -> String { name + "|" + sql.replacingOccurrences(of: " IF NOT EXISTS", with: "") }
        var steps: [Step] = []
        let expectedKeys = Set(expected.map { key($0.name, $0.sql) })
        for index in existing where !expectedKeys.contains(key(index.name, index.sql)) {
            steps.append(Step(sql: "DROP INDEX \(quoted(index.name))", purpose: "remove the index \(index.name) of \(table.name)"))
        }
        let existingKeys = Set(existing.map { key($0.name, $0.sql) })
        for index in expected where !existingKeys.contains(key(index.name, index.sql)) {
            steps.append(Step(sql: index.sql, purpose: "add the index or uniqueness constraint \(index.name) of \(table.name) (existing rows may violate it)"))
        }
        return steps
    }

    /// The quoted index name of a `CREATE [UNIQUE] INDEX [IF NOT EXISTS] "name" ON …` statement.
    private static func indexName(in statement: String) -> String {
        guard let start = statement.firstIndex(of: "\""), let end = statement[statement.index(after: start)...].range(of: "\" ON ") else { return statement }
        return String(statement[statement.index(after: start)..<end.lowerBound]).replacingOccurrences(of: "\"\"", with: "\"")
    }

    /// A stored value as an SQL literal, for DDL (where arguments cannot be bound).
    static func literal(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: return "NULL"
        case let .int64(integer): return String(integer)
        case let .double(double): return double.isFinite ? "\(double)" : "NULL"
        case let .string(text): return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case let .blob(data): return "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }

    static let copyBatch: Int64 = 10_000

    /// Runs `INSERT … SELECT … FROM source` in batches of rows after the last copied primary
    /// key, reporting progress after each.
    private func copyInBatches(_ sql: String, from source: String, into destination: String, in db: Database, progress: (@Sendable (MigrationProgress) -> Void)?) throws {
        let primaryKey = quoted(TableDescription.primaryKey)
        let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(quoted(source))") ?? 0
        let statement = try db.makeStatement(sql: sql + " WHERE \(primaryKey) > ? ORDER BY \(primaryKey) LIMIT \(Self.copyBatch)")
        let last = try db.makeStatement(sql: "SELECT MAX(\(primaryKey)) FROM \(quoted(destination))")
        var done = 0
        var after = Int64.min
        while true {
            try statement.execute(arguments: [after])
            let copied = db.changesCount
            guard copied > 0 else { break }
            done += copied
            progress?(MigrationProgress(table: source, rowsDone: done, rowsTotal: total))
            guard let next = try Int64.fetchOne(last) else { break }
            after = next
        }
        if done == 0 { progress?(MigrationProgress(table: source, rowsDone: 0, rowsTotal: total)) }
    }

    private static func refusal(_ entity: String, _ property: String, _ why: String) -> SwiftDataError {
        SwiftDataError(.incompatibleSchema, "cannot migrate \(entity).\(property) without a custom migration: \(why). The store was not changed.", entity: entity, property: property)
    }

    /// Runs the plan in one transaction on `db` (which has foreign keys off), checks the foreign
    /// keys, and records the new layout in the metadata table.
    func run(in db: Database, metadata: [String: String], metadataTable: String, progress: (@Sendable (MigrationProgress) -> Void)? = nil) throws {
        try db.inTransaction {
            for step in steps {
                do {
                    if let copy = step.copy {
                        try copyInBatches(step.sql, from: copy.from, into: copy.into, in: db, progress: progress)
                    } else {
                        try db.execute(sql: step.sql)
                    }
                } catch {
                    throw SwiftDataError(.incompatibleSchema, "the migration could not \(step.purpose): \(error). The store was not changed.")
                }
            }
            let violations = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
            if let first = violations.first {
                throw SwiftDataError(.incompatibleSchema, "after the migration, \(violations.count) row(s) of \(first["table"] as String? ?? "?") point at rows that do not exist. The store was not changed.")
            }
            for (key, value) in metadata {
                try db.execute(sql: "INSERT OR REPLACE INTO \(quoted(metadataTable)) (key, value) VALUES (?, ?)", arguments: [key, value])
            }
            return .commit
        }
    }
}
