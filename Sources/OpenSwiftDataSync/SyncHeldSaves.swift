import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataSyncProtocol

/// Saves the server cannot take for a limit they did not choose (a body larger than the
/// server's limit, with nothing left to split), kept on the device instead of rolled back
/// (`osd_sync_held`).
///
/// A held save leaves the numbered queue (the mutations behind it keep flowing), together with
/// every later save that touches one of its records, so that the server never sees an update
/// of a record whose insert it has not had. Saves made later to held records are held as they
/// are captured. Held saves count as pending: they keep masking what pulls bring for their
/// records, and ``SyncStatus/heldSaveCount`` shows them. They are sent again, at the end of
/// the queue, on the engine's first push after it is created (a new launch of the app, which
/// may meet a server whose limit was raised) and when the app calls
/// ``SyncEngine/retryHeldSaves()``.
enum SyncHeldSaves {
    static let table = "osd_sync_held"

    static let storeTable = StoreComponentTable(
        name: table,
        createStatements: [
            """
            CREATE TABLE IF NOT EXISTS \(table) (seq INTEGER PRIMARY KEY AUTOINCREMENT, log_seq INTEGER NOT NULL, \
            body BLOB NOT NULL, records TEXT NOT NULL, reason TEXT NOT NULL) STRICT
            """
        ])

    struct Held {
        var sequence: Int64
        var mutation: Mutation
        var logSequence: Int64
        var reason: String
    }

    /// Every held save, in the order they were saved (their log entries' order; the parts of
    /// one split save in their order). With a memo, bodies it holds are not decoded again
    /// (held saves are large by nature), and it keeps these rows.
    static func all(in db: Database, memo: DecodeMemo<Int64, Mutation>? = nil) throws -> [Held] {
        guard try db.tableExists(table) else { return [] }
        let decoder = JSONDecoder()
        var decoded: [(key: Int64, bytes: Data, value: Mutation)] = []
        let held = try Row.fetchAll(db, sql: "SELECT seq, log_seq, body, reason FROM \(table) ORDER BY log_seq, seq").map { row in
            let sequence: Int64 = row[0]
            let body: Data = row[2]
            let decode = { (bytes: Data) in try decoder.decode(Mutation.self, from: bytes) }
            let mutation = try memo.map { try $0.value(sequence, bytes: body, decode: decode) } ?? decode(body)
            if memo != nil { decoded.append((sequence, body, mutation)) }
            return Held(sequence: sequence, mutation: mutation, logSequence: row[1], reason: row[3])
        }
        memo?.keepOnly(decoded)
        return held
    }

    static func count(in db: Database) throws -> Int {
        guard try db.tableExists(table) else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0
    }

