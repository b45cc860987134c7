import Foundation
import GRDB

/// One SQLite database holding the tables of a schema, through GRDB.
///
/// File stores use a `DatabasePool` in WAL mode (readers never block the writer); in-memory
/// stores use a private `DatabaseQueue`. The store knows tables, columns and rows; it knows
/// nothing of model objects.
final class SQLiteStore: Sendable {
    /// Where the rows live.
    let writer: any DatabaseWriter
    /// The store's unique identifier, recorded at creation.
    let identifier: String
    /// The layout the store was opened with.
    let layout: StoreLayout
    /// Whether writes are refused.
    let isReadOnly: Bool
    /// Non-optional columns the opening migration left nullable for a custom stage's
    /// `didMigrate` to fill, by table (see ``requireDeferredColumns(stage:)``); empty otherwise.
    let deferredColumns: [String: Set<String>]

    static let metadataTable = "osd_metadata"
    static let formatVersion = "1"

    /// For the tables of a container's attached parts: the quoted, qualified name of the
    /// sequence table that keeps their keys (their own file's). Empty for a single store.
    let partSequences: [String: String]

    init(
        writer: any DatabaseWriter, identifier: String, layout: StoreLayout, isReadOnly: Bool, deferredColumns: [String: Set<String>] = [:],
        partSequences: [String: String] = [:]
    ) {
        self.partSequences = partSequences
        self.writer = writer
        self.identifier = identifier
        self.layout = layout
        self.isReadOnly = isReadOnly
        self.deferredColumns = deferredColumns
    }

    /// Opens (or creates) the store at `url`, or a private in-memory store when `url` is nil.
    ///
    /// An existing file is first inspected through a read-only connection; if it is not an
    /// SQLite database, is corrupt, was not created by OpenSwiftData, or was created with another
    /// layout, a ``SwiftDataError`` is thrown and the file is left byte for byte as it was.
    static func open(
        at url: URL?, layout: StoreLayout, schemaVersion: Schema.Version, readOnly: Bool, migration options: MigrationOptions = MigrationOptions()
    ) throws -> SQLiteStore {
        guard let url else {
            let queue = try wrap("opening an in-memory store") { try DatabaseQueue(configuration: configuration(readOnly: false)) }
            let identifier = UUID().uuidString
            try wrap("creating the in-memory store's tables") {
                try queue.write { db in try create(layout, identifier: identifier, version: schemaVersion, in: db) }
            }
            return SQLiteStore(writer: queue, identifier: identifier, layout: layout, isReadOnly: false)
        }

        let path = url.path
        let fileManager = FileManager.default
        let existing = (try? fileManager.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
        var existingIdentifier: String?
        var migration: LightweightMigration?
        var storedVersion: String?
        if let size = existing, size > 0 {
            try StoreFile.recoverInterruptedStage(at: path, readOnly: readOnly)
            (existingIdentifier, migration, storedVersion) = try inspect(
                path: path, expecting: layout, version: schemaVersion, readOnly: readOnly, deferringRequired: options.defersRequiredColumns
            )
        } else if readOnly {
            throw SwiftDataError(
                .loadIssueModelContainer, "no store exists at \(path), and the configuration does not allow saving, so none can be created")
        } else {
            try wrap("creating the directory for \(path)") {
                try fileManager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            }
        }

        let pool = try wrap("opening \(path)") { try DatabasePool(path: path, configuration: configuration(readOnly: readOnly)) }
        if let existingIdentifier {
            var deferred: [String: Set<String>] = [:]
            if migration != nil {
                deferred = try migrate(pool, at: path, to: layout, version: schemaVersion, options: options)
            } else if storedVersion != schemaVersion.description, !readOnly {
                // Same tables, newer version (a stage that changed only data): record it.
                try wrap("recording the schema version of \(path)") {
                    try pool.write { db in
                        try db.execute(
                            sql: "INSERT OR REPLACE INTO \(quoted(metadataTable)) (key, value) VALUES ('schemaVersion', ?)",
                            arguments: [schemaVersion.description])
                    }
                }
            }
            // A store made before the history log existed gets it, with its keys so far taken.
            if !readOnly, try wrap("reading \(path)", { try pool.read { db in try !HistoryLog.exists(in: db) } }) {
                try wrap("creating the history log of \(path)") {
                    try pool.write { db in
                        for statement in HistoryLog.createStatements { try db.execute(sql: statement) }
                        for table in layout.tables { try HistoryLog.seedPrimaryKeySequence(of: table.name, in: db) }
                    }
                }
            }
            // A store written before the table record gets it: the tables of its layout.
            if !readOnly, try wrap("reading \(path)", { try pool.read { db in try !StoreTableRegistry.exists(in: db) } }) {
                try wrap("recording the tables of \(path)") {
                    try pool.write { db in try StoreTableRegistry.recordLayout(layout, in: db) }
                }
            }
            return SQLiteStore(writer: pool, identifier: existingIdentifier, layout: layout, isReadOnly: readOnly, deferredColumns: deferred)
        }
        let identifier = UUID().uuidString
        try wrap("creating the tables of \(path)") {
            try pool.write { db in try create(layout, identifier: identifier, version: schemaVersion, in: db) }
        }
        return SQLiteStore(writer: pool, identifier: identifier, layout: layout, isReadOnly: readOnly)
    }

    static func configuration(readOnly: Bool) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = readOnly
        configuration.foreignKeysEnabled = true
        configuration.label = "OpenSwiftData"
        configuration.prepareDatabase { db in SQLFunctions.register(in: db) }
        return configuration
    }

