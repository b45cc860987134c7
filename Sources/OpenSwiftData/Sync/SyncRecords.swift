import Foundation
import GRDB
import GRDBSQLite

/// The identity of synced rows: per entity and primary key, the record's global id, the scope it
/// was last captured with and the last server version seen. Written only for synced entities.
///
/// `osd_sync_records` is keyed both ways: `(entity_code, pk)` (the table's primary key) and
/// `(entity_code, record_id)` (a unique index). A row's record leaves with the row. The entity is
/// a small integer (`osd_sync_entities` maps names to codes, given out in order from 1): SQLite
/// stores the codes 0 and 1 in the record header alone and others up to 127 in one byte, where
/// the entity's name took its length in both the table and the index (a third of the record
/// rows' bytes for a short name; the records are most of what capture adds to an insert).
///
/// A record id in the canonical text of a UUID (uppercase, 8-4-4-4-12, what capture makes) is
/// stored as its 16 bytes, most significant first, so that time-ordered ids keep their order;
/// any other id as text. The mapping is one to one (only the exact canonical text becomes a
/// blob, and a 16-byte blob reads back as that text), so look-ups by id stay exact. 16 bytes
/// instead of 36 in the table and again in the index.
///
/// Stores written before entity codes (`"entity" TEXT` in `osd_sync_records`) are rewritten in
/// place when opened (``upgradeIfNeeded(in:)``).
enum SyncRecords {
    static let table = "osd_sync_records"
    static let byIDIndex = "osd_sync_records_by_id"
    /// References to records that are not (yet) local, linked when they arrive.
    static let pendingTable = "osd_sync_pending"

    /// Entity names and their codes in `osd_sync_records`.
    static let entitiesTable = "osd_sync_entities"

