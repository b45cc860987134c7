import Foundation
import GRDB
import OpenSwiftDataSyncProtocol

/// The engine's own tables in the app's store file. Every write here rides in a transaction
/// that also does something else (storing a batch with the consumer cursor, applying a page
/// with its cursor), so a crash leaves a state the engine resumes from exactly.
///
/// - `osd_sync_engine`: key/value (client id, user, pull cursor, next mutation id).
/// - `osd_sync_sent`: each mutation sent and not yet settled (its body, exactly as sent, its
///   status and the server's result).
/// - `osd_sync_shadow`: the server's latest known value of each field, link or record
///   existence that a pending mutation masks (see ``SyncRebase``).
enum SyncEngineStore {
    static let stateTable = "osd_sync_engine"
    static let sentTable = "osd_sync_sent"
    static let shadowTable = "osd_sync_shadow"
    /// The name under which the engine reads the store's sync log.
    static let consumer = "OpenSwiftDataSync.outbox"

    static func create(in db: Database) throws {
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(stateTable) (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT")
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS \(sentTable) (id INTEGER PRIMARY KEY NOT NULL, log_seq INTEGER NOT NULL, \
            body BLOB NOT NULL, status TEXT NOT NULL, result BLOB) STRICT
            """)
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS \(shadowTable) (entity TEXT NOT NULL, record_id TEXT NOT NULL, key TEXT NOT NULL, \
            value BLOB NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (entity, record_id, key)) STRICT, WITHOUT ROWID
            """)
    }

    // MARK: Key/value state

    static func value(_ key: String, in db: Database) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM \(stateTable) WHERE key = ?", arguments: [key])
    }

    static func set(_ key: String, _ value: String?, in db: Database) throws {
        if let value {
            try db.execute(sql: "INSERT OR REPLACE INTO \(stateTable) (key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM \(stateTable) WHERE key = ?", arguments: [key])
        }
    }

    // MARK: Sent mutations

    /// What the engine knows of a mutation it sent.
    enum Status: String {
        /// Sent (or about to be); no answer yet.
        case sent
        /// The server applied it.
        case applied
        /// The server rejected it.
        case rejected
    }

    struct Sent {
        var mutation: Mutation
        var logSequence: Int64
        var status: Status
        var result: MutationResult?
    }

    static func insertSent(_ mutation: Mutation, logSequence: Int64, in db: Database) throws {
        let body = try JSONEncoder.syncProtocol().encode(mutation)
        try db.execute(sql: "INSERT INTO \(sentTable) (id, log_seq, body, status) VALUES (?, ?, ?, 'sent')", arguments: [mutation.id, logSequence, body])
    }

    static func sent(in db: Database) throws -> [Sent] {
        let decoder = JSONDecoder()
        return try Row.fetchAll(db, sql: "SELECT id, log_seq, body, status, result FROM \(sentTable) ORDER BY id").map { row in
            let body: Data = row[2]
            let mutation = try decoder.decode(Mutation.self, from: body)
            let status = Status(rawValue: row[3]) ?? .sent
            let resultData: Data? = row[4]
            let result = try resultData.map { try decoder.decode(MutationResult.self, from: $0) }
            return Sent(mutation: mutation, logSequence: row[1], status: status, result: result)
        }
    }

    static func record(_ result: MutationResult, in db: Database) throws {
        let body = try JSONEncoder.syncProtocol().encode(result)
        try db.execute(sql: "UPDATE \(sentTable) SET status = ?, result = ? WHERE id = ?", arguments: [result.status == .applied ? Status.applied.rawValue : Status.rejected.rawValue, body, result.id])
    }

    static func deleteSent(through id: MutationID, in db: Database) throws {
        try db.execute(sql: "DELETE FROM \(sentTable) WHERE id <= ?", arguments: [id])
    }

    /// Rewrites the ids of the mutations above `above` to run from `first` on, in order, as
    /// unanswered (after a fork or a server restore that lost them: they were never processed
    /// under their old ids). Returns the next free id.
    static func renumber(above: MutationID, from first: MutationID, in db: Database) throws -> MutationID {
        let moving = try sent(in: db).filter { $0.mutation.id > above }
        try db.execute(sql: "DELETE FROM \(sentTable) WHERE id > ?", arguments: [above])
        var next = first
        for var item in moving {
            item.mutation.id = next
            try insertSent(item.mutation, logSequence: item.logSequence, in: db)
            next += 1
        }
        return next
    }

    // MARK: Shadows

    /// A server value kept while a pending mutation masks it.
    enum ShadowValue: Codable, Hashable {
        /// Whether the record exists on the server.
        case record(exists: Bool)
        /// A field's value.
        case field(SyncValue)
        /// Whether a link is present.
        case link(present: Bool)
    }

    struct ShadowKey: Hashable {
        var entity: String
        var recordID: String
        var key: String
    }

    static func shadows(in db: Database) throws -> [ShadowKey: (value: ShadowValue, version: Int64)] {
        let decoder = JSONDecoder()
        var result: [ShadowKey: (value: ShadowValue, version: Int64)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT entity, record_id, key, value, version FROM \(shadowTable)") {
            let data: Data = row[3]
            guard let value = try? decoder.decode(ShadowValue.self, from: data) else { continue }
            result[ShadowKey(entity: row[0], recordID: row[1], key: row[2])] = (value, row[4])
        }
        return result
    }

    static func replaceShadows(_ shadows: [ShadowKey: (value: ShadowValue, version: Int64)], in db: Database) throws {
        try db.execute(sql: "DELETE FROM \(shadowTable)")
        let encoder = JSONEncoder.syncProtocol()
        for (key, entry) in shadows {
            try db.execute(sql: "INSERT INTO \(shadowTable) (entity, record_id, key, value, version) VALUES (?, ?, ?, ?, ?)",
                           arguments: [key.entity, key.recordID, key.key, try encoder.encode(entry.value), entry.version])
        }
    }

    static func clearAll(in db: Database) throws {
        try db.execute(sql: "DELETE FROM \(stateTable)")
        try db.execute(sql: "DELETE FROM \(sentTable)")
        try db.execute(sql: "DELETE FROM \(shadowTable)")
    }
}
