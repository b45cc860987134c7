import Foundation
import Logging
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import PostgresNIO
import Synchronization

/// The server's storage on PostgreSQL, through a PostgresNIO connection pool: several
/// stateless servers on one database.
///
/// **Order of the log.** Every writing transaction (push, scope change, compaction) starts by
/// locking the single head row (`SELECT … FROM osd_head FOR UPDATE`) and updates it before
/// committing, so writers run one after another, each seeing everything committed before it,
/// and sequence numbers become visible in commit order. A pull reads in one
/// `REPEATABLE READ` snapshot: every change at or below the head it sees is committed and in
/// the snapshot, so no change can later appear below a cursor it hands out. The price is that
/// writes do not run in parallel, exactly as with SQLite's single writer; request parsing,
/// auth, JSON, pulls and live connections do, on every server.
///
/// **Live events.** A push's and a scope change's events are sent with `pg_notify` inside the
/// transaction (delivered on commit, never for a rollback); every storage instance listens on
/// one pooled connection and hands the others' events to ``remoteEvents()``.
public final class PostgresSyncStorage: SharedSyncStorage, SyncStorageBackend {
    /// The settings.
    public let configuration: PostgresStorageConfiguration
    let client: PostgresClient
    let logger: Logger
    /// Tells this instance's notifications from other servers'.
    let origin = UUID().uuidString
    let channel: String
    private let shared: Shared

    struct State {
        var closed = false
        var runner: Task<Void, Never>?
        var listener: Task<Void, Never>?
        var subscribers: [UUID: AsyncStream<SyncServiceEvent>.Continuation] = [:]
        var listening = false
        var listeningWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The state shared with the background tasks, which must not keep the storage alive (its
    /// deinit cancels them).
    final class Shared: Sendable {
        let state = Mutex(State())
    }

    /// Connects, migrates the schema (creating it if needed) and starts listening for other
    /// servers' events. `cursorKey`, when given, signs cursors instead of the key generated
    /// and stored with the database.
    public init(
        configuration: PostgresStorageConfiguration, cursorKey: Data? = nil, logger: Logger = Logger(label: "osd-server.postgres")
    ) async throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        self.channel = "osd_events_\(configuration.schema)"
        let client = PostgresClient(configuration: configuration.clientConfiguration, backgroundLogger: logger)
        self.client = client
        shared = Shared()
        let runner = Task { await client.run() }
        shared.state.withLock { $0.runner = runner }
        do {
            try await PostgresSchema.migrate(
                client, schema: configuration.schema, cursorKey: cursorKey, lockTimeoutMilliseconds: configuration.statementTimeoutMilliseconds,
                logger: logger)
        } catch {
            runner.cancel()
            throw error
        }
        let listener = Task { [client, shared, channel, origin, logger] in
            await Self.listen(client: client, shared: shared, channel: channel, origin: origin, logger: logger)
        }
        shared.state.withLock { $0.listener = listener }
    }

    /// Connects to the database at a `postgres://` URL (see ``PostgresStorageConfiguration``).
    public convenience init(url: String, cursorKey: Data? = nil, logger: Logger = Logger(label: "osd-server.postgres")) async throws {
        try await self.init(configuration: PostgresStorageConfiguration(url: url), cursorKey: cursorKey, logger: logger)
    }

    deinit {
        shared.state.withLock { state in
            state.listener?.cancel()
            state.runner?.cancel()
        }
    }

    package func start(wallMilliseconds: UInt64) async throws -> HLCTimestamp {
        try await writeTransaction { [logger] connection, head in
            var clock = HybridLogicalClock(last: head.clock)
            let started = clock.now(wallMilliseconds: wallMilliseconds)
            try await connection.run(UpdateHeadStatement(seq: head.seq, clock: Int64(bitPattern: started.rawValue)), logger: logger)
            return started
        }
    }

    package func metadata() async throws -> StorageMetadata {
        var epoch: String?
        var key: Data?
        for try await (name, value) in try await client.query("SELECT key, value FROM osd_metadata", logger: logger).decode((String, String).self) {
            if name == "epoch" { epoch = value }
            if name == "cursorKey" { key = Data(base64Encoded: value) }
        }
        guard let epoch, let key else { throw SyncServiceError(500, .internalError, "the database has no epoch or cursor key") }
        return StorageMetadata(epoch: epoch, cursorKey: key)
    }

    /// Gives the database a new epoch in place (`osd-server epoch rotate --postgres URL`): after
    /// restoring it with `pg_dump`/`pg_restore`, so that clients resend what the copy lost.
    /// Every server sharing the database must be stopped first and started after (a server
    /// reads the epoch when it starts; the admin console's rotation also updates the server it
    /// runs in). Returns the old epoch and the new one.
    public func rotateEpoch() async throws -> EpochChange {
        try await rotateEpoch(expecting: nil)
    }

    /// Whether the database answers a query (for `/ready`) within the connect timeout
    /// (``PostgresStorageConfiguration/connectTimeoutMilliseconds``, a connection and the
    /// query together): false while the database cannot be reached.
    public func isReady() async -> Bool {
        guard !shared.state.withLock({ $0.closed }) else { return false }
        let client = client
        let logger = logger
        let answered = try? await Self.within(.milliseconds(configuration.connectTimeoutMilliseconds)) {
            try await client.withConnection { connection in
                try await connection.checkedQuery("SELECT 1", logger: logger).collect().count == 1
            }
        }
        return answered == true
    }

    /// Stops listening for other servers' events, ends the ``remoteEvents()`` streams and closes
    /// the connection pool.
    public func close() async throws {
        let (runner, listener, subscribers) = shared.state.withLock { state in
            state.closed = true
            let result = (state.runner, state.listener, Array(state.subscribers.values))
            state.subscribers.removeAll()
            let waiters = state.listeningWaiters
            state.listeningWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
            return result
        }
        for subscriber in subscribers { subscriber.finish() }
        listener?.cancel()
        await listener?.value
        runner?.cancel()
        await runner?.value
    }

    private func checkOpen() throws {
        if shared.state.withLock({ $0.closed }) { throw PostgresStorageError.closed }
    }

    // MARK: Transactions

