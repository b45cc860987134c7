import Foundation
import GRDB
import OpenSwiftDataSyncProtocol

/// The engine's own tables in the app's store file. Every write here rides in a transaction
/// that also does something else (storing a batch with the consumer cursor, applying a page
/// with its cursor), so a crash leaves a state the engine resumes from exactly.
///
/// - `osd_sync_engine`: key/value (client id, user, pull cursor, next mutation id).
/// - `osd_sync_sent`: each mutation sent and not yet settled (its body, exactly as sent, its
///   status and the server's result), and the last settled ones (status `settled`, up to
///   ``SyncConfiguration/acknowledgedMutationRetention``), resent if the server is restored from
///   a backup that predates them.
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
        /// Settled (a pulled page covered it): kept only to be resent after a server restore.
        case settled
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

    /// The mutations sent and not settled yet, in id order.
    static func sent(in db: Database) throws -> [Sent] {
        try rows(db, where: "status != 'settled'")
    }

    /// How many mutations are sent and not settled yet.
    /// Whether the server answered a mutation above `id` (a server whose last id for this
    /// client is `id` lost it: restored from a copy that kept its epoch and its log position).
    static func answered(above id: MutationID, in db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(sentTable) WHERE id > ? AND status != 'sent')", arguments: [id]) ?? false
    }

    static func unsettledCount(in db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(sentTable) WHERE status != 'settled'") ?? 0
    }

    private static func rows(_ db: Database, where condition: String, arguments: StatementArguments = []) throws -> [Sent] {
        let decoder = JSONDecoder()
        return try Row.fetchAll(db, sql: "SELECT id, log_seq, body, status, result FROM \(sentTable) WHERE \(condition) ORDER BY id", arguments: arguments).map { row in
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

    /// Marks the mutations through `id` settled, keeping the last `retention` settled ones (by
    /// id) for a server restore, and forgetting older ones.
    static func settle(through id: MutationID, retention: Int, in db: Database) throws {
        try db.execute(sql: "UPDATE \(sentTable) SET status = 'settled' WHERE id <= ? AND status != 'settled'", arguments: [id])
        try db.execute(sql: "DELETE FROM \(sentTable) WHERE status = 'settled' AND id <= ?", arguments: [id - Int64(max(0, retention))])
    }

    /// After the server lost mutations above `last` (restored from a backup): every mutation
    /// above it is to be sent again, under ids from `last + 1` on. Applied ones still kept are
    /// resent; rejected ones are dropped (rolled back already); the settled ones already
    /// forgotten are returned (their ids as they were), lost. Returns the next free id too.
    static func resend(after last: MutationID, next: MutationID, in db: Database) throws -> (lost: [MutationID], next: MutationID) {
        let kept = try rows(db, where: "id > ?", arguments: [last])
        let keptIDs = Set(kept.map(\.mutation.id))
        var lost: [MutationID] = []
        if last + 1 < next {
            for id in (last + 1)..<next where !keptIDs.contains(id) { lost.append(id) }
        }
        for item in kept where item.status == .settled && item.result?.status == .rejected {
            try db.execute(sql: "DELETE FROM \(sentTable) WHERE id = ?", arguments: [item.mutation.id])
        }
        try db.execute(sql: "UPDATE \(sentTable) SET status = 'sent', result = NULL WHERE id > ?", arguments: [last])
        let following = try renumber(above: last, from: last + 1, in: db)
        // Mutations resent were settled before: the model may show later pulled values
        // since, so what they wrote is no guide to what it shows (see `SyncRebase.localValues`).
        if following > last + 1 {
            let previous = try value("resentThrough", in: db).flatMap { MutationID($0) } ?? 0
            try set("resentThrough", String(max(previous, following - 1)), in: db)
        }
        return (lost, following)
    }

    /// Splits the unanswered mutation `id` in two (its changes in order, both halves with its
    /// stamp), moving the ones after it up by one. Returns the next free id, or nil when it
    /// holds fewer than two changes.
    static func split(_ id: MutationID, in db: Database) throws -> MutationID? {
        let moving = try rows(db, where: "id >= ?", arguments: [id])
        guard let first = moving.first, first.mutation.id == id, first.mutation.changes.count > 1 else { return nil }
        try db.execute(sql: "DELETE FROM \(sentTable) WHERE id >= ?", arguments: [id])
        let changes = first.mutation.changes
        let half = changes.count / 2
        try insertSent(Mutation(id: id, stamp: first.mutation.stamp, changes: Array(changes[..<half])), logSequence: first.logSequence, in: db)
        try insertSent(Mutation(id: id + 1, stamp: first.mutation.stamp, changes: Array(changes[half...])), logSequence: first.logSequence, in: db)
        var next = id + 2
        for var item in moving.dropFirst() {
            item.mutation.id = next
            try insertSent(item.mutation, logSequence: item.logSequence, in: db)
            next += 1
        }
        return next
    }

    /// Rewrites the ids of the mutations above `above` to run from `first` on, in order, as
    /// unanswered (after a fork or a server restore that lost them: they were never processed
    /// under their old ids). Returns the next free id.
    static func renumber(above: MutationID, from first: MutationID, in db: Database) throws -> MutationID {
        let moving = try rows(db, where: "id > ?", arguments: [above])
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
        /// A relationship's whole set of linked record ids (from a pulled insert).
        case linkSet([String])
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
