import Foundation
import GRDB
import GRDBSQLite
import OpenSwiftDataSyncProtocol

/// The sync change log (`osd_sync_log`): one row per committed save that changed synced
/// entities, written in the save's transaction, never rewritten. Separate from `osd_history`, so
/// the History API (and an app's `deleteHistory`) never sees or removes it.
///
/// Also holds the state that goes with it: the last hybrid-logical-clock stamp
/// (`osd_sync_state`), the registered consumers' cursors (`osd_sync_consumers`), and, in the
/// metadata table, the entities that sync.
enum SyncLog {
    static let table = "osd_sync_log"
    static let stateTable = "osd_sync_state"
    static let consumersTable = "osd_sync_consumers"
    /// The metadata key listing the synced entities (one name per line).
    static let entitiesKey = "syncEntities"
    /// The metadata key listing the merged fields (`Entity<tab>property<tab>kind`, one a line).
    static let mergesKey = "syncMerges"
    static let stampKey = "hlc"

    static let createStatements =
        [
            """
            CREATE TABLE IF NOT EXISTS \(quoted(table)) ("seq" INTEGER PRIMARY KEY AUTOINCREMENT, \
            "stamp" INTEGER NOT NULL, "author" TEXT, "timestamp" REAL NOT NULL, "changes" BLOB NOT NULL) STRICT
            """,
            "CREATE TABLE IF NOT EXISTS \(quoted(stateTable)) (\"key\" TEXT PRIMARY KEY NOT NULL, \"value\" INTEGER NOT NULL) STRICT",
            "CREATE TABLE IF NOT EXISTS \(quoted(consumersTable)) (\"name\" TEXT PRIMARY KEY NOT NULL, \"cursor\" INTEGER NOT NULL) STRICT",
        ] + SyncRecords.createStatements + SyncTexts.createStatements

    /// Every table of sync capture, which migrations keep.
    static let tables: Set<String> = [
        table, stateTable, consumersTable, SyncRecords.table, SyncRecords.entitiesTable, SyncRecords.pendingTable, SyncTexts.table,
        SyncTexts.operationsTable,
    ]

    // MARK: Enablement

    /// The synced entities the store records, or nil when capture was never enabled.
    static func recordedEntities(in db: Database) throws -> [String]? {
        guard
            let value = try String.fetchOne(db, sql: "SELECT value FROM \(quoted(SQLiteStore.metadataTable)) WHERE key = ?", arguments: [entitiesKey])
        else { return nil }
        return value.split(separator: "\n").map(String.init)
    }

    /// The merged fields the store records (none when capture never declared any).
    static func recordedMerges(in db: Database) throws -> [String: [String: MergeKind]] {
        guard
            let value = try String.fetchOne(db, sql: "SELECT value FROM \(quoted(SQLiteStore.metadataTable)) WHERE key = ?", arguments: [mergesKey])
        else { return [:] }
        var merges: [String: [String: MergeKind]] = [:]
        for line in value.split(separator: "\n") {
            let parts = line.split(separator: "\t").map(String.init)
            guard parts.count == 3, let kind = MergeKind(rawValue: parts[2]) else { continue }
            merges[parts[0], default: [:]][parts[1]] = kind
        }
        return merges
    }

    /// Records the merged fields, so that a later open merges them from its first save.
    static func recordMerges(_ merges: [String: [String: MergeKind]], in db: Database) throws {
        let lines = merges.flatMap { entity, fields in fields.map { "\(entity)\t\($0.key)\t\($0.value.rawValue)" } }.sorted()
        if lines.isEmpty {
            try db.execute(sql: "DELETE FROM \(quoted(SQLiteStore.metadataTable)) WHERE key = ?", arguments: [mergesKey])
        } else {
            try db.execute(
                sql: "INSERT OR REPLACE INTO \(quoted(SQLiteStore.metadataTable)) (key, value) VALUES (?, ?)",
                arguments: [mergesKey, lines.joined(separator: "\n")])
        }
    }