    /// The records held saves touch (read from their own column: no body is decoded).
    static func records(in db: Database) throws -> Set<SyncRebase.RecordRef> {
        guard try count(in: db) > 0 else { return [] }
        var records: Set<SyncRebase.RecordRef> = []
        for line in try String.fetchAll(db, sql: "SELECT records FROM \(table)") {
            for item in line.split(separator: "\n") {
                let parts = item.split(separator: Self.separator, maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2 { records.insert(SyncRebase.RecordRef(entity: String(parts[0]), recordID: String(parts[1]))) }
            }
        }
        return records
    }

    /// Between an entity's name and a record id in the `records` column (a control character
    /// neither holds in practice; a record id holding one is kept whole after the first).
    private static let separator: Character = "\u{1F}"

    static func append(_ mutation: Mutation, logSequence: Int64, reason: String, in db: Database) throws {
        let body = try JSONEncoder.syncProtocol().encode(mutation)
        let records = Set(mutation.changes.map { $0.entity + String(separator) + $0.recordID }).sorted().joined(separator: "\n")
        try db.execute(
            sql: "INSERT INTO \(table) (log_seq, body, records, reason) VALUES (?, ?, ?, ?)", arguments: [logSequence, body, records, reason])
    }

    /// Moves the unanswered mutation `id` out of the numbered queue into the held saves, with
    /// every later unanswered mutation that touches one of its records (transitively); the
    /// mutations left behind are renumbered from `id` on. Returns the held mutations and the
    /// next free id.
    static func hold(_ id: MutationID, reason: String, in db: Database) throws -> (held: [Mutation], next: MutationID) {
        let moving = try SyncEngineStore.sentRows(above: id - 1, in: db)
        guard let first = moving.first, first.mutation.id == id else { return ([], id) }
        var records = Set(first.mutation.changes.map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) })
        var held: [SyncEngineStore.Sent] = [first]
        for item in moving.dropFirst() {
            let touched = Set(item.mutation.changes.map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) })
            guard !touched.isDisjoint(with: records) else { continue }
            records.formUnion(touched)
            held.append(item)
        }
        for (index, item) in held.enumerated() {
            try append(item.mutation, logSequence: item.logSequence, reason: index == 0 ? reason : "follows a held save of the same records", in: db)
            try db.execute(sql: "DELETE FROM \(SyncEngineStore.sentTable) WHERE id = ?", arguments: [item.mutation.id])
        }
        return (held.map(\.mutation), try SyncEngineStore.renumber(above: id - 1, from: id, in: db))
    }

    /// Puts every held save back at the end of the numbered queue, under ids from `next` on,
    /// in the order they were saved. Returns the next free id.
    static func release(next: MutationID, in db: Database) throws -> MutationID {
        var next = next
        for item in try all(in: db) {
            var mutation = item.mutation
            mutation.id = next
            try SyncEngineStore.insertSent(mutation, logSequence: item.logSequence, in: db)
            next += 1
        }
        try db.execute(sql: "DELETE FROM \(table)")
        return next
    }
}

/// A save the server could not take for one of its limits, kept on the device, unsynced.
public struct SyncHeldSave: Sendable, Hashable {
    /// Which limit.
    public var limit: SyncLimit
    /// The server's explanation (it names the limit).
    public var message: String
    /// The records of the held saves: the one refused and later saves of the same records.
    public var records: [SyncRecordReference]
}

/// A limit of the server's that a save can exceed without breaking a rule of the app's.
public enum SyncLimit: Sendable, Hashable {
    /// The request body is larger than the server accepts (`osd-server --max-body-bytes`),
    /// even with the save alone in it: typically a large `Data` value.
    case bodySize
    /// The save holds more changes than the server accepts in one request.
    case batchSize
}

extension SyncEngine {
    /// Sends the held saves again (at the end of the queue) on the next sync, and starts one:
    /// call it when the server's limits may have changed. Saves still over a limit are held
    /// again, with another ``SyncEvent/held(_:)``.
    public func retryHeldSaves() async throws {
        retriesHeldSaves = true
        try await syncNow()
    }

    /// Before a push: releases the held saves when a retry is due.
    func releaseHeldSavesIfDue() throws {
        guard retriesHeldSaves else { return }
        retriesHeldSaves = false
        let current = nextMutationID
        let next = try storeWrite { db -> MutationID in
            guard try SyncHeldSaves.count(in: db) > 0 else { return current }
            let next = try SyncHeldSaves.release(next: current, in: db)
            try SyncEngineStore.set("nextMutationID", String(next), in: db)
            return next
        }
        nextMutationID = next
    }

    /// Holds the unanswered mutation `mutation`, which the server refuses for `limit` and which
    /// cannot be split further: nothing is rolled back; the app is told through
    /// ``SyncEvent/held(_:)`` and ``SyncStatus/heldSaveCount``.
    func hold(_ mutation: Mutation, limit: SyncLimit, message: String) async throws {
        let outcome = try storeWrite { db -> (held: [Mutation], next: MutationID) in
            let outcome = try SyncHeldSaves.hold(mutation.id, reason: message, in: db)
            try SyncEngineStore.set("nextMutationID", String(outcome.next), in: db)
            return outcome
        }
        nextMutationID = outcome.next
        pushLimit = max(1, configuration.maxMutationsPerPush)
        var seen: Set<SyncRecordReference> = []
        let records = outcome.held.flatMap(\.changes).map { SyncRecordReference(entity: $0.entity, recordID: $0.recordID) }.filter {
            seen.insert($0).inserted
        }
        emit(.held(SyncHeldSave(limit: limit, message: message, records: records)))
        await updateStatus()
    }
}