    /// Runs `body` in a transaction on a pooled connection: commits when it returns, rolls
    /// back when it throws, and rethrows its error as it is (a ``SyncServiceError`` from a
    /// decision stays one).
    ///
    /// With a `leaseTimeout`, a connection that the pool has not handed out by then is
    /// `503 unavailable`: PostgresNIO's pool has no such bound (a request waits while it
    /// retries connecting, up to its circuit breaker's minute). The wait for the lease is
    /// cancelled; once the connection is handed out, the transaction runs to its end, or to
    /// `503 unavailable` if the connection closes under it (``TransactionStatements``).
    static func transaction<T: Sendable>(
        _ client: PostgresClient, begin: PostgresQuery = "BEGIN",
        leaseTimeout: Duration? = nil, logger: Logger, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let statements = TransactionStatements()
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                defer { statements.finished = true }
                return try await client.withConnection { connection in
                    statements.connection = connection
                    return try await TransactionStatements.$current.withValue(statements) {
                        try await connection.checkedQuery(begin, logger: logger)
                        let value: T
                        do {
                            value = try await body(connection)
                        } catch {
                            _ = try? await connection.checkedQuery("ROLLBACK", logger: logger)
                            throw error
                        }
                        try await connection.checkedQuery("COMMIT", logger: logger)
                        return value
                    }
                }
            }
            // The watcher, until the transaction ends (even when the request is cancelled, as
            // its statements are not): the lease within its timeout, then the connection.
            group.addTask {
                let tick = Duration.milliseconds(50)
                var waited = Duration.zero
                var closedFor = Duration.zero
                while !statements.finished {
                    await TransactionStatements.pause(tick)
                    waited += tick
                    if statements.connection == nil {
                        if let leaseTimeout, waited >= leaseTimeout {
                            // Refuses the statements of a lease that comes after all.
                            statements.fail()
                            throw SyncServiceError(503, .unavailable, "the database cannot be reached: no connection within \(leaseTimeout)")
                        }
                    } else if statements.connectionClosed {
                        // A statement that failed with the connection ends on its own; one
                        // whose write was dropped is released.
                        closedFor += tick
                        if closedFor >= .milliseconds(250) { statements.fail() }
                    }
                }
                return nil
            }
            while let next = try await group.next() {
                if let value = next {
                    group.cancelAll()
                    return value
                }
            }
            throw CancellationError()
        }
    }

    func writeTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection, HeadRow) async throws -> T) async throws -> T {
        try checkOpen()
        let logger = logger
        return try await mappingOutage {
            try await Self.transaction(client, leaseTimeout: leaseTimeout, logger: logger) { connection in
                let head = try await HeadRow.lock(connection, logger)
                return try await body(connection, head)
            }
        }
    }

    func readTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try checkOpen()
        return try await mappingOutage {
            try await Self.transaction(
                client, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", leaseTimeout: leaseTimeout, logger: logger, body
            )
        }
    }

    /// A transaction that does not lock the head row: blobs' bytes, whose long uploads must not
    /// hold up pushes. `begin` starts it (a stricter isolation level, say).
    func blobTransaction<T: Sendable>(
        begin: PostgresQuery = "BEGIN", _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try checkOpen()
        return try await mappingOutage { try await Self.transaction(client, begin: begin, leaseTimeout: leaseTimeout, logger: logger, body) }
    }

    /// How long a request waits for a pooled connection: the connect timeout.
    private var leaseTimeout: Duration { .milliseconds(configuration.connectTimeoutMilliseconds) }

    // MARK: Outages

    /// Runs `body`; an error saying the database went away (the connection closed or failed,
    /// the server shutting down or not accepting connections yet) becomes `503 unavailable`.
    private func mappingOutage<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PSQLError where Self.isOutage(error) {
            throw SyncServiceError(503, .unavailable, "the database cannot be reached: \(Self.describe(error))")
        }
    }

    /// Whether an error says the database cannot be reached rather than that a statement failed.
    static func isOutage(_ error: PSQLError) -> Bool {
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            return true
        case .server:
            // 08: connection exception; 57P01-57P03: shut down, crashed, cannot connect now.
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
        default:
            return false
        }
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] { return message }
        return "\(error.code)"
    }

    /// The result of `body`, or nil when it has not returned after `timeout`: it is then
    /// cancelled and left to end in the background, since a pool lease or a query on a
    /// connection the database dropped may not end when cancelled.
    static func within<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        let race = Race<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T?, any Error>) in
                race.waiting.withLock { $0 = continuation }
                let work = Task {
                    let result: Result<T?, any Error>
                    do { result = .success(try await body()) } catch { result = .failure(error) }
                    race.waiting.withLock { $0.take() }?.resume(with: result)
                }
                race.work.withLock { $0 = work }
                Task {
                    try? await Task.sleep(for: timeout)
                    if let waiting = race.waiting.withLock({ $0.take() }) {
                        work.cancel()
                        waiting.resume(returning: nil)
                    }
                }
            }
        } onCancel: {
            race.work.withLock { $0 }?.cancel()
            race.waiting.withLock { $0.take() }?.resume(throwing: CancellationError())
        }
    }

    /// What ``within(_:_:)``'s body and its timer race for: the caller's continuation, resumed
    /// by whichever comes first.
    private final class Race<T: Sendable>: Sendable {
        let waiting = Mutex<CheckedContinuation<T?, any Error>?>(nil)
        let work = Mutex<Task<Void, Never>?>(nil)
    }

    // MARK: Push

    package func push(_ load: PushLoad, decide: @escaping @Sendable (PushSnapshot) throws -> PushPlan) async throws -> PushPlan {
        try await writeTransaction { [self] connection, head in
            let snapshot = try await loadPush(load, head: head, connection)
            let plan = try decide(snapshot)
            try await write(plan, clientID: load.clientID, connection)
            var events: [SyncServiceEvent] = []
            if !plan.changes.isEmpty {
                events.append(.changed(scopes: plan.changedScopes.sorted(), version: plan.head, readers: plan.readers))
            }
            if !plan.newScopes.isEmpty {
                events.append(.grantsChanged(users: Set(plan.newScopes.map(\.owner))))
            }
            try await notify(events, connection)
            return plan
        }
    }

    private func loadPush(_ load: PushLoad, head: HeadRow, _ connection: PostgresConnection) async throws -> PushSnapshot {
        var client: ClientRecord?
        for (user, last, hash, schema) in try await connection.checkedRows(ClientStatement(clientID: load.clientID), logger: logger) {
            client = ClientRecord(
                clientID: load.clientID, user: user, lastMutationID: last, lastHash: hash,
                schema: try schema.map { try JSONDecoder().decode(SchemaDescriptor.self, from: Data($0.utf8)) })
        }
        var results: [MutationID: StoredResult] = [:]
        if let low = load.mutationIDs.min(), let high = load.mutationIDs.max(), let last = client?.lastMutationID, low <= last {
            let decoder = JSONDecoder()
            let rows = try await connection.checkedQuery(
                "SELECT mutation_id, hash, result FROM osd_results WHERE client_id = \(load.clientID) AND mutation_id BETWEEN \(low) AND \(min(high, last))",
                logger: logger)
            for try await (id, hash, result) in rows.decode((Int64, String, String).self) {
                results[id] = StoredResult(id: id, hash: hash, result: try decoder.decode(MutationResult.self, from: Data(result.utf8)))
            }
        }
        let deleteRules = DeleteRuleGraph(load.deleteRules.schema ?? client?.schema)
        let keys = Array(deleteRules.isEmpty ? load.keys : load.keys.union(deleteRules.targets(of: load.deleteRules)))
        var records: [RecordKey: StoredRecord] = [:]
        for record in try await loadRecords(keys, connection) { records[record.key] = record }
        if !deleteRules.isEmpty {
            let referrers = try await deleteRules.referrers(of: load.deleteRules.roots, loaded: Set(records.keys)) { queries in
                try await loadReferrers(queries, connection)
            }
            for referrer in referrers { records[referrer.key] = referrer }
        }
        var scopes: [ScopeID: ScopeRecord] = [:]
        let scopeIDs = Array(load.scopes.union(records.values.map(\.scope)))
        for record in try await scopeRecords(scopeIDs, connection) { scopes[record.scope] = record }
        var history: [RecordKey: [(version: ServerVersion, client: ClientID?)]] = [:]
        for (key, after) in load.historyAfter where records[key] != nil {
            let rows = try await connection.checkedQuery(
                "SELECT seq, client_id FROM osd_changes WHERE entity = \(key.entity) AND record_id = \(key.recordID) AND seq > \(after) ORDER BY seq",
                logger: logger)
            var entries: [(version: ServerVersion, client: ClientID?)] = []
            for try await (seq, client) in rows.decode((Int64, String?).self) { entries.append((seq, client)) }
            history[key] = entries
        }
        var marks: [ServerVersion: Int64] = [:]
        if let markAt = load.markAt { marks = try await self.marks(at: [markAt], connection) }
        return PushSnapshot(
            client: client, results: results, records: records, scopes: scopes, history: history, head: head.seq, horizon: head.horizon,
            clock: head.clock, marks: marks)
    }

    /// The records with these keys (tombstones included), with their links: two queries.
    private func loadRecords(_ keys: [RecordKey], _ connection: PostgresConnection) async throws -> [StoredRecord] {
        guard !keys.isEmpty else { return [] }
        var records: [StoredRecord] = []
        var linked: [RecordKey] = []
        for row in try await connection.checkedRows(
            RecordsStatement(entities: keys.map(\.entity), recordIDs: keys.map(\.recordID)), logger: logger)
        {
            records.append(try row.record())
            if row.hasLinks { linked.append(RecordKey(entity: row.entity, recordID: row.recordID)) }
        }
        try await attachLinks(&records, linked, connection)
        return records
    }

    /// The live referrers the queries ask for, with their links, through the reference index.
    private func loadReferrers(_ queries: [ReferrerQuery], _ connection: PostgresConnection) async throws -> [StoredRecord] {
        var statement = ReferrersStatement(entities: [], fields: [], targets: [])
        for query in queries {
            for target in query.targets {
                statement.entities.append(query.entity)
                statement.fields.append(query.field)
                statement.targets.append(target)
            }
        }
        guard !statement.targets.isEmpty else { return [] }
        var records: [StoredRecord] = []
        var linked: [RecordKey] = []
        var seen: Set<RecordKey> = []
        for row in try await connection.checkedRows(statement, logger: logger) {
            let record = try row.record()
            guard seen.insert(record.key).inserted else { continue }
            records.append(record)
            if row.hasLinks { linked.append(record.key) }
        }
        try await attachLinks(&records, linked, connection)
        return records
    }

    private func attachLinks(_ records: inout [StoredRecord], _ linked: [RecordKey], _ connection: PostgresConnection) async throws {
        guard !linked.isEmpty else { return }
        var links: [RecordKey: [SyncName: [RecordID: StoredLink]]] = [:]
        let rows = try await connection.checkedQuery(
            """
            SELECT l.entity, l.record_id, l.name, l.target, l.present, l.stamp, l.client FROM osd_links l
            JOIN unnest(\(linked.map(\.entity))::text[], \(linked.map(\.recordID))::text[]) AS k(entity, record_id)
            ON l.entity = k.entity AND l.record_id = k.record_id
            """, logger: logger)
        for try await (entity, recordID, name, target, present, stamp, client) in rows.decode(
            (String, String, String, String, Bool, Int64, String).self)
        {
            links[RecordKey(entity: entity, recordID: recordID), default: [:]][name, default: [:]][target] =
                StoredLink(present: present, stamp: HLCTimestamp(rawValue: UInt64(bitPattern: stamp)), client: client)
        }
        for index in records.indices { records[index].links = links[records[index].key] ?? [:] }
    }

    /// The claimed scopes among `scopes`, with their members (a private scope with members but
    /// no row is owned by its user).
    private func scopeRecords(_ scopes: [ScopeID], _ connection: PostgresConnection) async throws -> [ScopeRecord] {
        guard !scopes.isEmpty else { return [] }
        let names = scopes.map(\.rawValue)
        var owners: [String: String] = [:]
        for try await (scope, owner) in try await connection.checkedQuery(
            "SELECT scope, owner FROM osd_scopes WHERE scope = ANY(\(names)::text[])", logger: logger
        ).decode((String, String).self) {
            owners[scope] = owner
        }
        var members: [String: [String: ScopeGrantRole]] = [:]
        for try await (scope, user, role) in try await connection.checkedQuery(
            "SELECT scope, user_id, role FROM osd_grants WHERE scope = ANY(\(names)::text[])", logger: logger
        ).decode((String, String, String).self) {
            members[scope, default: [:]][user] = ScopeGrantRole(stored: role)
        }
        var result: [ScopeRecord] = []
        for scope in scopes {
            if let owner = owners[scope.rawValue] {
                result.append(ScopeRecord(scope: scope, owner: owner, members: members[scope.rawValue] ?? [:]))
            } else if let owner = scope.privateOwner, let granted = members[scope.rawValue], !granted.isEmpty {
                result.append(ScopeRecord(scope: scope, owner: owner, members: granted))
            }
        }
        return result
    }

    private func write(_ plan: PushPlan, clientID: ClientID, _ connection: PostgresConnection) async throws {
        let encoder = JSONEncoder.syncProtocol()
        func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
        if let client = plan.client {
            let schema = try client.schema.map { try json($0) }
            try await connection.checkedQuery(
                """
                INSERT INTO osd_clients (client_id, user_id, last_mutation_id, last_hash, schema, last_seen_at) VALUES (\(client.clientID), \(client.user), \(client.lastMutationID), \(client.lastHash), \(schema), \(plan.now))
                ON CONFLICT (client_id) DO UPDATE SET last_mutation_id = excluded.last_mutation_id, last_hash = excluded.last_hash, schema = excluded.schema,
                    last_seen_at = CASE WHEN excluded.last_seen_at - osd_clients.last_seen_at >= 60000 THEN excluded.last_seen_at ELSE osd_clients.last_seen_at END
                """, logger: logger)
        }
        if let below = plan.resultsAcknowledgedBelow {
            try await connection.checkedQuery("DELETE FROM osd_results WHERE client_id = \(clientID) AND mutation_id < \(below)", logger: logger)
        }
        if !plan.results.isEmpty {
            try await connection.checkedQuery(
                """
                INSERT INTO osd_results (client_id, mutation_id, hash, result, created_at)
                SELECT \(clientID), m, h, r, \(plan.now) FROM unnest(\(plan.results.map(\.id))::int8[], \(plan.results.map(\.hash))::text[], \(try plan.results.map { String(decoding: try StoredColumns.encodeResult($0.result), as: UTF8.self) })::text[]) AS t(m, h, r)
                """, logger: logger)
        }
        if !plan.newScopes.isEmpty {
            try await connection.checkedQuery(
                """
                INSERT INTO osd_scopes (scope, owner) SELECT * FROM unnest(\(plan.newScopes.map(\.scope.rawValue))::text[], \(plan.newScopes.map(\.owner))::text[])
                ON CONFLICT (scope) DO NOTHING
                """, logger: logger)
        }
        // One row per record: the plan's last state of each.
        var seen: Set<RecordKey> = []
        let records = plan.records.reversed().filter { seen.insert($0.key).inserted }.reversed()
        if !records.isEmpty {
            try await connection.run(
                UpsertRecordsStatement(
                    entities: records.map(\.entity), recordIDs: records.map(\.recordID), scopes: records.map(\.scope.rawValue),
                    versions: records.map(\.version), deleted: records.map(\.deleted),
                    fields: try records.map { String(decoding: try StoredColumns.encodeFields($0.fields), as: UTF8.self) },
                    stamps: records.map { Int64(bitPattern: $0.stamp.rawValue) }, writers: records.map(\.writer),
                    hasLinks: records.map { !$0.links.isEmpty }, now: plan.now), logger: logger)
            let previouslyLinked = records.map(\.key)
            try await connection.checkedQuery(
                """
                DELETE FROM osd_links l USING unnest(\(previouslyLinked.map(\.entity))::text[], \(previouslyLinked.map(\.recordID))::text[]) AS k(entity, record_id)
                WHERE l.entity = k.entity AND l.record_id = k.record_id
                """, logger: logger)
            var linkColumns:
                (entities: [String], recordIDs: [String], names: [String], targets: [String], present: [Bool], stamps: [Int64], clients: [String]) = (
                    [], [], [], [], [], [], []
                )
            for record in records {
                for (name, elements) in record.links {
                    for (target, link) in elements {
                        linkColumns.entities.append(record.entity)
                        linkColumns.recordIDs.append(record.recordID)
                        linkColumns.names.append(name)
                        linkColumns.targets.append(target)
                        linkColumns.present.append(link.present)
                        linkColumns.stamps.append(Int64(bitPattern: link.stamp.rawValue))
                        linkColumns.clients.append(link.client)
                    }
                }
            }
            // The reference index: the written records' rows replaced by their live references.
            try await connection.checkedQuery(
                """
                DELETE FROM osd_refs f USING unnest(\(previouslyLinked.map(\.entity))::text[], \(previouslyLinked.map(\.recordID))::text[]) AS k(entity, record_id)
                WHERE f.entity = k.entity AND f.record_id = k.record_id
                """, logger: logger)
            var referenceColumns: (entities: [String], recordIDs: [String], fields: [String], targets: [String]) = ([], [], [], [])
            for record in records {
                for (field, target) in record.referenceTargets {
                    referenceColumns.entities.append(record.entity)
                    referenceColumns.recordIDs.append(record.recordID)
                    referenceColumns.fields.append(field)
                    referenceColumns.targets.append(target)
                }
            }
            if !referenceColumns.entities.isEmpty {
                try await connection.checkedQuery(
                    """
                    INSERT INTO osd_refs (entity, record_id, field, target)
                    SELECT * FROM unnest(\(referenceColumns.entities)::text[], \(referenceColumns.recordIDs)::text[], \(referenceColumns.fields)::text[], \(referenceColumns.targets)::text[])
                    """, logger: logger)
            }
            // The blob index likewise. A blob the written records named is named again or not:
            // its age starts again, so that collection waits the retention window from the last
            // time a record named it.
            try await connection.checkedQuery(
                """
                UPDATE osd_blobs SET stored_at = greatest(stored_at, \(plan.now)) WHERE digest IN (
                    SELECT f.digest FROM osd_blob_refs f
                    JOIN unnest(\(previouslyLinked.map(\.entity))::text[], \(previouslyLinked.map(\.recordID))::text[]) AS k(entity, record_id)
                    ON f.entity = k.entity AND f.record_id = k.record_id)
                """, logger: logger)
            try await connection.checkedQuery(
                """
                DELETE FROM osd_blob_refs f USING unnest(\(previouslyLinked.map(\.entity))::text[], \(previouslyLinked.map(\.recordID))::text[]) AS k(entity, record_id)
                WHERE f.entity = k.entity AND f.record_id = k.record_id
                """, logger: logger)
            var blobColumns: (entities: [String], recordIDs: [String], digests: [String], clients: [String]) = ([], [], [], [])
            for record in records {
                for reference in record.blobReferences {
                    blobColumns.entities.append(record.entity)
                    blobColumns.recordIDs.append(record.recordID)
                    blobColumns.digests.append(reference.digest)
                    blobColumns.clients.append(reference.client)
                }
            }
            if !blobColumns.entities.isEmpty {
                try await connection.checkedQuery(
                    """
                    INSERT INTO osd_blob_refs (entity, record_id, digest, client)
                    SELECT * FROM unnest(\(blobColumns.entities)::text[], \(blobColumns.recordIDs)::text[], \(blobColumns.digests)::text[], \(blobColumns.clients)::text[])
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            }
            if !linkColumns.entities.isEmpty {
                try await connection.checkedQuery(
                    """
                    INSERT INTO osd_links (entity, record_id, name, target, present, stamp, client)
                    SELECT * FROM unnest(\(linkColumns.entities)::text[], \(linkColumns.recordIDs)::text[], \(linkColumns.names)::text[], \(linkColumns.targets)::text[],
                        \(linkColumns.present)::bool[], \(linkColumns.stamps)::int8[], \(linkColumns.clients)::text[])
                    """, logger: logger)
            }
        }
        if !plan.changes.isEmpty {
            let changes = plan.changes
            try await connection.run(
                InsertChangesStatement(
                    seqs: changes.map(\.seq), txns: changes.map(\.txn), scopes: changes.map(\.change.scope.rawValue),
                    entities: changes.map(\.change.entity), recordIDs: changes.map(\.change.recordID), ops: changes.map(\.change.op.rawValue),
                    payloads: try changes.map {
                        String(decoding: try StoredColumns.encodePayload(of: $0.change), as: UTF8.self)
                    },
                    hasClient: changes.map { $0.change.clientID != nil }, clients: changes.map { $0.change.clientID ?? "" },
                    hasMutation: changes.map { $0.change.mutationID != nil }, mutations: changes.map { $0.change.mutationID ?? 0 },
                    createdAt: changes.map(\.createdAt)), logger: logger)
        }
        // Last: the head (its row is locked since the transaction began).
        try await connection.run(UpdateHeadStatement(seq: plan.head, clock: Int64(bitPattern: plan.clock.rawValue)), logger: logger)
    }

    // MARK: Pull

    package func pull(
        clientID: ClientID, user: String, probe: ServerVersion?, plan: @escaping @Sendable (PullContext) throws -> PullRead
    ) async throws -> PullPage {
        try await readTransaction { [self] connection in
            let head = try await HeadRow.read(connection, logger)
            var grants: [ScopeID: ScopeRole] = [ScopeID.user(user): .owner]
            for try await scope in try await connection.checkedQuery("SELECT scope FROM osd_grants WHERE user_id = \(user)", logger: logger).decode(
                String.self)
            {
                grants[ScopeID(rawValue: scope)] = .member
            }
            for try await scope in try await connection.checkedQuery("SELECT scope FROM osd_scopes WHERE owner = \(user)", logger: logger).decode(
                String.self)
            {
                grants[ScopeID(rawValue: scope)] = .owner
            }
            var owner: String?
            var last: MutationID = 0
            for (user, lastMutationID, _, _) in try await connection.checkedRows(ClientStatement(clientID: clientID), logger: logger) {
                owner = user
                last = lastMutationID
            }
            let marks = try await self.marks(at: [probe ?? head.seq, head.seq], connection)
            let context = PullContext(
                head: head.seq, horizon: head.horizon, grants: grants, clientOwner: owner, lastMutationID: last, clock: head.clock, marks: marks)
            let read = try plan(context)
            var page: PullPage
            switch read {
            case .snapshot(let scopes, let after, let limit, let count):
                page = try await snapshotPage(context, read, scopes: scopes, after: after, limit: limit, count: count, connection)
            case .log(let after, let scopes, let tailScopes, let tailFrom, let limit):
                page = try await logPage(
                    context, read, after: after, scopes: scopes, tailScopes: tailScopes, tailFrom: tailFrom, limit: limit, connection)
            }
            if page.context.marks[page.end] == nil {
                page.context.marks.merge(try await self.marks(at: [page.end], connection)) { old, _ in old }
            }
            return page
        }
    }

    /// The log marks (`created_at`) of the changes at `seqs`.
    private func marks(at seqs: Set<ServerVersion>, _ connection: PostgresConnection) async throws -> [ServerVersion: Int64] {
        var marks: [ServerVersion: Int64] = [:]
        for seq in seqs {
            for try await mark in try await connection.checkedQuery("SELECT created_at FROM osd_changes WHERE seq = \(seq)", logger: logger).decode(
                Int64.self)
            {
                marks[seq] = mark
            }
        }
        return marks
    }

    private func snapshotPage(
        _ context: PullContext, _ read: PullRead, scopes: [ScopeID], after: SnapshotKey?, limit: Int, count: Bool, _ connection: PostgresConnection
    ) async throws -> PullPage {
        var records: [StoredRecord] = []
        var linked: [RecordKey] = []
        for scope in scopes where after.map({ scope >= $0.scope }) ?? true {
            let start = after?.scope == scope ? after : nil
            let rows = try await connection.checkedQuery(
                """
                SELECT \(unescaped: RecordRow.columns) FROM osd_records
                WHERE scope = \(scope.rawValue) AND NOT deleted AND (entity, record_id) > (\(start?.entity ?? ""), \(start?.recordID ?? ""))
                ORDER BY entity, record_id LIMIT \(limit + 1 - records.count)
                """, logger: logger)
            for try await row in rows {
                let decoded = try RecordRow(row)
                records.append(try decoded.record())
                if decoded.hasLinks { linked.append(RecordKey(entity: decoded.entity, recordID: decoded.recordID)) }
            }
            if records.count > limit { break }
        }
        let hasMore = records.count > limit
        if hasMore { records.removeLast(records.count - limit) }
        try await attachLinks(&records, linked, connection)
        var total: Int?
        if count {
            for try await sum in try await connection.checkedQuery(
                "SELECT COUNT(*) FROM osd_records WHERE scope = ANY(\(scopes.map(\.rawValue))::text[]) AND NOT deleted", logger: logger
            ).decode(Int64.self) {
                total = Int(sum)
            }
        }
        return PullPage(context: context, read: read, records: records, total: total, end: context.head, hasMore: hasMore)
    }

    private func logPage(
        _ context: PullContext, _ read: PullRead, after: ServerVersion, scopes: [ScopeID], tailScopes: [ScopeID], tailFrom: ServerVersion, limit: Int,
        _ connection: PostgresConnection
    ) async throws -> PullPage {
        if scopes.isEmpty && tailScopes.isEmpty {
            return PullPage(context: context, read: read, end: context.head, hasMore: false)
        }
        let names = scopes.map(\.rawValue)
        let tailNames = tailScopes.map(\.rawValue)
        // Only changes at or below the snapshot's head: the head row and the log are read in
        // one snapshot, so this bound changes nothing, but it states the rule.
        let filter = "(scope = ANY($2::text[]) OR (scope = ANY($3::text[]) AND seq > $4)) AND seq <= $5"
        let select = "SELECT seq, txn, scope, entity, record_id, op, payload, client_id, mutation_id FROM osd_changes"
        func bindings(_ first: Int64, _ extra: [Int64]) -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(first)
            bindings.append(names)
            bindings.append(tailNames)
            bindings.append(tailFrom)
            bindings.append(context.head)
            for value in extra { bindings.append(value) }
            return bindings
        }
        var rows = try await connection.checkedQuery(
            PostgresQuery(unsafeSQL: "\(select) WHERE seq > $1 AND \(filter) ORDER BY seq LIMIT $6", binds: bindings(after, [Int64(limit)])),
            logger: logger
        ).collect()
        var end = context.head
        var hasMore = false
        if rows.count == limit, let lastRow = rows.last {
            let (lastSeq, txn) = try lastRow.decode((Int64, Int64).self)
            end = lastSeq
            for try await maximum in try await connection.checkedQuery(
                "SELECT MAX(seq) FROM osd_changes WHERE txn = \(txn) AND seq <= \(context.head)", logger: logger
            ).decode(Int64?.self) {
                end = maximum ?? lastSeq
            }
            if end > lastSeq {
                rows += try await connection.checkedQuery(
                    PostgresQuery(unsafeSQL: "\(select) WHERE seq > $1 AND \(filter) AND seq <= $6 ORDER BY seq", binds: bindings(lastSeq, [end])),
                    logger: logger
                ).collect()
            }
            hasMore =
                !(try await connection.checkedQuery(
                    PostgresQuery(unsafeSQL: "SELECT 1 FROM osd_changes WHERE seq > $1 AND \(filter) LIMIT 1", binds: bindings(end, [])),
                    logger: logger
                ).collect().isEmpty)
            if !hasMore { end = context.head }
        }
        var changes: [PulledChange] = []
        changes.reserveCapacity(rows.count)
        for row in rows {
            let (seq, _, scope, entity, recordID, opName, payloadText, clientID, mutationID) = try row.decode(
                (Int64, Int64, String, String, String, String, String, String?, Int64?).self)
            guard let op = RecordOperation(rawValue: opName) else {
                throw SyncServiceError(500, .internalError, "the change log holds an unknown operation")
            }
            let payload = try StoredColumns.decodePayload(Data(payloadText.utf8))
            changes.append(
                PulledChange(
                    version: seq, op: op, entity: entity, recordID: recordID, scope: ScopeID(rawValue: scope), fields: payload.fields,
                    links: payload.links, clientID: clientID, mutationID: mutationID, merge: payload.merge, textStates: payload.textStates))
        }
        return PullPage(context: context, read: read, changes: changes, end: end, hasMore: hasMore)
    }

    // MARK: Scopes

    package func scopes(of user: String) async throws -> [ScopeAccess] {
        try await readTransaction { [self] connection in
            var result: [ScopeID: ScopeAccess] = [:]
            for try await (scope, role) in try await connection.checkedQuery(
                "SELECT scope, role FROM osd_grants WHERE user_id = \(user)", logger: logger
            ).decode((String, String).self) {
                let id = ScopeID(rawValue: scope)
                result[id] = ScopeAccess(scope: id, role: .member, grant: ScopeGrantRole(stored: role))
            }
            for try await scope in try await connection.checkedQuery("SELECT scope FROM osd_scopes WHERE owner = \(user)", logger: logger).decode(
                String.self)
            { result[ScopeID(rawValue: scope)] = ScopeAccess(scope: ScopeID(rawValue: scope), role: .owner) }
            return Array(result.values)
        }
    }

    // MARK: Blobs

    /// None yet: a server on PostgreSQL is given its blob storage.
    /// Blobs' bytes in the database itself, in chunks (``PostgresBlobStorage``): every server
    /// of the database shares them, with nothing to mount.
    package var defaultBlobStorage: (any BlobStorage)? { PostgresBlobStorage(storage: self) }

    package func blobScopes(of digest: String) async throws -> [ScopeID] {
        try await readTransaction { [self] connection in
            var scopes: [ScopeID] = []
            for try await scope in try await connection.checkedQuery(
                """
                SELECT DISTINCT r.scope FROM osd_blob_refs b
                JOIN osd_records r ON r.entity = b.entity AND r.record_id = b.record_id AND NOT r.deleted
                JOIN osd_clients c ON c.client_id = b.client
                JOIN osd_blob_holders h ON h.digest = b.digest AND h.user_id = c.user_id
                WHERE b.digest = \(digest) ORDER BY r.scope
                """, logger: logger
            ).decode(String.self) { scopes.append(ScopeID(rawValue: scope)) }
            return scopes
        }
    }

    package func noteBlob(_ reference: BlobReference, holder user: String, at milliseconds: Int64) async throws {
        try await writeTransaction { [self] connection, _ in
            try await connection.checkedQuery(
                """
                INSERT INTO osd_blobs (digest, size, stored_at) VALUES (\(reference.digest), \(reference.size), \(milliseconds))
                ON CONFLICT (digest) DO UPDATE SET stored_at = greatest(osd_blobs.stored_at, excluded.stored_at)
                """, logger: logger)
            try await connection.checkedQuery(
                "INSERT INTO osd_blob_holders (digest, user_id) VALUES (\(reference.digest), \(user)) ON CONFLICT DO NOTHING", logger: logger)
        }
    }

    package func holds(blob digest: String, user: String) async throws -> Bool {
        try await readTransaction { [self] connection in
            var held = false
            for try await _ in try await connection.checkedQuery(
                "SELECT 1 FROM osd_blob_holders WHERE digest = \(digest) AND user_id = \(user)", logger: logger
            ).decode(Int.self) { held = true }
            return held
        }
    }

    package func blobBytes(of user: String) async throws -> Int64 {
        try await readTransaction { [self] connection in
            var total: Int64 = 0
            for try await bytes in try await connection.checkedQuery(
                "SELECT coalesce(sum(b.size), 0)::int8 FROM osd_blob_holders h JOIN osd_blobs b ON b.digest = h.digest WHERE h.user_id = \(user)",
                logger: logger
            ).decode(Int64.self) { total = bytes }
            return total
        }
    }

    package func unreferencedBlobs(before milliseconds: Int64, limit: Int) async throws -> [String] {
        try await readTransaction { [self] connection in
            var digests: [String] = []
            for try await digest in try await connection.checkedQuery(
                """
                SELECT digest FROM osd_blobs b WHERE stored_at < \(milliseconds) AND NOT EXISTS (
                    SELECT 1 FROM osd_blob_refs f JOIN osd_records r ON r.entity = f.entity AND r.record_id = f.record_id
                    WHERE f.digest = b.digest AND NOT r.deleted)
                ORDER BY stored_at LIMIT \(limit)
                """, logger: logger
            ).decode(String.self) { digests.append(digest) }
            return digests
        }
    }

    package func forgetBlob(_ digest: String, before milliseconds: Int64) async throws -> Bool {
        // In a writing transaction: serialized with pushes, which name blobs.
        try await writeTransaction { [self] connection, _ in
            var forgotten = false
            for try await _ in try await connection.checkedQuery(
                """
                DELETE FROM osd_blobs b WHERE digest = \(digest) AND stored_at < \(milliseconds) AND NOT EXISTS (
                    SELECT 1 FROM osd_blob_refs f JOIN osd_records r ON r.entity = f.entity AND r.record_id = f.record_id
                    WHERE f.digest = b.digest AND NOT r.deleted)
                RETURNING digest
                """, logger: logger
            ).decode(String.self) { forgotten = true }
            guard forgotten else { return false }
            try await connection.checkedQuery("DELETE FROM osd_blob_holders WHERE digest = \(digest)", logger: logger)
            return true
        }
    }

    package func scope(_ scope: ScopeID) async throws -> ScopeRecord? {
        try await readTransaction { [self] connection in try await scopeRecord(scope, connection) }
    }

    private func scopeRecord(_ scope: ScopeID, _ connection: PostgresConnection) async throws -> ScopeRecord? {
        var members: [String: ScopeGrantRole] = [:]
        for try await (user, role) in try await connection.checkedQuery(
            "SELECT user_id, role FROM osd_grants WHERE scope = \(scope.rawValue)", logger: logger
        ).decode((String, String).self) {
            members[user] = ScopeGrantRole(stored: role)
        }
        for try await owner in try await connection.checkedQuery("SELECT owner FROM osd_scopes WHERE scope = \(scope.rawValue)", logger: logger)
            .decode(
                String.self)
        {
            return ScopeRecord(scope: scope, owner: owner, members: members)
        }
        if let owner = scope.privateOwner, !members.isEmpty { return ScopeRecord(scope: scope, owner: owner, members: members) }
        return nil
    }

    package func updateScope(_ scope: ScopeID, decide: @escaping @Sendable (ScopeRecord?) throws -> ScopeRecord) async throws -> ScopeRecord {
        try await writeTransaction { [self] connection, _ in
            let current = try await scopeRecord(scope, connection)
            let next = try decide(current)
            try await connection.checkedQuery(
                "INSERT INTO osd_scopes (scope, owner) VALUES (\(scope.rawValue), \(next.owner)) ON CONFLICT (scope) DO UPDATE SET owner = excluded.owner",
                logger: logger)
            try await connection.checkedQuery("DELETE FROM osd_grants WHERE scope = \(scope.rawValue)", logger: logger)
            if !next.members.isEmpty {
                let members = next.members.sorted { $0.key < $1.key }
                let users = members.map(\.key)
                let roles = members.map(\.value.rawValue)
                try await connection.checkedQuery(
                    "INSERT INTO osd_grants (scope, user_id, role) SELECT \(scope.rawValue), * FROM unnest(\(users)::text[], \(roles)::text[])",
                    logger: logger)
            }
            // A member whose role changed is told too: what their client may write changed.
            let before = current?.members ?? [:]
            let changed = Set(before.keys).symmetricDifference(next.members.keys).union(
                next.members.filter { member in before[member.key].map { $0 != member.value } ?? false }.map(\.key)
            ).union(
                current.map { $0.owner == next.owner ? [] : [$0.owner, next.owner] } ?? [next.owner])
            if !changed.isEmpty { try await notify([.grantsChanged(users: changed)], connection) }
            return next
        }
    }

    // MARK: Compaction

    package func compact(before milliseconds: Int64) async throws -> CompactionResult {
        try await writeTransaction { [self] connection, head in
            // Push results are not dropped by age: a client that has not acknowledged one may
            // still send its mutation again and must get the same answer (property 3).
            var newHorizon: Int64?
            for try await value in try await connection.checkedQuery(
                "SELECT MAX(seq) FROM osd_changes WHERE created_at < \(milliseconds)", logger: logger
            )
            .decode(Int64?.self) {
                newHorizon = value
            }
            guard let newHorizon, newHorizon > head.horizon else {
                return CompactionResult(horizon: head.horizon, changesRemoved: 0, tombstonesRemoved: 0)
            }
            // The change at the horizon stays: its mark checks cursors at the horizon (see
            // `PullPlanner.decide`); no pull reads it (a cursor below the horizon resets).
            let changesRemoved = try await count(
                connection, "WITH gone AS (DELETE FROM osd_changes WHERE seq < \(newHorizon) RETURNING 1) SELECT COUNT(*) FROM gone")
            try await connection.checkedQuery(
                """
                DELETE FROM osd_links l USING osd_records r
                WHERE r.entity = l.entity AND r.record_id = l.record_id AND r.deleted AND r.version <= \(newHorizon)
                """, logger: logger)
            let tombstonesRemoved = try await count(
                connection, "WITH gone AS (DELETE FROM osd_records WHERE deleted AND version <= \(newHorizon) RETURNING 1) SELECT COUNT(*) FROM gone")
            try await connection.checkedQuery("UPDATE osd_head SET horizon = \(newHorizon) WHERE id = 1", logger: logger)
            return CompactionResult(horizon: newHorizon, changesRemoved: changesRemoved, tombstonesRemoved: tombstonesRemoved)
        }
    }

    func count(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> Int {
        var result = 0
        for try await value in try await connection.checkedQuery(query, logger: logger).decode(Int64.self) { result = Int(value) }
        return result
    }

    // MARK: Events

    /// The events other servers sharing the database committed, from now on (see
    /// `SharedSyncStorage`).
    public func remoteEvents() -> AsyncStream<SyncServiceEvent> {
        let (stream, continuation) = AsyncStream<SyncServiceEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        let closed = shared.state.withLock { state in
            if !state.closed { state.subscribers[id] = continuation }
            return state.closed
        }
        if closed { continuation.finish() }
        continuation.onTermination = { [shared] _ in
            _ = shared.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Returns once this instance listens for other servers' notifications (or is closed):
    /// a change committed elsewhere after this returns reaches ``remoteEvents()``.
    public func waitUntilListening() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = shared.state.withLock { state in
                if state.listening || state.closed { return true }
                state.listeningWaiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Sends events to the other servers, delivered when the transaction commits.
    private func notify(_ events: [SyncServiceEvent], _ connection: PostgresConnection) async throws {
        for event in events {
            var message = EventMessage(origin: origin, event: event)
            var payload = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
            if payload.utf8.count > 7_900 {
                // Past NOTIFY's payload limit: receivers look the readers up themselves.
                message.readers = nil
                message.users = nil
                payload = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
                if payload.utf8.count > 7_900 {
                    message.scopes = nil
                    payload = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
                }
            }
            try await connection.checkedQuery("SELECT pg_notify(\(channel), \(payload))", logger: logger)
        }
    }

    private static func listen(client: PostgresClient, shared: Shared, channel: String, origin: String, logger: Logger) async {
        while !Task.isCancelled && !shared.state.withLock({ $0.closed }) {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        let waiters = shared.state.withLock { state in
                            state.listening = true
                            let waiters = state.listeningWaiters
                            state.listeningWaiters.removeAll()
                            return waiters
                        }
                        for waiter in waiters { waiter.resume() }
                        for try await notification in notifications {
                            if Task.isCancelled { return }
                            await deliver(notification.payload, client: client, shared: shared, origin: origin, logger: logger)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning("listening for other servers' events failed; retrying", metadata: ["error": "\(error)"])
            }
            shared.state.withLock { $0.listening = false }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    private static func deliver(_ payload: String, client: PostgresClient, shared: Shared, origin: String, logger: Logger) async {
        guard let message = try? JSONDecoder().decode(EventMessage.self, from: Data(payload.utf8)), message.origin != origin else { return }
        var event: SyncServiceEvent?
        switch message.kind {
        case "changed":
            if let readers = message.readers, let scopes = message.scopes {
                event = .changed(scopes: scopes, version: message.version ?? 0, readers: readers)
            } else {
                // Too large to carry: every reader of the named scopes.
                let scopes = message.scopes ?? []
                var readers: Set<String> = Set(scopes.compactMap(\.privateOwner))
                let names = scopes.map(\.rawValue)
                let query: PostgresQuery =
                    "SELECT owner FROM osd_scopes WHERE scope = ANY(\(names)::text[]) UNION SELECT user_id FROM osd_grants WHERE scope = ANY(\(names)::text[])"
                // Bounded, as a request's statements are: a query on a connection the database
                // dropped may never end, and this task delivers every later event.
                if let rows = try? await within(.seconds(5), { try await client.query(query, logger: logger).collect() }) ?? nil {
                    for row in rows { if let user = try? row.decode(String.self) { readers.insert(user) } }
                }
                event = .changed(scopes: scopes, version: message.version ?? 0, readers: readers)
            }
        case "grants":
            event = .grantsChanged(users: message.users ?? [])
        default:
            event = nil
        }
        guard let event else { return }
        let subscribers = shared.state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(event) }
    }
}

/// A NOTIFY payload: one event, and the instance that sent it.
struct EventMessage: Codable {
    var origin: String
    var kind: String
    var scopes: [ScopeID]?
    var version: ServerVersion?
    var readers: Set<String>?
    var users: Set<String>?

    init(origin: String, event: SyncServiceEvent) {
        self.origin = origin
        switch event {
        case .changed(let scopes, let version, let readers):
            kind = "changed"
            self.scopes = scopes
            self.version = version
            self.readers = readers
        case .grantsChanged(let users):
            kind = "grants"
            self.users = users
        }
    }
}

extension PostgresConnection {
    /// Executes a prepared statement that returns no rows, to completion.
    func run<Statement: PostgresPreparedStatement & Sendable>(_ statement: Statement, logger: Logger) async throws where Statement.Row == () {
        try await checkedRows(statement, logger: logger)
    }
}
