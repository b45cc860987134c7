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
    /// The entities and columns the plan renames, recorded for reading older history.
    var renames = HistoryRenames(through: 0)
    /// Non-optional columns left nullable for a custom stage's `didMigrate` to fill (see
    /// `plan(in:to:metadataTable:deferringRequired:)`), by table.
    var deferredColumns: [String: Set<String>] = [:]
    /// The layout the plan migrates to, recorded in ``StoreTableRegistry`` when it has run.
    var layout: StoreLayout? = nil

    private struct ExistingColumn {
        let name: String
        let type: String
        let isNullable: Bool
    }

    /// Plans the migration of the store open in `db` to `layout`, or throws a
    /// `SwiftDataError(.incompatibleSchema)` that names the change it cannot infer.
    ///
    /// With `deferringRequired` (the target version of a custom stage, whose `didMigrate` runs
    /// next), a non-optional column that existing rows have no value for (added without a
    /// default, or made non-optional while rows hold nil) is not refused: it is left nullable
    /// and listed in ``deferredColumns``, for `didMigrate` to fill; the stage then checks every
    /// row and makes the column `NOT NULL` before it commits.
    static func plan(in db: Database, to layout: StoreLayout, metadataTable: String, deferringRequired: Bool = false) throws -> LightweightMigration {
        let existingTables = Set(
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_'"))
        var steps: [Step] = []
        var rewrites = false
        let wanted = Set(layout.tables.map(\.name) + layout.joinTables.map(\.name) + [metadataTable]).union(HistoryLog.tables)
        // Only the tables the store created for entities and relationships may be renamed or
        // dropped: sync capture's, the sync engine's, and any the app keeps in the file, are never
        // touched.
        let storedLayout = try String.fetchOne(db, sql: "SELECT value FROM \(quoted(metadataTable)) WHERE key = 'layout'")
        let created = try StoreTableRegistry.tables(in: db, layoutFingerprint: storedLayout)
        func followsSchema(_ table: String) -> Bool { created[table].map(StoreTableRegistry.Owner.followsSchema) ?? false }

        // Entities renamed through `originalEntityName`: the old table is renamed first (SQLite
        // rewrites the other tables' references to it), then migrated as the entity's own.
        var sourceOf: [String: String] = [:]  // table -> existing table its rows are read from
        for table in layout.tables where !existingTables.contains(table.name) {
            guard let original = table.originalName, existingTables.contains(original), !wanted.contains(original),
                created[original] == StoreTableRegistry.Owner.entity, !sourceOf.values.contains(original)
            else { continue }
            sourceOf[table.name] = original
            steps.append(
                Step(
                    sql: "ALTER TABLE \(quoted(original)) RENAME TO \(quoted(table.name))", purpose: "rename the entity \(original) to \(table.name)")
            )
            if existingTables.contains(HistoryLog.sequenceTable) {
                steps.append(
                    Step(
                        sql:
                            "UPDATE \(quoted(HistoryLog.sequenceTable)) SET entity = \(literal(table.name.databaseValue)) WHERE entity = \(literal(original.databaseValue))",
                        purpose: "carry the primary-key sequence of \(original) over to \(table.name)"
                    ))
            }
        }
        let renamed = Dictionary(sourceOf.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        var renames = HistoryRenames(through: 0, entities: renamed)
        var deferred: [String: Set<String>] = [:]

        // Tables of entities and relationships that are gone. A relationship table whose two
        // entities are still related through a table of another name is a renamed relationship:
        // dropping it would lose the links, so that is refused. A side that holds keys of a
        // class hierarchy has no foreign key (it names no one table): such a table is taken for
        // renamed when a relationship table the store does not have yet relates the entities
        // its other side names.
        let newJoinTables = layout.joinTables.filter { !existingTables.contains($0.name) }
        for table in existingTables.sorted() where !wanted.contains(table) && renamed[table] == nil && followsSchema(table) {
            // Targets under their new names: an entity renamed renames its join tables too.
            let references = try Row.fetchAll(db, sql: "SELECT \"table\", \"from\" FROM pragma_foreign_key_list(?)", arguments: [table])
            let targets = Set(
                references.map { row -> String in
                    let target: String = row["table"]
                    return renamed[target] ?? target
                })
            let checkedSides = Set(references.map { row -> String in row["from"] })
            let isJoinTable =
                Set(try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])) == [
                    JoinTableDescription.sourceColumn, JoinTableDescription.targetColumn,
                ]
            let successor = !targets.isEmpty ? layout.joinTables.first(where: { Set([$0.sourceTable, $0.targetTable]) == targets }) : nil
            let hierarchySuccessor =
                checkedSides.count < 2 ? newJoinTables.first(where: { targets.isSubset(of: [$0.sourceTable, $0.targetTable]) }) : nil
            if isJoinTable, let successor = successor ?? hierarchySuccessor,
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(table)))") == true
            {
                throw SwiftDataError(
                    .incompatibleSchema,
                    "the relationship stored in \(table) now lives in \(successor.name) (a relationship or its entity renamed, or its inverse changed); a lightweight migration would lose its links, so the store was not changed",
                    entity: successor.sourceTable)
            }
            steps.append(
                Step(
                    sql: "DROP TABLE \(quoted(table))", purpose: "remove the table \(table), whose entity or relationship is no longer in the schema")
            )
        }

        // A table the store did not create is never changed, even under an entity's name.
        for name in layout.tables.map(\.name) + layout.joinTables.map(\.name) where existingTables.contains(name) && !followsSchema(name) {
            throw SwiftDataError(
                .incompatibleSchema,
                "the store file holds a table named \(name) that the store did not create (the app's own, or another component's), and the schema now names an entity or relationship \(name); the store was not changed",
                entity: name)
        }

        for table in layout.tables {
            guard existingTables.contains(table.name) || sourceOf[table.name] != nil else {
                steps += table.createStatements.map { Step(sql: $0, purpose: "add the entity \(table.name)") }
                continue
            }
            // Read now under the name the table has now; the steps run after any rename.
            let source = sourceOf[table.name] ?? table.name
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(quoted(source)))").map { row in
                ExistingColumn(name: row["name"], type: (row["type"] as String? ?? "").uppercased(), isNullable: (row["notnull"] as Int? ?? 0) == 0)
            }
            let (tableSteps, rewritten, columnRenames, deferredHere) = try migrateColumns(
                of: table, existing: columns, source: source, renamed: renamed, deferringRequired: deferringRequired, in: db
            )
            if !columnRenames.isEmpty { renames.properties[table.name] = columnRenames }
            if !deferredHere.isEmpty { deferred[table.name] = deferredHere }
            steps += tableSteps
            rewrites = rewrites || rewritten
            steps += try indexSteps(for: table, source: source, in: db, rebuilt: rewritten)
        }

        for join in layout.joinTables {
            guard existingTables.contains(join.name) else {
                steps += join.createStatements.map { Step(sql: $0, purpose: "add the relationship table \(join.name)") }
                steps += try seedSteps(for: join, existingTables: existingTables, sourceOf: sourceOf, in: db)
                continue
            }
            // A side whose class gained (or lost) subclasses holds keys of several tables (or of
            // one again): its `REFERENCES` clause goes (or comes back), so the table is rebuilt
            // with its links.
            let checked = Set(try String.fetchAll(db, sql: "SELECT \"from\" FROM pragma_foreign_key_list(?)", arguments: [join.name]))
            var wantedChecked: Set<String> = []
            if !join.sourceSpansHierarchy { wantedChecked.insert(JoinTableDescription.sourceColumn) }
            if !join.targetSpansHierarchy { wantedChecked.insert(JoinTableDescription.targetColumn) }
            guard checked != wantedChecked else { continue }
            let rebuilt = "osd_rebuild_\(join.name)"
            let create = join.createStatements(named: rebuilt)
            let columns = [JoinTableDescription.sourceColumn, JoinTableDescription.targetColumn].map(quoted).joined(separator: ", ")
            let purpose = "rebuild the relationship table \(join.name), whose sides now hold keys of a class hierarchy (or of one table again)"
            steps.append(Step(sql: create[0], purpose: purpose))
            steps.append(Step(sql: "INSERT INTO \(quoted(rebuilt)) (\(columns)) SELECT \(columns) FROM \(quoted(join.name))", purpose: purpose))
            steps.append(Step(sql: "DROP TABLE \(quoted(join.name))", purpose: purpose))
            steps.append(Step(sql: "ALTER TABLE \(quoted(rebuilt)) RENAME TO \(quoted(join.name))", purpose: purpose))
            steps += create.dropFirst().map { Step(sql: $0, purpose: purpose) }
            rewrites = true
        }
        return LightweightMigration(steps: steps, rewritesTables: rewrites, renames: renames, deferredColumns: deferred, layout: layout)
    }

    /// The steps that give `table` its columns: renames and additions in place, a rebuild when a
    /// column goes away, becomes optional or non-optional (when no row holds nil), changes the
    /// table it references, or takes the name of another column.
    ///
    /// `source` is the table's name when planning (its old name, for a renamed entity), and
    /// `renamed` maps renamed tables' old names to their new ones. With `deferringRequired`,
    /// non-optional columns that rows have no value for stay nullable and are returned as
    /// `deferred`.
    private static func migrateColumns(
        of table: TableDescription, existing: [ExistingColumn], source planningName: String, renamed: [String: String],
        deferringRequired: Bool, in db: Database
    ) throws -> ([Step], Bool, renames: [String: String], deferred: Set<String>) {
        let entity = table.name
        let existingByName = Dictionary(existing.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let references = Dictionary(
            try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(\(quoted(planningName)))").map { row -> (String, String) in
                let target = row["table"] as String? ?? ""
                return (row["from"] as String? ?? "", renamed[target] ?? target)
            },
            uniquingKeysWith: { first, _ in first }
        )
        func holdsValues(_ column: String) throws -> Bool {
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(planningName)) WHERE \(quoted(column)) IS NOT NULL)") ?? true
        }
        func holdsNil(_ column: String) throws -> Bool {
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(planningName)) WHERE \(quoted(column)) IS NULL)") ?? true
        }

        // Which existing column each target column is read from: a declared original name
        // first (a rename), then the same name, never one existing column for two targets.
        var claimed: [String: String] = [:]  // existing column -> target column
        var sources: [String: String] = [:]  // target column -> existing column
        for column in table.columns {
            guard let original = column.originalName, original != column.name, existingByName[original] != nil else { continue }
            if let other = claimed[original] {
                throw refusal(
                    entity, column.name, "it and \(other) both declare originalName \"\(original)\"; one stored column cannot become two properties")
            }
            claimed[original] = column.name
            sources[column.name] = original
        }
        for column in table.columns where sources[column.name] == nil {
            if existingByName[column.name] != nil, claimed[column.name] == nil {
                claimed[column.name] = column.name
                sources[column.name] = column.name
            }
        }

        var renames: [(from: String, to: String)] = []
        var additions: [ColumnDescription] = []
        var needsRebuild = false
        var deferred: Set<String> = []
        for column in table.columns {
            guard let sourceName = sources[column.name], let source = existingByName[sourceName] else {
                if !column.isNullable && column.defaultValue == nil {
                    guard deferringRequired else {
                        throw refusal(
                            entity, column.name,
                            "the property was added as non-optional without a default value, so existing rows would have no value for it; make it optional, give it a default, or fill it in a custom stage's didMigrate"
                        )
                    }
                    deferred.insert(column.name)
                    additions.append(column.nullable)
                    continue
                }
                if column.references != nil && column.defaultValue.map({ !$0.isNull }) == true {
                    needsRebuild = true
                }
                additions.append(column)
                continue
            }
            if sourceName != column.name {
                renames.append((sourceName, column.name))
                // Renaming onto a name another existing column still has (a swap): rebuild.
                if existingByName[column.name] != nil { needsRebuild = true }
            }
            if source.type != column.type {
                throw refusal(
                    entity, column.name,
                    "its stored type changed from \(source.type) to \(column.type), which a lightweight migration cannot convert; add a property of the new type and copy the values in a custom stage's didMigrate"
                )
            }
            if source.isNullable && !column.isNullable {
                if try holdsNil(sourceName) {
                    guard deferringRequired else {
                        throw refusal(
                            entity, column.name,
                            "it became non-optional, and some rows hold nil; give them a value first (in an earlier version), or in a custom stage's willMigrate or didMigrate"
                        )
                    }
                    // Stays nullable until didMigrate has filled it.
                    deferred.insert(column.name)
                } else {
                    needsRebuild = true
                }
            }
            if !source.isNullable && column.isNullable { needsRebuild = true }
            if references[sourceName] != column.references {
                // A relationship added, removed or pointed at another entity over stored values
                // would reinterpret them as other rows' keys.
                if try holdsValues(sourceName) {
                    throw refusal(
                        entity, column.name,
                        "it now \(column.references.map { "references \($0)" } ?? "is not a relationship") where the store has \(references[sourceName].map { "a reference to \($0)" } ?? "plain values"), and rows hold values"
                    )
                }
                needsRebuild = true
            }
        }
        let kept = Set(sources.values)
        if existing.contains(where: { !kept.contains($0.name) }) { needsRebuild = true }
        let columnRenames = Dictionary(renames.map { ($0.from, $0.to) }, uniquingKeysWith: { first, _ in first })

        guard needsRebuild else {
            var steps = renames.map {
                Step(
                    sql: "ALTER TABLE \(quoted(entity)) RENAME COLUMN \(quoted($0.from)) TO \(quoted($0.to))",
                    purpose: "rename \(entity).\($0.from) to \($0.to)")
            }
            for column in additions {
                // A non-optional column reaches here only with a default (checked above).
                let value = column.defaultValue.flatMap { $0.isNull ? nil : literal($0) }
                steps.append(
                    Step(
                        sql: "ALTER TABLE \(quoted(entity)) ADD COLUMN \(column.definition(defaultLiteral: value))",
                        purpose: "add \(entity).\(column.name)"))
            }
            return (steps, false, columnRenames, deferred)
        }

        // Rebuild: a new table with the target definition, filled from the old one.
        let temporary = "_osd_migrating_\(entity)"
        let definition = TableDescription(
            name: temporary, columns: table.columns.map { deferred.contains($0.name) ? $0.nullable : $0 }, uniqueConstraints: [], indexes: []
        )
        guard let create = definition.createStatements.first else { return ([], false, [:], []) }
        let primaryKey = quoted(TableDescription.primaryKey)
        let targets = [primaryKey] + table.columns.map { quoted($0.name) }
        let values =
            [primaryKey]
            + table.columns.map { column -> String in
                if let source = sources[column.name] { return quoted(source) }
                return column.defaultValue.map(literal) ?? "NULL"
            }
        let steps = [
            Step(sql: create, purpose: "rebuild \(entity) with its new columns"),
            Step(
                sql:
                    "INSERT INTO \(quoted(temporary)) (\(targets.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM \(quoted(entity))",
                purpose: "copy the rows of \(entity)", copy: (entity, temporary)),
            Step(sql: "DROP TABLE \(quoted(entity))", purpose: "replace \(entity)"),
            Step(sql: "ALTER TABLE \(quoted(temporary)) RENAME TO \(quoted(entity))", purpose: "replace \(entity)"),
        ]
        return (steps, true, columnRenames, deferred)
    }

    /// Drops the indexes the layout no longer has and creates the ones it lacks (all of them
    /// after a rebuild). A new unique index over duplicate rows fails, and the migration with it.
    private static func indexSteps(for table: TableDescription, source: String, in db: Database, rebuilt: Bool) throws -> [Step] {
        let expected = table.createStatements.dropFirst().map { statement in
            (name: indexName(in: statement), sql: statement.replacingOccurrences(of: "CREATE INDEX IF NOT EXISTS", with: "CREATE INDEX"))
        }
        let existing =
            rebuilt
            ? []
            : try Row.fetchAll(
                db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name LIKE 'osd_%'", arguments: [source]
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
            steps.append(
                Step(sql: index.sql, purpose: "add the index or uniqueness constraint \(index.name) of \(table.name) (existing rows may violate it)"))
        }
        return steps
    }

    /// The quoted index name of a `CREATE [UNIQUE] INDEX [IF NOT EXISTS] "name" ON …` statement.
    private static func indexName(in statement: String) -> String {
        guard let start = statement.firstIndex(of: "\""), let end = statement[statement.index(after: start)...].range(of: "\" ON ") else {
            return statement
        }
        return String(statement[statement.index(after: start)..<end.lowerBound]).replacingOccurrences(of: "\"\"", with: "\"")
    }

    /// A stored value as an SQL literal, for DDL (where arguments cannot be bound).
    /// Fills the new join table of the first of several collections that share one to-one
    /// inverse from that inverse's foreign-key column (in the inverse's table and its
    /// subclasses'), where the store already has the column: the store was written while the
    /// collections were read through the column (before they shared their inverse, or while they
    /// shared their members), and every model the column relates is then in that collection, so
    /// nothing the app could reach is lost.
    private static func seedSteps(
        for join: JoinTableDescription, existingTables: Set<String>, sourceOf: [String: String], in db: Database
    ) throws -> [Step] {
        guard let seed = join.seed else { return [] }
        let key = quoted(TableDescription.primaryKey)
        let column = quoted(seed.column)
        // A key of a subclass's row cannot be checked against the source table: only keys of its
        // own rows are taken unless the side spans the hierarchy.
        let owners = join.sourceSpansHierarchy ? "" : " AND \(column) IN (SELECT \(key) FROM \(quoted(join.sourceTable)))"
        var steps: [Step] = []
        for table in [seed.table] + seed.subclassTables {
            let existing = sourceOf[table] ?? table
            guard existingTables.contains(existing),
                try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [existing]).contains(seed.column)
            else { continue }
            steps.append(
                Step(
                    sql: """
                        INSERT OR IGNORE INTO \(quoted(join.name)) (\(quoted(JoinTableDescription.sourceColumn)), \(quoted(JoinTableDescription.targetColumn))) \
                        SELECT \(column), \(key) FROM \(quoted(table)) WHERE \(column) IS NOT NULL\(owners)
                        """,
                    purpose: "fill the relationship table \(join.name) from \(table).\(seed.column), which held its members"))
        }
        return steps
    }

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
    private func copyInBatches(
        _ sql: String, from source: String, into destination: String, in db: Database, progress: (@Sendable (MigrationProgress) -> Void)?
    ) throws {
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
        SwiftDataError(
            .incompatibleSchema, "the tables cannot be migrated to \(entity).\(property) by inference: \(why). The store was not changed.",
            entity: entity, property: property)
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
                throw SwiftDataError(
                    .incompatibleSchema,
                    "after the migration, \(violations.count) row(s) of \(first["table"] as String? ?? "?") point at rows that do not exist. The store was not changed."
                )
            }
            for (key, value) in metadata {
                try db.execute(sql: "INSERT OR REPLACE INTO \(quoted(metadataTable)) (key, value) VALUES (?, ?)", arguments: [key, value])
            }
            if !renames.isEmpty { try renames.append(in: db) }
            if let layout { try StoreTableRegistry.recordLayout(layout, in: db) }
            return .commit
        }
    }
}