    static let createStatements = [
        """
        CREATE TABLE IF NOT EXISTS \(quoted(entitiesTable)) ("code" INTEGER PRIMARY KEY, "name" TEXT NOT NULL UNIQUE) STRICT
        """,
        """
        CREATE TABLE IF NOT EXISTS \(quoted(table)) ("entity_code" INTEGER NOT NULL, "pk" INTEGER NOT NULL, \
        "record_id" ANY NOT NULL, "scope" TEXT, "server_version" INTEGER, PRIMARY KEY ("entity_code", "pk")) STRICT, WITHOUT ROWID
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS \(quoted(byIDIndex)) ON \(quoted(table)) (\"entity_code\", \"record_id\")",
        """
        CREATE TABLE IF NOT EXISTS \(quoted(pendingTable)) ("entity" TEXT NOT NULL, "record_id" TEXT NOT NULL, \
        "property" TEXT NOT NULL, "target_entity" TEXT NOT NULL, "target_record_id" TEXT NOT NULL, \
        PRIMARY KEY ("entity", "record_id", "property", "target_record_id")) STRICT, WITHOUT ROWID
        """,
        "CREATE INDEX IF NOT EXISTS \"osd_sync_pending_by_target\" ON \(quoted(pendingTable)) (\"target_entity\", \"target_record_id\")",
    ]

    /// SQL for the code of the entity named by the next parameter (NULL when it has none, which
    /// matches no record).
    private static let codeOfEntity = "(SELECT code FROM \(quoted(entitiesTable)) WHERE name = ?)"

    /// Whether the store has records in the current layout (false before capture created its
    /// tables, and for a read-only store still in the layout before entity codes).
    static func exist(in db: Database) throws -> Bool {
        try db.tableExists(entitiesTable)
    }

    // MARK: Entity codes

    /// The code of an entity in `osd_sync_records`, given out now when it has none.
    static func entityCode(_ entity: String, in db: Database) throws -> Int64 {
        if let code = try Int64.fetchOne(db.cachedStatement(sql: "SELECT code FROM \(quoted(entitiesTable)) WHERE name = ?"), arguments: [entity]) {
            return code
        }
        try db.cachedStatement(sql: "INSERT INTO \(quoted(entitiesTable)) (name) VALUES (?)").execute(arguments: [entity])
        return db.lastInsertedRowID
    }

    /// Whether `osd_sync_records` is in the layout before entity codes (one read of the schema:
    /// a store opened for writing checks it once).
    static func needsUpgrade(in db: Database) throws -> Bool {
        try db.tableExists(table) && !db.tableExists(entitiesTable)
    }

    /// Rewrites `osd_sync_records` of a store written before entity codes (its `entity` column
    /// held the name) into the current layout, in the caller's transaction: each entity gets a
    /// code, and each record id its stored form (``storedID(_:)``; the first layout kept every id
    /// as text). Does nothing for a store in the current layout or without sync records.
    static func upgradeIfNeeded(in db: Database) throws {
        guard try needsUpgrade(in: db) else { return }
        let old = "osd_sync_records_before_codes"
        try db.execute(sql: "DROP INDEX IF EXISTS \(quoted(byIDIndex))")
        try db.execute(sql: "ALTER TABLE \(quoted(table)) RENAME TO \(quoted(old))")
        for statement in createStatements { try db.execute(sql: statement) }
        var codes: [String: Int64] = [:]
        let insert = try db.makeStatement(
            sql: "INSERT INTO \(quoted(table)) (entity_code, pk, record_id, scope, server_version) VALUES (?, ?, ?, ?, ?)")
        let rows = try Row.fetchCursor(db, sql: "SELECT entity, pk, record_id, scope, server_version FROM \(quoted(old)) ORDER BY entity, pk")
        while let row = try rows.next() {
            let entity: String = row[0]
            guard let recordID = recordID(stored: row[2]) else { continue }
            let code: Int64
            if let known = codes[entity] {
                code = known
            } else {
                code = try entityCode(entity, in: db)
                codes[entity] = code
            }
            try insert.execute(arguments: [
                code.databaseValue, row[1] as DatabaseValue, storedID(recordID), row[3] as DatabaseValue, row[4] as DatabaseValue,
            ])
        }
        try db.execute(sql: "DROP TABLE \(quoted(old))")
    }

    /// What the table knows of one row.
    struct Record {
        var recordID: String
        var scope: String?
        var serverVersion: Int64?
    }

    // MARK: Stored form of record ids

    /// The 16 bytes of a record id in canonical UUID text, as two big-endian words; nil for any
    /// other text.
    static func uuidWords(_ recordID: String) -> (high: UInt64, low: UInt64)? {
        var text = recordID
        return text.withUTF8 { utf8 -> (high: UInt64, low: UInt64)? in
            guard utf8.count == 36 else { return nil }
            var words: (UInt64, UInt64) = (0, 0)
            var nibbles = 0
            for (offset, byte) in utf8.enumerated() {
                if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let value: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
                case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                if nibbles < 16 {
                    words.0 = words.0 << 4 | UInt64(value)
                } else {
                    words.1 = words.1 << 4 | UInt64(value)
                }
                nibbles += 1
            }
            return (words.0, words.1)
        }
    }

    /// How a record id is stored in `record_id` (see the type's notes).
    static func storedID(_ recordID: String) -> DatabaseValue {
        guard let words = uuidWords(recordID) else { return recordID.databaseValue }
        var bytes = (words.high.bigEndian, words.low.bigEndian)
        return withUnsafeBytes(of: &bytes) { Data($0) }.databaseValue
    }

    /// The record id a stored `record_id` holds; nil for a value capture never writes.
    static func recordID(stored value: DatabaseValue) -> String? {
        switch value.storage {
        case let .string(text):
            return text
        case let .blob(data) where data.count == 16:
            let (high, low) = data.withUnsafeBytes { raw in
                (raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, raw.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            }
            return RandomRecordID.format(high: high, low: low)
        default:
            return nil
        }
    }

    static func record(entity: String, row: Int64, in db: Database) throws -> Record? {
        let statement = try db.cachedStatement(
            sql: "SELECT record_id, scope, server_version FROM \(quoted(table)) WHERE entity_code = \(codeOfEntity) AND pk = ?")
        guard let found = try Row.fetchOne(statement, arguments: [entity, row]),
            let recordID = recordID(stored: found[0])
        else { return nil }
        return Record(recordID: recordID, scope: found[1], serverVersion: found[2])
    }

    static func row(entity: String, recordID: String, in db: Database) throws -> Int64? {
        let statement = try db.cachedStatement(sql: "SELECT pk FROM \(quoted(table)) WHERE entity_code = \(codeOfEntity) AND record_id = ?")
        return try Int64.fetchOne(statement, arguments: [entity.databaseValue, storedID(recordID)])
    }

    /// The rows of many record ids of one entity, a few hundred ids per statement.
    ///
    /// An apply looks up every record id of each page it applies (a thousand ids, most of them
    /// new): the ids are bound and the rows read through SQLite's C API, a UUID id's 16 bytes
    /// straight from the stack (an argument array, a `Data` per id and GRDB's row cursor cost
    /// more than the index probes).
    static func rows(entity: String, recordIDs: [String], in db: Database) throws -> [String: Int64] {
        var found: [String: Int64] = [:]
        let chunk = 500
        for start in stride(from: 0, to: recordIDs.count, by: chunk) {
            let ids = recordIDs[start..<min(start + chunk, recordIDs.count)]
            let marks = Array(repeating: "?", count: ids.count).joined(separator: ", ")
            let statement = try db.cachedStatement(
                sql: "SELECT record_id, pk FROM \(quoted(table)) WHERE entity_code = \(codeOfEntity) AND record_id IN (\(marks))")
            let sqlite = statement.sqliteStatement
            // A cached statement may have been stepped by its last user: bindings need a reset.
            sqlite3_reset(sqlite)
            defer { sqlite3_reset(sqlite) }
            try TableWriter.bind(entity.databaseValue, at: 1, in: statement)
            var index = 2
            for id in ids {
                try bindStoredID(id, at: index, in: statement)
                index += 1
            }
            while true {
                let code = sqlite3_step(sqlite)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else {
                    throw DatabaseError(
                        resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
                }
                guard let id = recordID(column: 0, of: sqlite) else { continue }
                if found[id] == nil { found[id] = sqlite3_column_int64(sqlite, 1) }
            }
        }
        return found
    }

    /// Binds a record id in its stored form (``storedID(_:)``) at parameter `index`.
    static func bindStoredID(_ recordID: String, at index: Int, in statement: Statement) throws {
        guard let words = uuidWords(recordID) else {
            try TableWriter.bind(recordID.databaseValue, at: index, in: statement)
            return
        }
        var bytes = (words.high.bigEndian, words.low.bigEndian)
        // Safety: the pointer is used only during the call; SQLITE_TRANSIENT makes SQLite copy
        // the 16 bytes before it returns.
        let code = withUnsafeBytes(of: &bytes) { raw in
            sqlite3_bind_blob(statement.sqliteStatement, CInt(index), raw.baseAddress, CInt(raw.count), sqliteTransientDestructor)
        }
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "binding parameter \(index) of \(statement.sql)")
        }
    }

    /// The record id a stored `record_id` column of the current row holds (see
    /// ``recordID(stored:)``).
    private static func recordID(column: CInt, of sqlite: OpaquePointer) -> String? {
        switch sqlite3_column_type(sqlite, column) {
        case SQLITE_BLOB:
            // Safety: the blob's bytes are valid until the statement steps, resets or reads the
            // column again; they are read here, before any of that, and only `count` of them.
            let count = Int(sqlite3_column_bytes(sqlite, column))
            guard count == 16, let bytes = sqlite3_column_blob(sqlite, column) else { return nil }
            let raw = UnsafeRawBufferPointer(start: bytes, count: count)
            let high = raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = raw.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return RandomRecordID.format(high: high, low: low)
        case SQLITE_TEXT:
            // Safety: as for the blob; `sqlite3_column_text` first, then the byte count.
            guard let text = sqlite3_column_text(sqlite, column) else { return nil }
            let count = Int(sqlite3_column_bytes(sqlite, column))
            return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
        default:
            return nil
        }
    }

    static func delete(entity: String, row: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM \(quoted(table)) WHERE entity_code = \(codeOfEntity) AND pk = ?").execute(arguments: [entity, row])
    }

    static func setScope(_ scope: String?, entity: String, row: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE \(quoted(table)) SET scope = ? WHERE entity_code = \(codeOfEntity) AND pk = ?").execute(arguments: [
            scope, entity, row,
        ])
    }

    static func setServerVersion(_ version: Int64, entity: String, row: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE \(quoted(table)) SET server_version = ? WHERE entity_code = \(codeOfEntity) AND pk = ?").execute(
            arguments: [version, entity, row])
    }

    static func setServerVersion(_ version: Int64, scope: String??, entity: String, recordID: String, in db: Database) throws {
        if case let .some(scope) = scope {
            try db.cachedStatement(
                sql: "UPDATE \(quoted(table)) SET server_version = ?, scope = ? WHERE entity_code = \(codeOfEntity) AND record_id = ?"
            )
            .execute(arguments: [version.databaseValue, scope.databaseValue, entity.databaseValue, storedID(recordID)])
        } else {
            try db.cachedStatement(sql: "UPDATE \(quoted(table)) SET server_version = ? WHERE entity_code = \(codeOfEntity) AND record_id = ?")
                .execute(arguments: [version.databaseValue, entity.databaseValue, storedID(recordID)])
        }
    }

    // MARK: Pending references

    /// One reference to a record that is not local.
    struct PendingReference: Hashable {
        var entity: String
        var recordID: String
        var property: String
        var targetEntity: String
        var targetRecordID: String
    }

    static func addPending(_ reference: PendingReference, in db: Database) throws {
        try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO \(quoted(pendingTable)) (entity, record_id, property, target_entity, target_record_id) VALUES (?, ?, ?, ?, ?)"
        )
        .execute(arguments: [reference.entity, reference.recordID, reference.property, reference.targetEntity, reference.targetRecordID])
    }

    /// Forgets the pending references of one property of one record (its value was set again).
    static func removePending(entity: String, recordID: String, property: String, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM \(quoted(pendingTable)) WHERE entity = ? AND record_id = ? AND property = ?")
            .execute(arguments: [entity, recordID, property])
    }

    static func removePending(_ reference: PendingReference, in db: Database) throws {
        try db.cachedStatement(
            sql: "DELETE FROM \(quoted(pendingTable)) WHERE entity = ? AND record_id = ? AND property = ? AND target_record_id = ?"
        )
        .execute(arguments: [reference.entity, reference.recordID, reference.property, reference.targetRecordID])
    }

    /// Forgets every pending reference from or to a record (it was deleted).
    static func removePending(involving entity: String, recordID: String, in db: Database) throws {
        try db.cachedStatement(
            sql: "DELETE FROM \(quoted(pendingTable)) WHERE (entity = ? AND record_id = ?) OR (target_entity = ? AND target_record_id = ?)"
        )
        .execute(arguments: [entity, recordID, entity, recordID])
    }

    /// The pending references that point at one of the given records of `entity`.
    static func pending(to entity: String, recordIDs: [String], in db: Database) throws -> [PendingReference] {
        guard !recordIDs.isEmpty, try db.tableExists(pendingTable),
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(pendingTable)))") == true
        else { return [] }
        let json = String(data: (try? JSONEncoder().encode(recordIDs)) ?? Data("[]".utf8), encoding: .utf8) ?? "[]"
        return try Row.fetchAll(
            db,
            sql: """
                SELECT entity, record_id, property, target_entity, target_record_id FROM \(quoted(pendingTable)) \
                WHERE target_entity = ? AND target_record_id IN (SELECT value FROM json_each(?)) ORDER BY entity, record_id, property
                """, arguments: [entity, json]
        ).map { row in
            PendingReference(entity: row[0], recordID: row[1], property: row[2], targetEntity: row[3], targetRecordID: row[4])
        }
    }

    /// Whether any reference waits for its record.
    static func anyPending(in db: Database) throws -> Bool {
        guard try db.tableExists(pendingTable) else { return false }
        return try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(pendingTable)))") ?? false
    }

    /// How many references wait for their record.
    static func pendingCount(in db: Database) throws -> Int {
        guard try db.tableExists(pendingTable) else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(quoted(pendingTable))") ?? 0
    }
}

/// SQLite copies the bytes of a value bound with this destructor.
private let sqliteTransientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