    /// Reads an existing file through a read-only connection and checks that it is a store of
    /// this layout. Returns the store identifier.
    private static func inspect(
        path: String, expecting layout: StoreLayout, version: Schema.Version, readOnly: Bool, deferringRequired: Bool
    ) throws -> (identifier: String, migration: LightweightMigration?, storedVersion: String?) {
        var configuration = Configuration()
        configuration.readonly = true
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw SwiftDataError(.notAStore, "\(path) cannot be opened as an SQLite database: \(describe(error))")
        }
        defer { try? queue.close() }
        let metadata: [String: String]
        do {
            metadata = try queue.read { db -> [String: String] in
                let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
                guard tables.contains(metadataTable) else {
                    if tables.isEmpty { return [:] }
                    throw SwiftDataError(
                        .notAStore, "\(path) is an SQLite database that OpenSwiftData did not create (it has no \(metadataTable) table)")
                }
                let rows = try Row.fetchAll(db, sql: "SELECT key, value FROM \(quoted(metadataTable))")
                return Dictionary(rows.map { ($0["key"] as String? ?? "", $0["value"] as String? ?? "") }, uniquingKeysWith: { $1 })
            }
        } catch let error as SwiftDataError {
            throw error
        } catch {
            throw SwiftDataError(.notAStore, "\(path) is not a readable SQLite database: \(describe(error))")
        }
        guard !metadata.isEmpty else {
            throw SwiftDataError(.notAStore, "\(path) is an empty SQLite database without OpenSwiftData's metadata")
        }
        guard let identifier = metadata["storeIdentifier"], let stored = metadata["layout"] else {
            throw SwiftDataError(.notAStore, "\(path) has an incomplete \(metadataTable) table")
        }
        if let recorded = metadata["schemaVersion"].flatMap(Schema.Version.init(parsing:)), recorded > version {
            throw SwiftDataError(
                .backwardMigration,
                "the store at \(path) was written by schema version \(recorded), newer than this app's \(version); it was not changed")
        }
        guard stored != layout.fingerprint else { return (identifier, nil, metadata["schemaVersion"]) }
        if readOnly {
            throw SwiftDataError(
                .incompatibleSchema,
                "the store at \(path) was created with a different schema, and a read-only store cannot be migrated:\n"
                    + difference(stored: stored, expected: layout.fingerprint))
        }
        // Planned on the read-only connection: a change that cannot be inferred is refused
        // before anything is opened for writing.
        let migration: LightweightMigration
        do {
            migration = try queue.read { db in
                try LightweightMigration.plan(in: db, to: layout, metadataTable: metadataTable, deferringRequired: deferringRequired)
            }
        } catch let error as SwiftDataError {
            throw SwiftDataError(
                .incompatibleSchema, error.detail + "\nSchema differences:\n" + difference(stored: stored, expected: layout.fingerprint),
                entity: error.entityName, property: error.propertyName)
        }
        return (identifier, migration, metadata["schemaVersion"])
    }

    /// Runs the lightweight migration of the store at `path` to `layout` (see
    /// ``LightweightMigration``). A migration that rewrites tables first copies the store to
    /// `<path>-backup` (SQLite's online backup), removed once the migration has committed.
    /// Returns the columns left nullable for a custom stage to fill.
    private static func migrate(
        _ pool: DatabasePool, at path: String, to layout: StoreLayout, version: Schema.Version, options: MigrationOptions
    ) throws -> [String: Set<String>] {
        try wrap("migrating \(path)") {
            try pool.writeWithoutTransaction { db in
                // Rebuilding a table must not fire ON DELETE actions; the foreign keys are
                // checked before the commit instead.
                try db.execute(sql: "PRAGMA foreign_keys = OFF")
                defer { try? db.execute(sql: "PRAGMA foreign_keys = ON") }
                let migration = try LightweightMigration.plan(
                    in: db, to: layout, metadataTable: metadataTable, deferringRequired: options.defersRequiredColumns)
                let backup = path + "-backup"
                let backsUp = migration.rewritesTables && options.backsUpBeforeRebuilding
                if backsUp {
                    StoreFile.removeDatabase(at: backup)
                    let copy = try DatabaseQueue(path: backup)
                    try copy.writeWithoutTransaction { destination in try db.backup(to: destination) }
                    try copy.close()
                }
                try migration.run(
                    in: db,
                    metadata: [
                        "layout": layout.fingerprint,
                        "layoutHash": layout.hash,
                        "schemaVersion": version.description,
                    ], metadataTable: metadataTable, progress: options.progress)
                if backsUp && !options.keepsBackup { StoreFile.removeDatabase(at: backup) }
                return migration.deferredColumns
            }
        }
    }

    /// Ends what a custom stage's opening migration left open: checks that every row has a
    /// value in each column left nullable for `didMigrate` to fill, then makes those columns
    /// `NOT NULL` (a table rebuild, in one transaction). A row without a value fails with an
    /// error that names the entity, the property and how many rows lack it; the caller puts
    /// the store back.
    func requireDeferredColumns(stage: String) throws {
        guard !deferredColumns.isEmpty else { return }
        try Self.wrap("completing the stage \(stage)") {
            try writer.writeWithoutTransaction { db in
                for (table, columns) in deferredColumns.sorted(by: { $0.key < $1.key }) {
                    for column in columns.sorted() {
                        let missing = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(quoted(table)) WHERE \(quoted(column)) IS NULL") ?? 0
                        if missing > 0 {
                            throw SwiftDataError(
                                .modelValidationFailure,
                                "after didMigrate of the stage \(stage), \(missing) row\(missing == 1 ? "" : "s") of \(table) \(missing == 1 ? "has" : "have") no value for \(table).\(column), which is not optional in the new version",
                                entity: table, property: column
                            )
                        }
                    }
                }
                try db.execute(sql: "PRAGMA foreign_keys = OFF")
                defer { try? db.execute(sql: "PRAGMA foreign_keys = ON") }
                let migration = try LightweightMigration.plan(in: db, to: layout, metadataTable: Self.metadataTable)
                try migration.run(in: db, metadata: [:], metadataTable: Self.metadataTable)
            }
        }
    }

    /// Describes, table by table, how two layouts differ.
    static func difference(stored: String, expected: String) -> String {
        let old = Set(stored.split(separator: "\n").map(String.init))
        let new = Set(expected.split(separator: "\n").map(String.init))
        let removed = old.subtracting(new).sorted().map { "  store has:  \($0)" }
        let added = new.subtracting(old).sorted().map { "  schema has: \($0)" }
        return (removed + added).joined(separator: "\n")
    }

    static func create(_ layout: StoreLayout, identifier: String, version: Schema.Version, in db: Database) throws {
        try db.execute(sql: "CREATE TABLE \(quoted(metadataTable)) (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT")
        for table in layout.tables {
            for statement in table.createStatements { try db.execute(sql: statement) }
        }
        for table in layout.joinTables {
            for statement in table.createStatements { try db.execute(sql: statement) }
        }
        for statement in HistoryLog.createStatements { try db.execute(sql: statement) }
        try StoreTableRegistry.recordLayout(layout, in: db)
        let entries = [
            "storeIdentifier": identifier,
            "formatVersion": formatVersion,
            "schemaVersion": version.description,
            "layout": layout.fingerprint,
            "layoutHash": layout.hash,
        ]
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            try db.execute(sql: "INSERT INTO \(quoted(metadataTable)) (key, value) VALUES (?, ?)", arguments: [key, value])
        }
    }

    /// The quoted name of the sequence table that keeps `table`'s keys.
    func sequence(of table: String) -> String { partSequences[table] ?? quoted(HistoryLog.sequenceTable) }

    /// Reads in a consistent snapshot.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.wrap("reading the store") { try writer.read(body) }
    }

    /// Runs `body` in one write transaction: everything it does is committed, or nothing.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        guard !isReadOnly else {
            throw SwiftDataError(.readOnlyStore, "the store's configuration does not allow saving")
        }
        return try Self.wrap("writing the store") { try writer.write(body) }
    }

    /// Runs `body`, turning GRDB and SQLite errors into a ``SwiftDataError`` that says what was
    /// being done; an error that already says what was wrong (``SwiftDataError``, or one of a
    /// capture's, see ``DescriptiveError``) passes through.
    static func wrap<T>(_ action: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SwiftDataError {
            throw error
        } catch let error as any DescriptiveError {
            throw error
        } catch {
            throw SwiftDataError(.storeFailure, "\(action): \(describe(error))")
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            return "SQLite error \(error.resultCode.rawValue): \(error.message ?? "\(error)")"
        }
        return "\(error)"
    }
}