    /// Creates the tables and records the synced entities (giving each its code in
    /// `osd_sync_records`, in the configuration's order).
    static func enable(entities: [String], in db: Database) throws {
        for statement in createStatements { try db.execute(sql: statement) }
        try record(in: db)
        for entity in entities { _ = try SyncRecords.entityCode(entity, in: db) }
        try db.execute(
            sql: "INSERT OR REPLACE INTO \(quoted(SQLiteStore.metadataTable)) (key, value) VALUES (?, ?)",
            arguments: [entitiesKey, entities.joined(separator: "\n")]
        )
    }

    /// Brings the capture tables of a store opened for writing up to date: records written
    /// before entity codes are rewritten (``SyncRecords/upgradeIfNeeded(in:)``), and the tables
    /// are recorded as the store's own, which no migration drops (``StoreTableRegistry``).
    static func upgrade(in db: Database) throws {
        try SyncRecords.upgradeIfNeeded(in: db)
        try record(in: db)
    }

    /// Whether ``upgrade(in:)`` has anything to do (one read: a store opened for writing checks
    /// it once).
    static func needsUpgrade(in db: Database) throws -> Bool {
        try SyncRecords.needsUpgrade(in: db) || !unrecordedTables(in: db).isEmpty
    }

    /// Records the capture tables that exist under ``StoreTableRegistry/Owner/store``.
    private static func record(in db: Database) throws {
        try db.execute(sql: StoreTableRegistry.createStatement)
        for name in try unrecordedTables(in: db) {
            try StoreTableRegistry.record(name, owner: StoreTableRegistry.Owner.store, in: db)
        }
    }

    /// The capture tables that exist and the table record does not name.
    private static func unrecordedTables(in db: Database) throws -> [String] {
        guard try StoreTableRegistry.exists(in: db) else { return try tables.sorted().filter { try db.tableExists($0) } }
        let recorded = try StoreTableRegistry.tables(in: db, layoutFingerprint: nil)
        return try tables.sorted().filter { try recorded[$0] == nil && db.tableExists($0) }
    }

    // MARK: Clock

    static func lastStamp(in db: Database) throws -> UInt64 {
        guard try db.tableExists(stateTable) else { return 0 }
        let value = try Int64.fetchOne(db, sql: "SELECT value FROM \(quoted(stateTable)) WHERE key = ?", arguments: [stampKey]) ?? 0
        return UInt64(bitPattern: value)
    }

    static func setLastStamp(_ stamp: UInt64, in db: Database) throws {
        try db.cachedStatement(
            sql: "INSERT INTO \(quoted(stateTable)) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)"
        )
        .execute(arguments: [stampKey, Int64(bitPattern: stamp)])
    }

    /// Takes the next stamp (one per save) and persists it in the same transaction.
    static func takeStamp(now: Date, in db: Database) throws -> UInt64 {
        var clock = HybridLogicalClock(last: HLCTimestamp(rawValue: try lastStamp(in: db)))
        let stamp = clock.now(wallMilliseconds: HLCTimestamp.milliseconds(of: now)).rawValue
        try setLastStamp(stamp, in: db)
        return stamp
    }

    // MARK: Entries

