import Crypto
import Foundation
import GRDB
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Synchronization

/// The embedded storage: one SQLite file through GRDB, in WAL mode (readers never block the
/// single writer, and SQLite's single writer hands out sequence numbers in commit order).
///
/// **When the file cannot be written** (the disk is full, the file system turned read-only or
/// failed, another process holds the write lock past the busy timeout), a write (push, scope
/// change) fails with `503 unavailable` and reads (pulls, scope lists) go on while the file can
/// be read. ``isReady()`` says false from a failed write until a write succeeds again.
public final class SQLiteSyncStorage: SyncStorageBackend {
    private let pool: DatabasePool
    /// The database file's path.
    public let path: String
    private let health = Mutex(WriteHealth())

    /// The outcome of the latest write, which ``isReady()`` reports.
    private struct WriteHealth {
        var failed = false
        var at: ContinuousClock.Instant?
        var probing = false
    }

    /// Opens (creating if needed) the database at `path`. `cursorKey`, when given, signs
    /// cursors instead of the key generated and stored with the database.
    public convenience init(path: String, cursorKey: Data? = nil) throws {
        try self.init(path: path, cursorKey: cursorKey, busyTimeout: 10)
    }

    /// Opens the database, waiting at most `busyTimeout` seconds for a write lock another
    /// process holds.
    package init(path: String, cursorKey: Data? = nil, busyTimeout: TimeInterval) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        configuration.busyMode = .timeout(busyTimeout)
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        pool = try DatabasePool(path: path, configuration: configuration)
        self.path = path
        try SQLiteSchema.migrator().migrate(pool)
        try pool.write { db in
            if try Row.fetchOne(db, sql: "SELECT 1 FROM osd_metadata WHERE key = 'epoch'") == nil {
                try db.execute(sql: "INSERT INTO osd_metadata (key, value) VALUES ('epoch', ?)", arguments: [UUID().uuidString])
                let key = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
                try db.execute(sql: "INSERT INTO osd_metadata (key, value) VALUES ('cursorKey', ?)", arguments: [key])
            }
            if let cursorKey {
                try db.execute(sql: "UPDATE osd_metadata SET value = ? WHERE key = 'cursorKey'", arguments: [cursorKey])
            }
        }
    }

    package func start(wallMilliseconds: UInt64) async throws -> HLCTimestamp {
        try await write { db in
            var clock = HybridLogicalClock(last: try Self.headRow(db).2)
            let started = clock.now(wallMilliseconds: wallMilliseconds)
            try db.execute(sql: "UPDATE osd_head SET clock = ? WHERE id = 1", arguments: [Int64(bitPattern: started.rawValue)])
            return started
        }
    }

    package func metadata() async throws -> StorageMetadata {
        try await pool.read { db in
            guard let epoch = try String.fetchOne(db, sql: "SELECT CAST(value AS TEXT) FROM osd_metadata WHERE key = 'epoch'"),
                let key = try Data.fetchOne(db, sql: "SELECT value FROM osd_metadata WHERE key = 'cursorKey'")
            else { throw SyncServiceError(500, .internalError, "the database has no epoch or cursor key") }
            return StorageMetadata(epoch: epoch, cursorKey: key)
        }
    }

    /// Whether the database answers a read and can write (for `/ready`). Whether it can write
    /// is the outcome of the latest write; when that failed, or is older than ten seconds, a
    /// small write is tried now, and a write that has not finished within two seconds counts
    /// as failed.
    public func isReady() async -> Bool {
        guard (try? await pool.read({ db in try Int.fetchOne(db, sql: "SELECT 1") })) == 1 else { return false }
        let now = ContinuousClock.now
        let (probe, failed) = health.withLock { health -> (Bool, Bool) in
            let fresh = health.at.map { now - $0 < .seconds(10) } ?? false
            guard !fresh || health.failed, !health.probing else { return (false, health.failed) }
            health.probing = true
            return (true, health.failed)
        }
        guard probe else { return !failed }
        let answer = FirstAnswer()
        return await withCheckedContinuation { continuation in
            answer.set(continuation)
            Task {
                let ok = (try? await self.write { db in try db.execute(sql: "UPDATE osd_head SET seq = seq WHERE id = 1") }) != nil
                self.health.withLock { $0.probing = false }
                answer.resume(ok)
            }
            Task {
                try? await Task.sleep(for: .seconds(2))
                answer.resume(false)
            }
        }
    }

    /// Resumes a continuation once, with the first answer given.
    private final class FirstAnswer: Sendable {
        private let continuation = Mutex<CheckedContinuation<Bool, Never>?>(nil)

        func set(_ continuation: CheckedContinuation<Bool, Never>) { self.continuation.withLock { $0 = continuation } }

        func resume(_ value: Bool) { continuation.withLock { $0.take() }?.resume(returning: value) }
    }

    /// A write transaction; a failure of the file (full, read-only, failing, locked past the
    /// busy timeout) becomes `503 unavailable`. Records the outcome for ``isReady()``.
    func write<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        do {
            let value = try await pool.write(updates)
            health.withLock { $0 = WriteHealth(failed: false, at: ContinuousClock.now, probing: $0.probing) }
            return value
        } catch let error as DatabaseError where Self.isUnavailable(error) {
            health.withLock { $0 = WriteHealth(failed: true, at: ContinuousClock.now, probing: $0.probing) }
            throw SyncServiceError(503, .unavailable, "the database cannot write: \(error.message ?? "\(error.resultCode)")")
        }
    }

    /// A read; a failure of the file becomes `503 unavailable`.
    func read<T: Sendable>(_ value: @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(value)
        } catch let error as DatabaseError where Self.isUnavailable(error) {
            throw SyncServiceError(503, .unavailable, "the database cannot be read: \(error.message ?? "\(error.resultCode)")")
        }
    }

    /// Whether an error says the file cannot be used now rather than that a statement is wrong.
    static func isUnavailable(_ error: DatabaseError) -> Bool {
        [.SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_NOMEM].contains(
            error.resultCode)
    }

    /// Checkpoints the WAL into the database file (so that the file alone holds every
    /// committed change), then closes every connection.
    public func close() async throws {
        try await pool.writeWithoutTransaction { db in
            _ = try db.checkpoint(.truncate)
        }
        try pool.close()
    }

    // MARK: Push

    package func push(_ load: PushLoad, decide: @escaping @Sendable (PushSnapshot) throws -> PushPlan) async throws -> PushPlan {
        try await write { db in
            let snapshot = try Self.loadPush(load, db)
            let plan = try decide(snapshot)
            // Only records that have link rows now need them deleted before they are written
            // again (a record the snapshot does not hold has none).
            let linked = Set(snapshot.records.lazy.filter { !$0.value.links.isEmpty }.map(\.key))
            // Likewise for reference index rows.
            let referencing = Set(snapshot.records.lazy.filter { !$0.value.referenceTargets.isEmpty }.map(\.key))
            try Self.write(plan, clientID: load.clientID, linked: linked, referencing: referencing, db)
            // And for blob references.
            let naming = Set(snapshot.records.lazy.filter { !$0.value.blobDigests.isEmpty }.map(\.key))
            try Self.writeBlobReferences(plan.records, naming: naming, now: plan.now, db)
            return plan
        }
    }

    private static func loadPush(_ load: PushLoad, _ db: Database) throws -> PushSnapshot {
        let (head, horizon, clock) = try headRow(db)
        var client: ClientRecord?
        if let row = try Row.fetchOne(
            db, sql: "SELECT user, last_mutation_id, last_hash, schema FROM osd_clients WHERE client_id = ?", arguments: [load.clientID])
        {
            let schemaData: Data? = try row.decode(atIndex: 3)
            client = ClientRecord(
                clientID: load.clientID, user: try row.decode(atIndex: 0), lastMutationID: try row.decode(atIndex: 1),
                lastHash: try row.decode(atIndex: 2), schema: try schemaData.map { try JSONDecoder().decode(SchemaDescriptor.self, from: $0) })
        }
        var results: [MutationID: StoredResult] = [:]
        if let low = load.mutationIDs.min(), let high = load.mutationIDs.max(), let last = client?.lastMutationID, low <= last {
            let decoder = JSONDecoder()
            for row in try Row.fetchAll(
                db, sql: "SELECT mutation_id, hash, result FROM osd_results WHERE client_id = ? AND mutation_id BETWEEN ? AND ?",
                arguments: [load.clientID, low, min(high, last)])
            {
                let id: MutationID = try row.decode(atIndex: 0)
                results[id] = StoredResult(
                    id: id, hash: try row.decode(atIndex: 1),
                    result: try decoder.decode(MutationResult.self, from: try row.decode(Data.self, atIndex: 2)))
            }
        }
        var records: [RecordKey: StoredRecord] = [:]
        let deleteRules = DeleteRuleGraph(load.deleteRules.schema ?? client?.schema)
        let keys = deleteRules.isEmpty ? load.keys : load.keys.union(deleteRules.targets(of: load.deleteRules))
        let recordStatement = try db.cachedStatement(
            sql:
                "SELECT entity, record_id, scope, version, deleted, fields, stamp, writer, has_links FROM osd_records WHERE entity = ? AND record_id = ?"
        )
        for key in keys {
            if let row = try Row.fetchOne(recordStatement, arguments: [key.entity, key.recordID]) {
                records[key] = try record(row, db)
            }
        }
        if !deleteRules.isEmpty {
            let referrers = try deleteRules.referrers(of: load.deleteRules.roots, loaded: Set(records.keys)) { queries in
                let statement = try db.cachedStatement(
                    sql: """
                        SELECT r.entity, r.record_id, r.scope, r.version, r.deleted, r.fields, r.stamp, r.writer, r.has_links
                        FROM osd_refs f JOIN osd_records r ON r.entity = f.entity AND r.record_id = f.record_id
                        WHERE f.target = ? AND f.entity = ? AND f.field = ? AND r.deleted = 0
                        """)
                var found: [StoredRecord] = []
                for query in queries {
                    for target in query.targets {
                        for row in try Row.fetchAll(statement, arguments: [target, query.entity, query.field]) { found.append(try record(row, db)) }
                    }
                }
                return found
            }
            for referrer in referrers { records[referrer.key] = referrer }
        }
        var scopes: [ScopeID: ScopeRecord] = [:]
        let scopeIDs = load.scopes.union(records.values.map(\.scope))
        for scope in scopeIDs {
            if let owner = try String.fetchOne(db, sql: "SELECT owner FROM osd_scopes WHERE scope = ?", arguments: [scope.rawValue]) {
                scopes[scope] = ScopeRecord(scope: scope, owner: owner, members: try Self.members(of: scope, db))
            } else if let owner = scope.privateOwner {
                let members = try Self.members(of: scope, db)
                if !members.isEmpty { scopes[scope] = ScopeRecord(scope: scope, owner: owner, members: members) }
            }
        }
        var history: [RecordKey: [(version: ServerVersion, client: ClientID?)]] = [:]
        for (key, after) in load.historyAfter where records[key] != nil {
            let rows = try Row.fetchAll(
                db, sql: "SELECT seq, client_id FROM osd_changes WHERE entity = ? AND record_id = ? AND seq > ?",
                arguments: [key.entity, key.recordID, after])
            history[key] = try rows.map { (try $0.decode(atIndex: 0), try $0.decode(atIndex: 1)) }
        }
        let marks = try load.markAt.map { try Self.marks(at: [$0], db) } ?? [:]
        return PushSnapshot(
            client: client, results: results, records: records, scopes: scopes, history: history, head: head, horizon: horizon, clock: clock,
            marks: marks)
    }

    static func headRow(_ db: Database) throws -> (ServerVersion, ServerVersion, HLCTimestamp) {
        guard let row = try Row.fetchOne(db, sql: "SELECT seq, horizon, clock FROM osd_head WHERE id = 1") else {
            throw SyncServiceError(500, .internalError, "the database has no head row")
        }
        let clock: Int64 = try row.decode(atIndex: 2)
        return (try row.decode(atIndex: 0), try row.decode(atIndex: 1), HLCTimestamp(rawValue: UInt64(bitPattern: clock)))
    }

    private static func record(_ row: Row, _ db: Database) throws -> StoredRecord {
        let entity: String = try row.decode(atIndex: 0)
        let recordID: String = try row.decode(atIndex: 1)
        let stamp: Int64 = try row.decode(atIndex: 6)
        let hasLinks: Bool = try row.decode(atIndex: 8)
        var links: [SyncName: [RecordID: StoredLink]] = [:]
        if hasLinks {
            let statement = try db.cachedStatement(
                sql: "SELECT name, target, present, stamp, client FROM osd_links WHERE entity = ? AND record_id = ?")
            for link in try Row.fetchAll(statement, arguments: [entity, recordID]) {
                let linkStamp: Int64 = try link.decode(atIndex: 3)
                links[try link.decode(String.self, atIndex: 0), default: [:]][try link.decode(String.self, atIndex: 1)] =
                    StoredLink(
                        present: try link.decode(atIndex: 2), stamp: HLCTimestamp(rawValue: UInt64(bitPattern: linkStamp)),
                        client: try link.decode(atIndex: 4))
            }
        }
        return StoredRecord(
            entity: entity, recordID: recordID, scope: ScopeID(rawValue: try row.decode(atIndex: 2)), version: try row.decode(atIndex: 3),
            deleted: try row.decode(atIndex: 4),
            fields: try row.withUnsafeData(atIndex: 5) { data in try StoredColumns.decodeFields(data ?? Data()) },
            stamp: HLCTimestamp(rawValue: UInt64(bitPattern: stamp)), writer: try row.decode(atIndex: 7), links: links)
    }

    private static func write(_ plan: PushPlan, clientID: ClientID, linked: Set<RecordKey>, referencing: Set<RecordKey>, _ db: Database) throws {
        let encoder = JSONEncoder.syncProtocol()
        if let client = plan.client {
            try db.execute(
                sql: """
                    INSERT INTO osd_clients (client_id, user, last_mutation_id, last_hash, schema, last_seen_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (client_id) DO UPDATE SET last_mutation_id = excluded.last_mutation_id, last_hash = excluded.last_hash, schema = excluded.schema,
                        last_seen_at = CASE WHEN excluded.last_seen_at - osd_clients.last_seen_at >= 60000 THEN excluded.last_seen_at ELSE osd_clients.last_seen_at END
                    """,
                arguments: [
                    client.clientID, client.user, client.lastMutationID, client.lastHash, try client.schema.map { try encoder.encode($0) }, plan.now,
                ])
        }
        if let below = plan.resultsAcknowledgedBelow {
            try db.execute(sql: "DELETE FROM osd_results WHERE client_id = ? AND mutation_id < ?", arguments: [clientID, below])
        }
        let resultStatement = try db.cachedStatement(
            sql: "INSERT INTO osd_results (client_id, mutation_id, hash, result, created_at) VALUES (?, ?, ?, ?, ?)")
        for result in plan.results {
            try resultStatement.execute(arguments: [clientID, result.id, result.hash, Data(try StoredColumns.encodeResult(result.result)), plan.now])
        }
        for scope in plan.newScopes {
            try db.execute(sql: "INSERT OR IGNORE INTO osd_scopes (scope, owner) VALUES (?, ?)", arguments: [scope.scope.rawValue, scope.owner])
        }
        let recordStatement = try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO osd_records (entity, record_id, scope, version, deleted, fields, stamp, writer, has_links, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let deleteLinks = try db.cachedStatement(sql: "DELETE FROM osd_links WHERE entity = ? AND record_id = ?")
        let insertLink = try db.cachedStatement(
            sql: "INSERT INTO osd_links (entity, record_id, name, target, present, stamp, client) VALUES (?, ?, ?, ?, ?, ?, ?)")
        let deleteReferences = try db.cachedStatement(sql: "DELETE FROM osd_refs WHERE entity = ? AND record_id = ?")
        let insertReference = try db.cachedStatement(sql: "INSERT OR REPLACE INTO osd_refs (entity, record_id, field, target) VALUES (?, ?, ?, ?)")
        for record in plan.records {
            let hasLinks = !record.links.isEmpty
            try recordStatement.execute(arguments: [
                record.entity, record.recordID, record.scope.rawValue, record.version, record.deleted, try Self.encodeFields(record.fields),
                Int64(bitPattern: record.stamp.rawValue), record.writer, hasLinks, plan.now,
            ])
            if linked.contains(record.key) { try deleteLinks.execute(arguments: [record.entity, record.recordID]) }
            for (name, elements) in record.links {
                for (target, link) in elements {
                    try insertLink.execute(arguments: [
                        record.entity, record.recordID, name, target, link.present, Int64(bitPattern: link.stamp.rawValue), link.client,
                    ])
                }
            }
            if referencing.contains(record.key) { try deleteReferences.execute(arguments: [record.entity, record.recordID]) }
            for (field, target) in record.referenceTargets {
                try insertReference.execute(arguments: [record.entity, record.recordID, field, target])
            }
        }
        let changeStatement = try db.cachedStatement(
            sql: """
                INSERT INTO osd_changes (seq, txn, scope, entity, record_id, op, payload, client_id, mutation_id, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for entry in plan.changes {
            let change = entry.change
            try changeStatement.execute(arguments: [
                entry.seq, entry.txn, change.scope.rawValue, change.entity, change.recordID, change.op.rawValue,
                try Self.encodePayload(change), change.clientID, change.mutationID, entry.createdAt,
            ])
        }
        // Last statement: the head. (On PostgreSQL this is where the sequence numbers are taken.)
        try db.execute(sql: "UPDATE osd_head SET seq = ?, clock = ? WHERE id = 1", arguments: [plan.head, Int64(bitPattern: plan.clock.rawValue)])
    }

    /// The blob index of the written records: the rows of those that named blobs replaced by
    /// the blobs they name now. A blob they named is named again or not: its age starts again,
    /// so that collection waits the retention window from the last time a record named it.
    private static func writeBlobReferences(_ records: [StoredRecord], naming: Set<RecordKey>, now: Int64, _ db: Database) throws {
        let touch = try db.cachedStatement(
            sql: """
                UPDATE osd_blobs SET stored_at = max(stored_at, ?)
                WHERE digest IN (SELECT digest FROM osd_blob_refs WHERE entity = ? AND record_id = ?)
                """)
        let delete = try db.cachedStatement(sql: "DELETE FROM osd_blob_refs WHERE entity = ? AND record_id = ?")
        let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO osd_blob_refs (entity, record_id, digest, client) VALUES (?, ?, ?, ?)")
        for record in records {
            if naming.contains(record.key) {
                try touch.execute(arguments: [now, record.entity, record.recordID])
                try delete.execute(arguments: [record.entity, record.recordID])
            }
            for reference in record.blobReferences {
                try insert.execute(arguments: [record.entity, record.recordID, reference.digest, reference.client])
            }
        }
    }

    // MARK: Blobs

    /// Files in a folder beside the database: `<path>.blobs`.
    package var defaultBlobStorage: (any BlobStorage)? { FileBlobStorage(root: path + ".blobs") }

    package func blobScopes(of digest: String) async throws -> [ScopeID] {
        try await pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT r.scope FROM osd_blob_refs b
                    JOIN osd_records r ON r.entity = b.entity AND r.record_id = b.record_id AND r.deleted = 0
                    JOIN osd_clients c ON c.client_id = b.client
                    JOIN osd_blob_holders h ON h.digest = b.digest AND h.user = c.user
                    WHERE b.digest = ? ORDER BY r.scope
                    """, arguments: [digest]
            ).map { ScopeID(rawValue: $0) }
        }
    }

    package func noteBlob(_ reference: BlobReference, holder user: String, at milliseconds: Int64) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO osd_blobs (digest, size, stored_at) VALUES (?, ?, ?)
                    ON CONFLICT (digest) DO UPDATE SET stored_at = max(stored_at, excluded.stored_at)
                    """, arguments: [reference.digest, reference.size, milliseconds])
            try db.execute(sql: "INSERT OR IGNORE INTO osd_blob_holders (digest, user) VALUES (?, ?)", arguments: [reference.digest, user])
        }
    }

    package func holds(blob digest: String, user: String) async throws -> Bool {
        try await pool.read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM osd_blob_holders WHERE digest = ? AND user = ?", arguments: [digest, user]) ?? false
        }
    }

    package func blobBytes(of user: String) async throws -> Int64 {
        try await pool.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT coalesce(sum(b.size), 0) FROM osd_blob_holders h JOIN osd_blobs b ON b.digest = h.digest WHERE h.user = ?",
                arguments: [user]) ?? 0
        }
    }

    /// The condition of a blob that may be collected: old enough, and named by no live record.
    private static let collectable = """
        stored_at < ? AND NOT EXISTS (
            SELECT 1 FROM osd_blob_refs f JOIN osd_records r ON r.entity = f.entity AND r.record_id = f.record_id
            WHERE f.digest = osd_blobs.digest AND r.deleted = 0)
        """

    package func unreferencedBlobs(before milliseconds: Int64, limit: Int) async throws -> [String] {
        try await pool.read { db in
            try String.fetchAll(
                db, sql: "SELECT digest FROM osd_blobs WHERE \(Self.collectable) ORDER BY stored_at LIMIT ?", arguments: [milliseconds, limit])
        }
    }

    package func forgetBlob(_ digest: String, before milliseconds: Int64) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM osd_blobs WHERE digest = ? AND \(Self.collectable)", arguments: [digest, milliseconds])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "DELETE FROM osd_blob_holders WHERE digest = ?", arguments: [digest])
            return true
        }
    }

    private static func encodeFields(_ fields: [SyncName: StoredField]) throws -> Data {
        Data(try StoredColumns.encodeFields(fields))
    }

    private static func encodePayload(_ change: PulledChange) throws -> Data {
        Data(try StoredColumns.encodePayload(of: change))
    }

    // MARK: Pull

    package func pull(
        clientID: ClientID, user: String, probe: ServerVersion?, plan: @escaping @Sendable (PullContext) throws -> PullRead
    ) async throws -> PullPage {
        try await read { db in
            let (head, horizon, clock) = try Self.headRow(db)
            var grants: [ScopeID: ScopeRole] = [ScopeID.user(user): .owner]
            for scope in try String.fetchAll(db, sql: "SELECT scope FROM osd_grants WHERE user = ?", arguments: [user]) {
                grants[ScopeID(rawValue: scope)] = .member
            }
            for scope in try String.fetchAll(db, sql: "SELECT scope FROM osd_scopes WHERE owner = ?", arguments: [user]) {
                grants[ScopeID(rawValue: scope)] = .owner
            }
            var owner: String?
            var last: MutationID = 0
            if let row = try Row.fetchOne(db, sql: "SELECT user, last_mutation_id FROM osd_clients WHERE client_id = ?", arguments: [clientID]) {
                owner = try row.decode(atIndex: 0)
                last = try row.decode(atIndex: 1)
            }
            let marks = try Self.marks(at: [probe ?? head, head], db)
            let context = PullContext(
                head: head, horizon: horizon, grants: grants, clientOwner: owner, lastMutationID: last, clock: clock, marks: marks)
            let read = try plan(context)
            var page: PullPage
            switch read {
            case .snapshot(let scopes, let after, let limit, let count):
                page = try Self.snapshotPage(context, read, scopes: scopes, after: after, limit: limit, count: count, db)
            case .log(let after, let scopes, let tailScopes, let tailFrom, let limit):
                page = try Self.logPage(context, read, after: after, scopes: scopes, tailScopes: tailScopes, tailFrom: tailFrom, limit: limit, db)
            }
            if page.context.marks[page.end] == nil {
                page.context.marks.merge(try Self.marks(at: [page.end], db)) { old, _ in old }
            }
            return page
        }
    }

    /// The log marks (`created_at`) of the changes at `seqs`.
    private static func marks(at seqs: Set<ServerVersion>, _ db: Database) throws -> [ServerVersion: Int64] {
        var marks: [ServerVersion: Int64] = [:]
        for seq in seqs {
            if let mark = try Int64.fetchOne(db, sql: "SELECT created_at FROM osd_changes WHERE seq = ?", arguments: [seq]) { marks[seq] = mark }
        }
        return marks
    }

    private static func snapshotPage(
        _ context: PullContext, _ read: PullRead, scopes: [ScopeID], after: SnapshotKey?, limit: Int, count: Bool, _ db: Database
    ) throws -> PullPage {
        var records: [StoredRecord] = []
        records.reserveCapacity(limit + 1)
        let statement = try db.cachedStatement(
            sql: """
                SELECT entity, record_id, scope, version, deleted, fields, stamp, writer, has_links FROM osd_records
                WHERE scope = ? AND deleted = 0 AND (entity, record_id) > (?, ?) ORDER BY entity, record_id LIMIT ?
                """)
        for scope in scopes where after.map({ scope >= $0.scope }) ?? true {
            let start = after?.scope == scope ? after : nil
            // A cursor: each row is read from the statement in place (no copy of its columns).
            let rows = try Row.fetchCursor(
                statement, arguments: [scope.rawValue, start?.entity ?? "", start?.recordID ?? "", limit + 1 - records.count])
            while let row = try rows.next() { records.append(try record(row, db)) }
            if records.count > limit { break }
        }
        let hasMore = records.count > limit
        if hasMore { records.removeLast(records.count - limit) }
        var total: Int?
        if count {
            var sum = 0
            for scope in scopes {
                sum += try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records WHERE scope = ? AND deleted = 0", arguments: [scope.rawValue]) ?? 0
            }
            total = sum
        }
        return PullPage(context: context, read: read, records: records, total: total, end: context.head, hasMore: hasMore)
    }

    private static func logPage(
        _ context: PullContext, _ read: PullRead, after: ServerVersion, scopes: [ScopeID], tailScopes: [ScopeID], tailFrom: ServerVersion, limit: Int,
        _ db: Database
    ) throws -> PullPage {
        if scopes.isEmpty && tailScopes.isEmpty {
            return PullPage(context: context, read: read, end: context.head, hasMore: false)
        }
        func placeholders(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ",") }
        var filter = "(scope IN (\(placeholders(scopes.count))))"
        var filterArguments = StatementArguments(scopes.map(\.rawValue))
        if !tailScopes.isEmpty {
            filter = "(\(filter) OR (scope IN (\(placeholders(tailScopes.count))) AND seq > ?))"
            filterArguments += StatementArguments(tailScopes.map(\.rawValue))
            filterArguments += [tailFrom]
        }
        let select = "SELECT seq, txn, scope, entity, record_id, op, payload, client_id, mutation_id FROM osd_changes"
        var rows = try Row.fetchAll(
            db, sql: "\(select) WHERE seq > ? AND \(filter) ORDER BY seq LIMIT ?", arguments: [after] + filterArguments + [limit])
        var end = context.head
        var hasMore = false
        if rows.count == limit, let lastRow = rows.last {
            let lastSeq: Int64 = try lastRow.decode(atIndex: 0)
            let txn: Int64 = try lastRow.decode(atIndex: 1)
            end = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM osd_changes WHERE txn = ?", arguments: [txn]) ?? lastSeq
            if end > lastSeq {
                rows += try Row.fetchAll(
                    db, sql: "\(select) WHERE seq > ? AND seq <= ? AND \(filter) ORDER BY seq", arguments: [lastSeq, end] + filterArguments)
            }
            hasMore =
                try Row.fetchOne(db, sql: "SELECT 1 FROM osd_changes WHERE seq > ? AND \(filter) LIMIT 1", arguments: [end] + filterArguments) != nil
            if !hasMore { end = context.head }
        }
        var changes: [PulledChange] = []
        changes.reserveCapacity(rows.count)
        for row in rows {
            guard let op = RecordOperation(rawValue: try row.decode(String.self, atIndex: 5)) else {
                throw SyncServiceError(500, .internalError, "the change log holds an unknown operation")
            }
            let payload = try row.withUnsafeData(atIndex: 6) { data in try StoredColumns.decodePayload(data ?? Data()) }
            changes.append(
                PulledChange(
                    version: try row.decode(atIndex: 0), op: op, entity: try row.decode(atIndex: 3), recordID: try row.decode(atIndex: 4),
                    scope: ScopeID(rawValue: try row.decode(atIndex: 2)), fields: payload.fields, links: payload.links,
                    clientID: try row.decode(atIndex: 7), mutationID: try row.decode(atIndex: 8), merge: payload.merge,
                    textStates: payload.textStates))
        }
        return PullPage(context: context, read: read, changes: changes, end: end, hasMore: hasMore)
    }

    // MARK: Scopes

    package func scopes(of user: String) async throws -> [ScopeAccess] {
        try await read { db in
            var result: [ScopeID: ScopeAccess] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT scope, role FROM osd_grants WHERE user = ?", arguments: [user]) {
                let scope = ScopeID(rawValue: try row.decode(atIndex: 0))
                result[scope] = ScopeAccess(scope: scope, role: .member, grant: ScopeGrantRole(stored: try row.decode(atIndex: 1)))
            }
            for scope in try String.fetchAll(db, sql: "SELECT scope FROM osd_scopes WHERE owner = ?", arguments: [user]) {
                result[ScopeID(rawValue: scope)] = ScopeAccess(scope: ScopeID(rawValue: scope), role: .owner)
            }
            return Array(result.values)
        }
    }

    package func scope(_ scope: ScopeID) async throws -> ScopeRecord? {
        try await read { db in try Self.scopeRecord(scope, db) }
    }

    /// The members of a scope, with their roles.
    private static func members(of scope: ScopeID, _ db: Database) throws -> [String: ScopeGrantRole] {
        var members: [String: ScopeGrantRole] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT user, role FROM osd_grants WHERE scope = ?", arguments: [scope.rawValue]) {
            members[try row.decode(atIndex: 0)] = ScopeGrantRole(stored: try row.decode(atIndex: 1))
        }
        return members
    }

    private static func scopeRecord(_ scope: ScopeID, _ db: Database) throws -> ScopeRecord? {
        let members = try members(of: scope, db)
        if let owner = try String.fetchOne(db, sql: "SELECT owner FROM osd_scopes WHERE scope = ?", arguments: [scope.rawValue]) {
            return ScopeRecord(scope: scope, owner: owner, members: members)
        }
        if let owner = scope.privateOwner, !members.isEmpty { return ScopeRecord(scope: scope, owner: owner, members: members) }
        return nil
    }

    package func updateScope(_ scope: ScopeID, decide: @escaping @Sendable (ScopeRecord?) throws -> ScopeRecord) async throws -> ScopeRecord {
        try await write { db in
            let current = try Self.scopeRecord(scope, db)
            let next = try decide(current)
            try db.execute(sql: "INSERT OR REPLACE INTO osd_scopes (scope, owner) VALUES (?, ?)", arguments: [scope.rawValue, next.owner])
            try db.execute(sql: "DELETE FROM osd_grants WHERE scope = ?", arguments: [scope.rawValue])
            for (member, role) in next.members.sorted(by: { $0.key < $1.key }) {
                try db.execute(
                    sql: "INSERT INTO osd_grants (scope, user, role) VALUES (?, ?, ?)", arguments: [scope.rawValue, member, role.rawValue])
            }
            return next
        }
    }

    // MARK: Compaction

    package func compact(before milliseconds: Int64) async throws -> CompactionResult {
        try await write { db in
            let (_, horizon, _) = try Self.headRow(db)
            // Push results are not dropped by age: a client that has not acknowledged one may
            // still send its mutation again and must get the same answer (property 3).
            guard let newHorizon = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM osd_changes WHERE created_at < ?", arguments: [milliseconds]),
                newHorizon > horizon
            else {
                return CompactionResult(horizon: horizon, changesRemoved: 0, tombstonesRemoved: 0)
            }
            // The change at the horizon stays: its mark checks cursors at the horizon (see
            // `PullPlanner.decide`); no pull reads it (a cursor below the horizon resets).
            try db.execute(sql: "DELETE FROM osd_changes WHERE seq < ?", arguments: [newHorizon])
            let changesRemoved = db.changesCount
            try db.execute(
                sql:
                    "DELETE FROM osd_links WHERE (entity, record_id) IN (SELECT entity, record_id FROM osd_records WHERE deleted = 1 AND version <= ?)",
                arguments: [newHorizon])
            try db.execute(sql: "DELETE FROM osd_records WHERE deleted = 1 AND version <= ?", arguments: [newHorizon])
            let tombstonesRemoved = db.changesCount
            try db.execute(sql: "UPDATE osd_head SET horizon = ? WHERE id = 1", arguments: [newHorizon])
            return CompactionResult(horizon: newHorizon, changesRemoved: changesRemoved, tombstonesRemoved: tombstonesRemoved)
        }
    }
}
