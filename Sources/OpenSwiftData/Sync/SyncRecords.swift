import Foundation
import GRDB

/// The identity of synced rows: per entity and primary key, the record's global id, the scope it
/// was last captured with and the last server version seen. Written only for synced entities.
///
/// `osd_sync_records` is keyed both ways: `(entity, pk)` (the table's primary key) and
/// `(entity, record_id)` (a unique index). A row's record leaves with the row.
enum SyncRecords {
    static let table = "osd_sync_records"
    static let byIDIndex = "osd_sync_records_by_id"
    /// References to records that are not (yet) local, linked when they arrive.
    static let pendingTable = "osd_sync_pending"

    static let createStatements = [
        """
        CREATE TABLE IF NOT EXISTS \(quoted(table)) ("entity" TEXT NOT NULL, "pk" INTEGER NOT NULL, \
        "record_id" TEXT NOT NULL, "scope" TEXT, "server_version" INTEGER, PRIMARY KEY ("entity", "pk")) STRICT, WITHOUT ROWID
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS \(quoted(byIDIndex)) ON \(quoted(table)) (\"entity\", \"record_id\")",
        """
        CREATE TABLE IF NOT EXISTS \(quoted(pendingTable)) ("entity" TEXT NOT NULL, "record_id" TEXT NOT NULL, \
        "property" TEXT NOT NULL, "target_entity" TEXT NOT NULL, "target_record_id" TEXT NOT NULL, \
        PRIMARY KEY ("entity", "record_id", "property", "target_record_id")) STRICT, WITHOUT ROWID
        """,
        "CREATE INDEX IF NOT EXISTS \"osd_sync_pending_by_target\" ON \(quoted(pendingTable)) (\"target_entity\", \"target_record_id\")",
    ]

    /// What the table knows of one row.
    struct Record {
        var recordID: String
        var scope: String?
        var serverVersion: Int64?
    }

    static func record(entity: String, row: Int64, in db: Database) throws -> Record? {
        let statement = try db.cachedStatement(sql: "SELECT record_id, scope, server_version FROM \(quoted(table)) WHERE entity = ? AND pk = ?")
        guard let found = try Row.fetchOne(statement, arguments: [entity, row]) else { return nil }
        return Record(recordID: found[0], scope: found[1], serverVersion: found[2])
    }

    static func row(entity: String, recordID: String, in db: Database) throws -> Int64? {
        let statement = try db.cachedStatement(sql: "SELECT pk FROM \(quoted(table)) WHERE entity = ? AND record_id = ?")
        return try Int64.fetchOne(statement, arguments: [entity, recordID])
    }

    /// The rows of many record ids of one entity, in one statement.
    static func rows(entity: String, recordIDs: [String], in db: Database) throws -> [String: Int64] {
        guard !recordIDs.isEmpty else { return [:] }
        let json = String(data: (try? JSONEncoder().encode(recordIDs)) ?? Data("[]".utf8), encoding: .utf8) ?? "[]"
        let rows = try Row.fetchAll(db, sql: "SELECT record_id, pk FROM \(quoted(table)) WHERE entity = ? AND record_id IN (SELECT value FROM json_each(?))", arguments: [entity, json])
        return Dictionary(rows.map { ($0[0] as String, $0[1] as Int64) }, uniquingKeysWith: { first, _ in first })
    }

    static func delete(entity: String, row: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM \(quoted(table)) WHERE entity = ? AND pk = ?").execute(arguments: [entity, row])
    }

    static func setScope(_ scope: String?, entity: String, row: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE \(quoted(table)) SET scope = ? WHERE entity = ? AND pk = ?").execute(arguments: [scope, entity, row])
    }

    static func setServerVersion(_ version: Int64, scope: String??, entity: String, recordID: String, in db: Database) throws {
        if case let .some(scope) = scope {
            try db.cachedStatement(sql: "UPDATE \(quoted(table)) SET server_version = ?, scope = ? WHERE entity = ? AND record_id = ?")
                .execute(arguments: [version, scope, entity, recordID])
        } else {
            try db.cachedStatement(sql: "UPDATE \(quoted(table)) SET server_version = ? WHERE entity = ? AND record_id = ?")
                .execute(arguments: [version, entity, recordID])
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
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO \(quoted(pendingTable)) (entity, record_id, property, target_entity, target_record_id) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [reference.entity, reference.recordID, reference.property, reference.targetEntity, reference.targetRecordID])
    }

    /// Forgets the pending references of one property of one record (its value was set again).
    static func removePending(entity: String, recordID: String, property: String, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM \(quoted(pendingTable)) WHERE entity = ? AND record_id = ? AND property = ?")
            .execute(arguments: [entity, recordID, property])
    }

    static func removePending(_ reference: PendingReference, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM \(quoted(pendingTable)) WHERE entity = ? AND record_id = ? AND property = ? AND target_record_id = ?")
            .execute(arguments: [reference.entity, reference.recordID, reference.property, reference.targetRecordID])
    }

    /// Forgets every pending reference from or to a record (it was deleted).
    static func removePending(involving entity: String, recordID: String, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM \(quoted(pendingTable)) WHERE (entity = ? AND record_id = ?) OR (target_entity = ? AND target_record_id = ?)")
            .execute(arguments: [entity, recordID, entity, recordID])
    }

    /// The pending references that point at one of the given records of `entity`.
    static func pending(to entity: String, recordIDs: [String], in db: Database) throws -> [PendingReference] {
        guard !recordIDs.isEmpty, try db.tableExists(pendingTable) else { return [] }
        let json = String(data: (try? JSONEncoder().encode(recordIDs)) ?? Data("[]".utf8), encoding: .utf8) ?? "[]"
        return try Row.fetchAll(db, sql: """
            SELECT entity, record_id, property, target_entity, target_record_id FROM \(quoted(pendingTable)) \
            WHERE target_entity = ? AND target_record_id IN (SELECT value FROM json_each(?)) ORDER BY entity, record_id, property
            """, arguments: [entity, json]).map { row in
            PendingReference(entity: row[0], recordID: row[1], property: row[2], targetEntity: row[3], targetRecordID: row[4])
        }
    }

    /// How many references wait for their record.
    static func pendingCount(in db: Database) throws -> Int {
        guard try db.tableExists(pendingTable) else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(quoted(pendingTable))") ?? 0
    }
}