    /// Appends one entry; returns its sequence.
    ///
    /// The blob (megabytes for a bulk insert) is bound where it lies, not copied into a `Data`
    /// and again by the binding: the statement is stepped once, and its bindings are cleared
    /// before the call returns and `blob` may go.
    static func append(_ blob: UnsafeRawBufferPointer, stamp: UInt64, author: String?, timestamp: Date, in db: Database) throws -> Int64 {
        let statement = try db.cachedStatement(sql: "INSERT INTO \(quoted(table)) (stamp, author, timestamp, changes) VALUES (?, ?, ?, ?)")
        // Mark the (empty) arguments as bound: `execute()` then binds nothing itself.
        statement.setUncheckedArguments(StatementArguments())
        let sqlite = statement.sqliteStatement
        defer { sqlite3_clear_bindings(sqlite) }
        try TableWriter.bind(Int64(bitPattern: stamp).databaseValue, at: 1, in: statement)
        try TableWriter.bind(author?.databaseValue ?? .null, at: 2, in: statement)
        try TableWriter.bind(timestamp.timeIntervalSince1970.databaseValue, at: 3, in: statement)
        // Safety: SQLITE_STATIC (nil destructor) lets SQLite read the bytes without copying them
        // until the bindings are cleared (the `defer` above, before `blob` can be freed); it
        // reads them only while `execute()` steps the statement, within this call.
        let code =
            if let base = blob.baseAddress, !blob.isEmpty {
                sqlite3_bind_blob64(sqlite, 4, base, sqlite3_uint64(blob.count), nil)
            } else {
                sqlite3_bind_zeroblob(sqlite, 4, 0)
            }
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "binding the sync log entry")
        }
        try statement.execute()
        return db.lastInsertedRowID
    }

    static func entries(after sequence: Int64, limit: Int?, in db: Database) throws -> [SyncLogEntry] {
        guard try db.tableExists(table) else { return [] }
        var sql = "SELECT seq, stamp, author, timestamp, changes FROM \(quoted(table)) WHERE seq > ? ORDER BY seq"
        if let limit { sql += " LIMIT \(max(0, limit))" }
        return try Row.fetchAll(db, sql: sql, arguments: [sequence]).map { row in
            let sequence: Int64 = row[0]
            let blob: Data = row[4]
            guard let changes = SyncLogCoding.decode(blob) else { throw SyncCaptureError.corruptLogEntry(sequence: sequence) }
            return SyncLogEntry(
                sequence: sequence, stamp: UInt64(bitPattern: row[1]), author: row[2], timestamp: Date(timeIntervalSince1970: row[3]),
                changes: changes)
        }
    }

    static func count(after sequence: Int64, in db: Database) throws -> Int {
        guard try db.tableExists(table) else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(quoted(table)) WHERE seq > ?", arguments: [sequence]) ?? 0
    }

    static func lastSequence(in db: Database) throws -> Int64 {
        guard try db.tableExists(table) else { return 0 }
        return try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [table]) ?? 0
    }

    // MARK: Consumers

    static func register(consumer name: String, in db: Database) throws -> Int64 {
        try db.execute(sql: "INSERT OR IGNORE INTO \(quoted(consumersTable)) (name, cursor) VALUES (?, 0)", arguments: [name])
        return try cursor(of: name, in: db) ?? 0
    }

    static func cursor(of name: String, in db: Database) throws -> Int64? {
        guard try db.tableExists(consumersTable) else { return nil }
        return try Int64.fetchOne(db, sql: "SELECT cursor FROM \(quoted(consumersTable)) WHERE name = ?", arguments: [name])
    }

    /// Moves a consumer's cursor forward (never back).
    static func advance(consumer name: String, to sequence: Int64, in db: Database) throws -> Bool {
        try db.execute(sql: "UPDATE \(quoted(consumersTable)) SET cursor = MAX(cursor, ?) WHERE name = ?", arguments: [sequence, name])
        return db.changesCount > 0
    }

    static func unregister(consumer name: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM \(quoted(consumersTable)) WHERE name = ?", arguments: [name])
    }

    /// Deletes the entries up to `sequence` that every registered consumer has read; returns how
    /// many were deleted.
    static func prune(through sequence: Int64, in db: Database) throws -> Int {
        guard try db.tableExists(table) else { return 0 }
        let slowest = try Int64.fetchOne(db, sql: "SELECT MIN(cursor) FROM \(quoted(consumersTable))")
        let limit = min(sequence, slowest ?? sequence)
        try db.execute(sql: "DELETE FROM \(quoted(table)) WHERE seq <= ?", arguments: [limit])
        return db.changesCount
    }
}
