import Foundation
import GRDB
import OpenSwiftData
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

    /// The owner the engine's tables are recorded under in the store's table record.
    static let owner = "OpenSwiftDataSync"

    /// The engine's tables, created and recorded through the core (``ModelContainer/createComponentTables(_:owner:)``),
    /// so that no migration of the app's schema drops or changes them.
    static let tables = [
        StoreComponentTable(
            name: stateTable,
            createStatements: [
                "CREATE TABLE IF NOT EXISTS \(stateTable) (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT"
            ]),
        StoreComponentTable(
            name: sentTable,
            createStatements: [
                """
                CREATE TABLE IF NOT EXISTS \(sentTable) (id INTEGER PRIMARY KEY NOT NULL, log_seq INTEGER NOT NULL, \
                body BLOB NOT NULL, status TEXT NOT NULL, result BLOB) STRICT
                """
            ]),
        StoreComponentTable(
            name: shadowTable,
            createStatements: [
                """
                CREATE TABLE IF NOT EXISTS \(shadowTable) (entity TEXT NOT NULL, record_id TEXT NOT NULL, key TEXT NOT NULL, \
                value BLOB NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (entity, record_id, key)) STRICT, WITHOUT ROWID
                """
            ]),
        SyncHeldSaves.storeTable,
    ]

    /// Creates the tables in a bare database (tests of this type's SQL).
    static func create(in db: Database) throws {
        for table in tables {
            for statement in table.createStatements { try db.execute(sql: statement) }
        }
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

    /// The names of what pulls skipped because this version of the app does not sync it
    /// (entities, and `Entity.field` names), kept so that an update that starts syncing one of
    /// them downloads again, and an update that adds only what the server never sent does not.
    static func skipped(in db: Database) throws -> Set<String>? {
        guard let stored = try value(skippedKey, in: db) else { return nil }
        return Set(stored.split(separator: "\n").map(String.init))
    }

    /// Adds to ``skipped(in:)``; nothing while the engine does not track it yet (a state from
    /// before the tracking: what it skipped earlier is unknown, so a partial list would be
    /// taken for a complete one).
    static func addSkipped(_ names: Set<String>, in db: Database) throws {
        guard let known = try skipped(in: db) else { return }
        guard !names.isSubset(of: known) else { return }
        try set(skippedKey, known.union(names).sorted().joined(separator: "\n"), in: db)
    }

    /// The state key of ``skipped(in:)``: present (perhaps empty) once the engine tracks it.
    static let skippedKey = "skippedByPulls"

    /// The scopes the user could read at the last pull that named them, one a line, sorted:
    /// a pull that names others reports ``SyncEvent/grantsChanged(_:)``.
    static let readableScopesKey = "readableScopes"

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
        try db.execute(
            sql: "INSERT INTO \(sentTable) (id, log_seq, body, status) VALUES (?, ?, ?, 'sent')", arguments: [mutation.id, logSequence, body])
    }

    /// The mutations sent and not settled yet, in id order; with memos, bodies and results
    /// they hold are not decoded again, and they keep these rows.
    static func sent(in db: Database, memos: SentMemos? = nil) throws -> [Sent] {
        guard let memos else { return try rows(db, where: "status != 'settled'") }
        let decoder = JSONDecoder()
        var bodies: [(key: MutationID, bytes: Data, value: Mutation)] = []
        var results: [(key: MutationID, bytes: Data, value: MutationResult)] = []
        let unsettled = try Row.fetchAll(db, sql: "SELECT id, log_seq, body, status, result FROM \(sentTable) WHERE status != 'settled' ORDER BY id")
            .map { row in
                let id: MutationID = row[0]
                let body: Data = row[2]
                let mutation = try memos.bodies.value(id, bytes: body) { try decoder.decode(Mutation.self, from: $0) }
                bodies.append((id, body, mutation))
                let resultData: Data? = row[4]
                let result = try resultData.map { data in
                    let result = try memos.results.value(id, bytes: data) { try decoder.decode(MutationResult.self, from: $0) }
                    results.append((id, data, result))
                    return result
                }
                return Sent(mutation: mutation, logSequence: row[1], status: Status(rawValue: row[3]) ?? .sent, result: result)
            }
        memos.bodies.keepOnly(bodies)
        memos.results.keepOnly(results)
        return unsettled
    }

    /// The engine's memos of decoded unsettled mutations and their results (see ``DecodeMemo``).
    struct SentMemos: Sendable {
        let bodies = DecodeMemo<MutationID, Mutation>()
        let results = DecodeMemo<MutationID, MutationResult>()
    }

    /// The first `limit` mutations sent and not answered yet, in id order (read alone: the
    /// answered ones wait for a pull to settle them, and decoding them on every push round
    /// made pushing a long queue quadratic).
    static func unanswered(limit: Int, in db: Database) throws -> [Mutation] {
        try rows(db, where: "status = 'sent'", limit: max(1, limit)).map(\.mutation)
    }

    /// Whether the server answered a mutation above `id` (a server whose last id for this
    /// client is `id` lost it: restored from a copy that kept its epoch and its log position).
    static func answered(above id: MutationID, in db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(sentTable) WHERE id > ? AND status != 'sent')", arguments: [id]) ?? false
    }

    /// The mutations above `id`, whatever their status, in id order.
    static func sentRows(above id: MutationID, in db: Database) throws -> [Sent] {
        try rows(db, where: "id > ?", arguments: [id])
    }

    /// How many mutations are sent and not settled yet.
    static func unsettledCount(in db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(sentTable) WHERE status != 'settled'") ?? 0
    }

    private static func rows(_ db: Database, where condition: String, arguments: StatementArguments = [], limit: Int? = nil) throws -> [Sent] {
        let decoder = JSONDecoder()
        return try Row.fetchAll(
            db, sql: "SELECT id, log_seq, body, status, result FROM \(sentTable) WHERE \(condition) ORDER BY id\(limit.map { " LIMIT \($0)" } ?? "")",
            arguments: arguments
        ).map { row in
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
        try db.execute(
            sql: "UPDATE \(sentTable) SET status = ?, result = ? WHERE id = ?",
            arguments: [result.status == .applied ? Status.applied.rawValue : Status.rejected.rawValue, body, result.id])
    }

    /// Whether a mutation the engine keeps (unsettled, or settled and kept for a server
    /// restore) names the blob `digest`: its bytes must stay on the device while one does.
    static func sentMutationsName(blob digest: String, in db: Database) throws -> Bool {
        try blobsSentMutationsName(in: db).contains(digest)
    }

    /// The blobs the mutations the engine keeps name, read in one pass over their bodies: a
    /// blob value is encoded as `"<64 hexadecimal digits>:<size>"`. A string value of that shape
    /// counts too, which only keeps a file a little longer.
    static func blobsSentMutationsName(in db: Database) throws -> Set<String> {
        var digests: Set<String> = []
        let bodies = try Data.fetchCursor(db, sql: "SELECT body FROM \(sentTable) WHERE instr(body, ?) > 0", arguments: [Data("\"blob\"".utf8)])
        while let body = try bodies.next() {
            let bytes = [UInt8](body)
            // The length of the run of lowercase hexadecimal digits that ends before `index`.
            var run = 0
            for (index, byte) in bytes.enumerated() {
                if (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) {
                    run += 1
                    continue
                }
                if byte == UInt8(ascii: ":"), run == 64, index >= 65, bytes[index - 65] == UInt8(ascii: "\"") {
                    digests.insert(String(decoding: bytes[(index - 64)..<index], as: UTF8.self))
                }
                run = 0
            }
        }
        return digests
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

    /// Takes the merged fields' contributions out of the unanswered mutations through `last`
    /// (the server processed them under a client id this device gives up): counters'
    /// differences and sets' adds and removes, and the values their inserts give merged fields
    /// (`isMerged(entity, field)`): counters set to zero, sets and texts emptied (resent, an
    /// insert's elements would come back after others removed them, and its text would be
    /// appended again). Texts' edits stay: they apply once however often they arrive. True when
    /// one had any.
    static func dropContributions(through last: MutationID, isMerged: (String, String) -> Bool, in db: Database) throws -> Bool {
        var dropped = false
        for var item in try rows(db, where: "id <= ? AND status = 'sent'", arguments: [last]) {
            var changed = false
            for index in item.mutation.changes.indices {
                var change = item.mutation.changes[index]
                // A text's edits stay: they apply once however often they arrive.
                let kept = change.merge.filter { if case .text = $0.value { true } else { false } }
                if kept.count != change.merge.count {
                    change.merge = kept
                    changed = true
                }
                if change.op == .insert {
                    for (name, value) in change.fields where isMerged(change.entity, name) {
                        switch value {
                        case let .int(number) where number != 0: change.fields[name] = .int(0)
                        case let .double(number) where number != 0: change.fields[name] = .double(0)
                        case let .json(text) where text != "[]": change.fields[name] = .json("[]")
                        // A text's inserted value would be appended to the record again.
                        case let .string(text) where !text.isEmpty: change.fields[name] = .string("")
                        default: continue
                        }
                        changed = true
                    }
                }
                item.mutation.changes[index] = change
            }
            guard changed else { continue }
            try db.execute(sql: "DELETE FROM \(sentTable) WHERE id = ?", arguments: [item.mutation.id])
            try insertSent(item.mutation, logSequence: item.logSequence, in: db)
            dropped = true
        }
        return dropped
    }

    /// The state key of ``SyncEngine/countedThrough``.
    static let countedThroughKey = "countedThrough"

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

    /// Which shadow: a record, and what of it.
    struct ShadowKey: Hashable {
        var entity: String
        var recordID: String
        var part: SyncShadowPart
    }

    /// Every shadow; with a memo, values it holds are not decoded again, and it keeps these rows.
    static func shadows(in db: Database, memo: DecodeMemo<ShadowKey, ShadowValue>? = nil) throws -> [ShadowKey: (value: ShadowValue, version: Int64)]
    {
        let decoder = JSONDecoder()
        var result: [ShadowKey: (value: ShadowValue, version: Int64)] = [:]
        var decoded: [(key: ShadowKey, bytes: Data, value: ShadowValue)] = []
        for row in try Row.fetchAll(db, sql: "SELECT entity, record_id, key, value, version FROM \(shadowTable)") {
            let data: Data = row[3]
            guard let part = SyncShadowPart(storageKey: row[2]) else { continue }
            let key = ShadowKey(entity: row[0], recordID: row[1], part: part)
            let decode = { (bytes: Data) in try decoder.decode(ShadowValue.self, from: bytes) }
            guard let value = try? (memo.map { try $0.value(key, bytes: data, decode: decode) } ?? decode(data)) else { continue }
            if memo != nil { decoded.append((key, data, value)) }
            result[key] = (value, row[4])
        }
        memo?.keepOnly(decoded)
        return result
    }

    /// Writes `shadows` over `stored` (what ``shadows(in:)`` read in this transaction): only
    /// the shadows that changed are written and those gone deleted (a pull writes as many
    /// shadows as the queue masks on every page; writing them all again made it quadratic).
    static func updateShadows(
        _ shadows: [ShadowKey: (value: ShadowValue, version: Int64)], from stored: [ShadowKey: (value: ShadowValue, version: Int64)], in db: Database
    ) throws {
        // A row `shadows(in:)` could not decode is not in `stored`: write them all instead.
        guard try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(shadowTable)") == stored.count else {
            return try replaceShadows(shadows, in: db)
        }
        for key in stored.keys where shadows[key] == nil {
            try db.execute(
                sql: "DELETE FROM \(shadowTable) WHERE entity = ? AND record_id = ? AND key = ?",
                arguments: [key.entity, key.recordID, key.part.storageKey])
        }
        let encoder = JSONEncoder.syncProtocol()
        for (key, entry) in shadows {
            if let old = stored[key], old.value == entry.value, old.version == entry.version { continue }
            try db.execute(
                sql: "INSERT OR REPLACE INTO \(shadowTable) (entity, record_id, key, value, version) VALUES (?, ?, ?, ?, ?)",
                arguments: [key.entity, key.recordID, key.part.storageKey, try encoder.encode(entry.value), entry.version])
        }
    }

    static func replaceShadows(_ shadows: [ShadowKey: (value: ShadowValue, version: Int64)], in db: Database) throws {
        try db.execute(sql: "DELETE FROM \(shadowTable)")
        let encoder = JSONEncoder.syncProtocol()
        for (key, entry) in shadows {
            try db.execute(
                sql: "INSERT INTO \(shadowTable) (entity, record_id, key, value, version) VALUES (?, ?, ?, ?, ?)",
                arguments: [key.entity, key.recordID, key.part.storageKey, try encoder.encode(entry.value), entry.version])
        }
    }

    static func clearAll(in db: Database) throws {
        try db.execute(sql: "DELETE FROM \(stateTable)")
        try db.execute(sql: "DELETE FROM \(sentTable)")
        try db.execute(sql: "DELETE FROM \(shadowTable)")
        try db.execute(sql: "DELETE FROM \(SyncHeldSaves.table)")
    }
}
