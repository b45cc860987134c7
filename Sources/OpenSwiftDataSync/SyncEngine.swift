import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataSyncProtocol

/// Keeps a `ModelContainer`'s synced models in sync with an OpenSwiftData server, offline
/// first: the app keeps saving its contexts as before; the engine pushes those saves when it
/// can, pulls the server's changes into the store, and reports what it did.
///
/// ```swift
/// var configuration = SyncConfiguration()
/// configuration.sync(Note.self)
/// let engine = try SyncEngine(container: container, server: URL(string: "http://127.0.0.1:8080")!,
///                             user: "alice", configuration: configuration,
///                             tokenProvider: { try await auth.token() })
/// await engine.start()
/// for await event in engine.events { print(event) }
/// ```
///
/// Saves never wait on the network: each is captured in its own transaction into the store's
/// sync log. One save is one mutation; mutations are numbered one by one per client, stored
/// before they are sent and resent identically until the server answers, so the server applies
/// each exactly once. Pulled pages are applied in one transaction with their cursor, under the
/// engine's own author (never pushed back). A field with an unpushed local edit keeps its
/// local value until the server has decided (see the design notes in `ARCHITECTURE.md`).
public actor SyncEngine {
    /// What the app can show: online, syncing, pending changes, last sync, last error.
    public nonisolated let status: SyncStatus
    /// Everything the engine does, in order: pushed, pulled, rejected, conflict, reset, errors.
    public nonisolated let events: AsyncStream<SyncEvent>
    /// Progress of long downloads (a first sync, a newly granted scope, a reset): records
    /// received of total, as pages arrive. Keeps only the newest value for a slow reader.
    public nonisolated let downloadProgress: AsyncStream<PullProgress>

    let container: ModelContainer
    let transport: any SyncTransport
    let configuration: SyncConfiguration
    let clock: any SyncClock
    let user: String
    let shapes: [String: SyncEntityShape]
    let schema: SchemaDescriptor
    /// The protocol version the engine speaks: 3 when a text merges, 2 when another field
    /// merges, else 1.
    let protocolVersion: ProtocolVersion
    /// The schema pushes describe: ``schema``, plus what earlier versions of the app synced
    /// while saves made under them are still queued (see `loadState`).
    let pushSchema: SchemaDescriptor
    private let eventContinuation: AsyncStream<SyncEvent>.Continuation
    let progressContinuation: AsyncStream<PullProgress>.Continuation
    var random: SyncRandom

    // Persistent state, mirrored from `osd_sync_engine`.
    var clientID: ClientID = ""
    /// The client ids this installation pushed under before ``clientID``.
    var predecessors = SyncPredecessors()
    var cursor: String?
    /// The cursor to continue a staged (inconsistent) download from.
    var requestCursor: String?
    var nextMutationID: MutationID = 1
    var pushLimit: Int
    /// Whether the server has this session's schema descriptor (sent with the first push, and
    /// again after a new client id or a server restore); later pushes leave it out.
    var schemaSent = false
    /// Whether the next push first puts the held saves back in the queue: on the first push
    /// of each engine (a new launch), and after ``retryHeldSaves()``.
    var retriesHeldSaves = true
    /// The unsettled mutations and shadows last decoded, by stored bytes (see ``DecodeMemo``).
    let sentMemos = SyncEngineStore.SentMemos()
    let shadowMemo = DecodeMemo<SyncEngineStore.ShadowKey, SyncEngineStore.ShadowValue>()
    /// The held saves last decoded (see ``SyncHeldSaves``).
    let heldMemo = DecodeMemo<Int64, Mutation>()

    // Download staging.
    var staged: [PulledChange] = []
    var resetting = false
    var revoked: [ScopeID] = []
    /// Scopes the staged pages download whole (a newly granted scope's snapshot).
    var snapshotScopes: Set<ScopeID> = []
    /// Per record, the last of this client's mutations the pages applied so far in this pull
    /// showed: the totals of the record on the later pages count it and every earlier one.
    var counterEchoes: [SyncRebase.RecordRef: MutationID] = [:]
    /// The last of this client's mutations the server had processed when a pull last reached
    /// its head: every total pulled since counts it and the earlier ones (0: none known, after
    /// a new client id, a server restore or a download again). Stored with the cursor.
    var countedThrough: MutationID = 0

    // Run loop.
    private var runTask: Task<Void, Never>?
    private var liveTask: Task<Void, Never>?
    private var saveTask: Task<Void, Never>?
    private var wakePending = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var busy = false
    private var lockWaiters: [CheckedContinuation<Void, Never>] = []
    var liveConnected = false
    private(set) var signedOut = false
    /// The attachment transfers' loop and what it remembers (see `SyncEngine+Attachments.swift`).
    var attachmentTask: Task<Void, Never>?
    var attachments = SyncAttachmentQueue()

    /// Sets up an engine over any transport.
    ///
    /// Turns on change capture for the configured models. Throws
    /// ``SyncEngineError/modelNotInSchema(_:)`` when a configured model is not in the
    /// container's schema, and ``SyncEngineError/unsupportedModel(entity:reason:)`` when one
    /// cannot sync.
    public init(container: ModelContainer, transport: any SyncTransport, user: String, configuration: SyncConfiguration) throws {
        try self.init(container: container, transport: transport, user: user, configuration: configuration, clock: SystemSyncClock(), seed: nil)
    }

    /// The designated initializer, used by tests and the simulator with an in-memory
    /// transport, a virtual clock and a seed.
    package init(
        container: ModelContainer, transport: any SyncTransport, user: String, configuration: SyncConfiguration, clock: any SyncClock, seed: UInt64?
    ) throws {
        guard !configuration.entities.isEmpty else { throw SyncEngineError.nothingToSync }
        for entity in configuration.entities where !container.hasEntity(named: entity.name) {
            throw SyncEngineError.modelNotInSchema(entity.name)
        }
        var capture = SyncCaptureConfiguration(clock: { [clock] in clock.now() })
        if let seed {
            // A seeded engine's texts are edited as a replica its seed and the time of this
            // open give: a run replays, and a device opened again (or restored from a backup)
            // edits as another replica than before.
            let opened = UInt64(bitPattern: Int64(clock.now().timeIntervalSince1970 * 1_000_000))
            capture.textReplica = {
                var random = SyncRandom(seed: seed ^ opened)
                return random.next()
            }
        }
        for entity in configuration.entities { entity.register(&capture) }
        for merge in configuration.merges {
            guard let property = merge.property else {
                throw SyncEngineError.mergeKindMismatch(
                    entity: merge.entity, property: merge.keyPathDescription, kind: merge.kind, reason: "the key path names no persisted property")
            }
            guard configuration.entity(named: merge.entity) != nil else {
                throw SyncEngineError.mergeKindMismatch(
                    entity: merge.entity, property: property, kind: merge.kind, reason: "\(merge.entity) is not configured to sync")
            }
            capture.merge(entity: merge.entity, property: property, kind: merge.kind)
        }
        do {
            try container.enableSyncCapture(capture)
        } catch let error as SyncCaptureError {
            if case let .mergeKindMismatch(entity, property, kind, reason) = error {
                throw SyncEngineError.mergeKindMismatch(entity: entity, property: property, kind: kind, reason: reason)
            }
            if case let .mergeNotSupported(entity, property, kind) = error {
                throw SyncEngineError.mergeNotSupported(entity: entity, property: property, kind: kind)
            }
            if case let .unsupportedIdentity(entity, reason) = error { throw SyncEngineError.unsupportedModel(entity: entity, reason: reason) }
            if case let .unknownEntity(entity) = error { throw SyncEngineError.modelNotInSchema(entity) }
            if case let .duplicateSyncName(entity, _, _) = error { throw SyncEngineError.unsupportedModel(entity: entity, reason: error.description) }
            if case let .sharedInverseDeleteRules(entity, property, collections) = error {
                throw SyncEngineError.unsupportedModel(
                    entity: entity,
                    reason:
                        "\(entity).\(property) is the inverse of \(collections.joined(separator: " and ")), whose delete rules differ; give them the same delete rule"
                )
            }
            throw SyncEngineError.store(error.description)
        }
        var shapes: [String: SyncEntityShape] = [:]
        var entities: [EntityDescriptor] = []
        for entity in configuration.entities {
            guard let shape = container.syncEntityShape(entity.name) else { throw SyncEngineError.modelNotInSchema(entity.name) }
            shapes[entity.name] = shape
            entities.append(
                EntityDescriptor(
                    name: entity.name,
                    fields: shape.fields.map {
                        FieldDescriptor(
                            name: $0.name, kind: $0.kind, optional: $0.optional, destination: $0.destination,
                            deleteRule: $0.destinationDeleteRule.map(SyncValueMapping.deleteRule), merge: $0.merge)
                    },
                    links: shape.links.map { LinkDescriptor(name: $0.name, destination: $0.destination) },
                    policy: entity.policy
                ))
        }
        self.container = container
        self.transport = transport
        self.user = user
        self.configuration = configuration
        self.clock = clock
        self.shapes = shapes
        let schema = SchemaDescriptor(entities: entities)
        self.schema = schema
        // The lowest version the schema needs: an app without merged fields or blobs keeps
        // working with servers that speak only version 1. Blobs (version 4) when a synced field
        // keeps its values in files (`.externalStorage`).
        protocolVersion =
            container.syncsAttachments
            ? .blobs
            : schema.entities.contains { $0.fields.contains { $0.merge == .text } }
                ? .textMerges : schema.entities.contains { $0.fields.contains { $0.merge != nil } } ? .fieldMerges : .plainFields
        self.pushLimit = max(1, configuration.maxMutationsPerPush)
        var random = SyncRandom(seed: seed ?? UInt64.random(in: 0...UInt64.max))
        self.status = SyncStatus()
        (events, eventContinuation) = AsyncStream<SyncEvent>.makeStream(bufferingPolicy: .unbounded)
        (downloadProgress, progressContinuation) = AsyncStream<PullProgress>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let state = try Self.loadState(container: container, user: user, schema: schema, random: &random)
        self.random = random
        clientID = state.clientID
        predecessors = state.predecessors
        cursor = state.cursor
        requestCursor = state.cursor
        nextMutationID = state.next
        pushSchema = state.pushSchema
        countedThrough = state.countedThrough
    }

    /// Sets up an engine that talks to `osd-server` at `server` over HTTP, with a token from
    /// `tokenProvider` (asked again when the server answers 401).
    public init(
        container: ModelContainer, server: URL, user: String, configuration: SyncConfiguration,
        tokenProvider: @escaping @Sendable () async throws -> String
    ) throws {
        try self.init(
            container: container, transport: HTTPSyncTransport(server: server, tokenProvider: tokenProvider), user: user, configuration: configuration
        )
    }

    /// Reads the engine's state from the store, making a client id for a new install (or a
    /// user other than the last one).
    private static func loadState(
        container: ModelContainer, user: String, schema: SchemaDescriptor, random: inout SyncRandom
    ) throws -> (
        clientID: ClientID, predecessors: SyncPredecessors, cursor: String?, next: MutationID, pushSchema: SchemaDescriptor,
        countedThrough: MutationID
    ) {
        do {
            try container.registerSyncConsumer(SyncEngineStore.consumer)
            // One user's edits are never pushed into another's account: another user's
            // unpushed saves stop the setup until that user returns or they are discarded.
            let previous = try container.performSyncRead { db -> (user: String?, pending: Int) in
                guard try db.tableExists(SyncEngineStore.stateTable), try db.tableExists(SyncEngineStore.sentTable) else { return (nil, 0) }
                return (try SyncEngineStore.value("user", in: db), try pendingAndHeldCounts(in: db).pending)
            }
            if let last = previous.user, last != user, previous.pending > 0 {
                throw SyncEngineError.pendingChangesOfAnotherUser(last)
            }
            let fresh = makeClientID(&random)
            let previousPending = previous.pending
            try container.createComponentTables(SyncEngineStore.tables, owner: SyncEngineStore.owner)
            return try container.performSyncTransaction { db in
                var client = try SyncEngineStore.value("clientID", in: db)
                let lastUser = try SyncEngineStore.value("user", in: db)
                if client == nil || lastUser != user {
                    client = fresh
                    try SyncEngineStore.set("clientID", fresh, in: db)
                    try SyncEngineStore.set("user", user, in: db)
                    try SyncEngineStore.set("cursor", nil, in: db)
                    try SyncEngineStore.set(SyncPredecessors.key, nil, in: db)
                    // Another user's scopes are not this one's: no event compares against them.
                    try SyncEngineStore.set(SyncEngineStore.readableScopesKey, nil, in: db)
                    try SyncEngineStore.set("revokedScopes", nil, in: db)
                }
                // An app update that syncs entities or fields the last run did not: those the
                // last run's pulls skipped as they arrived are downloaded again (pending changes
                // stay, and mask what they touched as in any pull). An update that adds only what
                // the server never sent this device keeps its cursor: nothing to download.
                let encoded = String(decoding: try JSONEncoder.syncProtocol().encode(schema), as: UTF8.self)
                var skipped = try SyncEngineStore.skipped(in: db)
                if let stored = try SyncEngineStore.value("schema", in: db), stored != encoded,
                    let previous = try? JSONDecoder().decode(SchemaDescriptor.self, from: Data(stored.utf8)),
                    schema.needsDownload(after: previous, skipped: skipped)
                {
                    try SyncEngineStore.set("cursor", nil, in: db)
                }
                // A download from the start records everything it skips: tracking starts there
                // (a store from before the tracking keeps the older rule until then).
                if try SyncEngineStore.value("cursor", in: db) == nil { skipped = [] }
                if let skipped {
                    // What this version syncs is no longer skipped (a download brings it now).
                    let stillSkipped = skipped.subtracting(schema.syncedNames)
                    try SyncEngineStore.set(SyncEngineStore.skippedKey, stillSkipped.sorted().joined(separator: "\n"), in: db)
                }
                // Saves queued under an earlier schema may name entities and fields this version
                // no longer syncs: until the queue has been empty once, pushes describe those
                // too (as optional fields), so the server does not refuse what was valid when
                // it was saved.
                var earlier =
                    (try SyncEngineStore.value("earlierSchemas", in: db)).flatMap {
                        try? JSONDecoder().decode(SchemaDescriptor.self, from: Data($0.utf8))
                    } ?? SchemaDescriptor(entities: [])
                if let stored = try SyncEngineStore.value("schema", in: db), stored != encoded,
                    let previous = try? JSONDecoder().decode(SchemaDescriptor.self, from: Data(stored.utf8))
                {
                    earlier = earlier.merged(with: previous)
                }
                if previousPending == 0 { earlier = SchemaDescriptor(entities: []) }
                try SyncEngineStore.set(
                    "earlierSchemas",
                    earlier.entities.isEmpty ? nil : String(decoding: try JSONEncoder.syncProtocol().encode(earlier), as: UTF8.self), in: db)
                try SyncEngineStore.set("schema", encoded, in: db)
                let cursor = try SyncEngineStore.value("cursor", in: db)
                let next = MutationID(try SyncEngineStore.value("nextMutationID", in: db) ?? "1") ?? 1
                // Only with the cursor it was counted with.
                let counted = cursor == nil ? 0 : try SyncEngineStore.value(SyncEngineStore.countedThroughKey, in: db).flatMap { MutationID($0) } ?? 0
                let predecessors = SyncPredecessors(stored: try SyncEngineStore.value(SyncPredecessors.key, in: db))
                return (client ?? fresh, predecessors, cursor, next, schema.merged(with: earlier), counted)
            }
        } catch let error as SyncEngineError {
            throw error
        } catch let error as SwiftDataError {
            throw SyncEngineError.store(error.description)
        } catch {
            throw SyncEngineError.store("\(error)")
        }
    }

    static func makeClientID(_ random: inout SyncRandom) -> ClientID {
        let high = random.next()
        let low = random.next()
        let hex = String(high, radix: 16) + "-" + String(low, radix: 16)
        return "c-" + hex
    }

    // MARK: Store access

    func storeWrite<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try container.performSyncTransaction(body)
        } catch let error as SyncEngineError {
            throw error
        } catch {
            throw SyncEngineError.store("\(error)")
        }
    }

    func storeRead<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try container.performSyncRead(body)
        } catch let error as SyncEngineError {
            throw error
        } catch {
            throw SyncEngineError.store("\(error)")
        }
    }

    func emit(_ event: SyncEvent) {
        eventTap?(event)
        eventContinuation.yield(event)
    }

    /// Called synchronously with every event as it is emitted, before ``events`` yields it:
    /// the deterministic simulator keeps its ledger of rejections from it at the exact step
    /// they happen (an `AsyncStream` reader runs at a time no schedule controls).
    package private(set) var eventTap: (@Sendable (SyncEvent) -> Void)?

    /// Sets (or clears) ``eventTap``.
    package func setEventTap(_ tap: (@Sendable (SyncEvent) -> Void)?) { eventTap = tap }

    func observe(_ stamp: HLCTimestamp) {
        // Limited to the protocol's drift ahead of this device's wall time; the store's clock
        // (which stamps saves) moves past what was accepted.
        var limit = HybridLogicalClock()
        let accepted = limit.observe(stamp, wallMilliseconds: HLCTimestamp.milliseconds(of: clock.now()))
        _ = try? container.advanceSyncClock(receivedStamp: accepted.rawValue)
    }

    // MARK: Lifecycle

    /// Starts syncing in the background: a push and pull now, after each local save, on each
    /// live-channel message, and by polling while the live channel is down.
    public func start() {
        guard runTask == nil, !signedOut else { return }
        let saves = container.saveEvents()
        let engineAuthor = container.syncEngineAuthor
        let synced = Set(configuration.entities.map(\.name))
        saveTask = Task { [weak self] in
            for await event in saves {
                guard event.author != engineAuthor, !event.entities.isDisjoint(with: synced) else { continue }
                await self?.wake()
            }
        }
        liveTask = Task { [weak self] in await self?.runLiveChannel() }
        runTask = Task { [weak self] in await self?.runLoop() }
        startAttachmentTransfers()
    }

    /// Stops background syncing (the state stays in the store; ``start()`` resumes it).
    public func stop() async {
        let tasks = [runTask, liveTask, saveTask, attachmentTask]
        runTask = nil
        liveTask = nil
        saveTask = nil
        attachmentTask = nil
        for task in tasks { task?.cancel() }
        wake()
        attachments.signal?.finish()
        attachments.signal = nil
        for task in tasks { await task?.value }
    }

    /// Pushes every pending save and pulls everything new, now; throws what failed.
    public func syncNow() async throws {
        guard !signedOut else { throw SyncEngineError.signedOut }
        try await exclusively { try await self.cycle() }
    }

    /// Whether a model has local changes the server has not settled yet.
    public func hasPendingChanges(for identifier: PersistentIdentifier) throws -> Bool {
        guard let recordID = try container.syncRecordID(for: identifier) else { return false }
        let masks = try pendingMasks()
        return masks[SyncRebase.RecordRef(entity: identifier.entityName, recordID: recordID)] != nil
    }

    /// How many local saves the server has not settled yet.
    public func pendingChangeCount() throws -> Int {
        try storeRead { db in try Self.pendingAndHeldCounts(in: db).pending }
    }

    /// The saves not settled yet (held ones included) and the held ones, read together.
    static func pendingAndHeldCounts(in db: Database) throws -> (pending: Int, held: Int) {
        let sent = try SyncEngineStore.unsettledCount(in: db)
        let cursor = try ModelContainer.syncConsumerCursor(SyncEngineStore.consumer, in: db)
        let unsent = try ModelContainer.syncLogCount(after: cursor, in: db)
        let held = try SyncHeldSaves.count(in: db)
        return (sent + unsent + held, held)
    }

    /// ``pendingAndHeldCounts(in:)`` for the status (zero when the store cannot be read).
    private func statusCounts() -> (pending: Int, held: Int) {
        (try? storeRead { db in try Self.pendingAndHeldCounts(in: db) }) ?? (0, 0)
    }

    /// The client id the engine pushes under.
    public var currentClientID: ClientID { clientID }

    /// Stops syncing. With `removingLocalData`, deletes every synced record from the store
    /// (not pushed: the server keeps them) and forgets the engine's state, unpushed changes
    /// included; without, the state stays for when the user signs in again.
    public func signOut(removingLocalData: Bool) async throws {
        await stop()
        signedOut = true
        guard removingLocalData else { return }
        try await exclusively {
            let entries = try self.storeRead { db in try ModelContainer.syncRecordEntries(in: db) }
            let deletes = entries.map { RemoteRecordChange.delete($0.entity, recordID: $0.recordID, serverVersion: 0) }
            do {
                try self.container.applyRemoteChanges(
                    deletes,
                    alsoWriting: { db in
                        try SyncEngineStore.clearAll(in: db)
                        let last = try ModelContainer.lastSyncLogSequence(in: db)
                        try ModelContainer.advanceSyncConsumer(SyncEngineStore.consumer, to: last, in: db)
                    })
            } catch {
                throw SyncEngineError.store("\(error)")
            }
        }
        eventContinuation.finish()
        progressContinuation.finish()
        await updateStatus()
    }

    // MARK: Run loop

    func wake() {
        if let waiter {
            self.waiter = nil
            waiter.resume()
        } else {
            wakePending = true
        }
    }

    /// Waits for a wake-up, or `seconds` when given.
    private func waitForWake(seconds: Double?) async {
        if wakePending {
            wakePending = false
            return
        }
        var timer: Task<Void, Never>?
        if let seconds {
            let clock = self.clock
            timer = Task { [weak self] in
                do { try await clock.sleep(seconds: seconds) } catch { return }
                await self?.wake()
            }
        }
        await withCheckedContinuation { continuation in
            if Task.isCancelled || wakePending {
                wakePending = false
                continuation.resume()
            } else {
                waiter = continuation
            }
        }
        timer?.cancel()
    }

    private func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        while busy { await withCheckedContinuation { lockWaiters.append($0) } }
        busy = true
        defer {
            busy = false
            if !lockWaiters.isEmpty { lockWaiters.removeFirst().resume() }
        }
        return try await body()
    }

    private func runLoop() async {
        var failures = 0
        while !Task.isCancelled {
            var delay: Double?
            do {
                try await exclusively { try await self.cycle() }
                failures = 0
                delay = liveConnected ? nil : configuration.pollInterval.secondsValue
            } catch {
                let engineError = Self.engineError(error)
                if Self.isTransient(engineError) {
                    failures += 1
                    delay = configuration.backoff.delay(attempt: failures, using: &random)
                } else {
                    // Permanent: not retried until something new happens (a save, a live
                    // message, syncNow, the poll).
                    failures = 0
                    delay = configuration.pollInterval.secondsValue
                }
            }
            if Task.isCancelled { break }
            await waitForWake(seconds: delay)
        }
    }

    static func engineError(_ error: any Error) -> SyncEngineError {
        if let error = error as? SyncEngineError { return error }
        if let error = error as? SyncTransportError { return .transport(error) }
        if let error = error as? SyncCaptureError { return .store(error.description) }
        return .store("\(error)")
    }

    static func isTransient(_ error: SyncEngineError) -> Bool {
        switch error {
        case let .transport(transport): return transport.isTransient
        case .store: return true
        default: return false
        }
    }

    private func runLiveChannel() async {
        var failures = 0
        while !Task.isCancelled {
            let stream = transport.live(clientID: clientID)
            do {
                for try await _ in stream {
                    failures = 0
                    if !liveConnected {
                        liveConnected = true
                        await setLive(true)
                    }
                    wake()
                }
            } catch {}
            if liveConnected {
                liveConnected = false
                await setLive(false)
            }
            if Task.isCancelled { break }
            failures += 1
            let delay = configuration.backoff.delay(attempt: failures, using: &random)
            do { try await clock.sleep(seconds: max(delay, 0.05)) } catch { break }
        }
    }

    /// One full sync: push everything, pull to the end, push what the pull made pending.
    func cycle() async throws {
        await setSyncing(true)
        do {
            // A push that fails does not keep the pull from running: the queue's trouble never
            // stops the app from seeing others' changes.
            var pushError: (any Error)?
            do { _ = try await pushAll() } catch { pushError = error }
            try await pullAll()
            if let pushError { throw pushError }
            // Saves made (or mutations to resend) while pulling: push them and settle them.
            if try await pushAll() > 0 { try await pullAll() }
            await setSyncing(false)
            await succeeded()
            // The records are in; their attachments follow, on their own loop.
            attachments.signal?.yield()
        } catch {
            let engineError = Self.engineError(error)
            emit(.error(engineError))
            await setSyncing(false)
            await failed(engineError)
            throw engineError
        }
    }

    // MARK: Status

    private func setLive(_ live: Bool) async {
        let status = self.status
        await MainActor.run { status.isLiveConnected = live }
    }

    private func setSyncing(_ syncing: Bool) async {
        let status = self.status
        await MainActor.run { status.isSyncing = syncing }
    }

    private func succeeded() async {
        let (pending, held) = statusCounts()
        let now = clock.now()
        let status = self.status
        await MainActor.run {
            status.isOnline = true
            status.pendingChangeCount = pending
            status.heldSaveCount = held
            status.lastSyncDate = now
            status.lastError = nil
        }
    }

    private func failed(_ error: SyncEngineError) async {
        let pending = (try? pendingChangeCount()) ?? 0
        let offline: Bool
        if case let .transport(transport) = error, case .unreachable = transport { offline = true } else { offline = false }
        let status = self.status
        await MainActor.run {
            if offline { status.isOnline = false }
            status.pendingChangeCount = pending
            status.lastError = error
        }
    }

    func updateStatus() async {
        let (pending, held) = statusCounts()
        let status = self.status
        await MainActor.run {
            status.pendingChangeCount = pending
            status.heldSaveCount = held
        }
    }

    // MARK: Pending state

    /// The record changes of every pending mutation: sent and unsettled, then unsent saves.
    func pendingChanges(settledThrough: MutationID? = nil) throws -> (before: [RecordChange], after: [RecordChange]) {
        let pending = try pendingChangesAndLogSequence(settledThrough: settledThrough)
        return (pending.before, pending.after)
    }

    /// The pending changes with the sequence of the last log entry they include: an apply
    /// computed from them is only valid while no later save has been logged.
    func pendingChangesAndLogSequence(
        settledThrough: MutationID? = nil
    ) throws -> (before: [RecordChange], after: [RecordChange], lastLogSequence: Int64) {
        try storeRead { db in try pendingChanges(sent: SyncEngineStore.sent(in: db, memos: sentMemos), settledThrough: settledThrough, in: db) }
    }

    /// The pending changes given the unsettled mutations `sent` (read in the same
    /// transaction), with the sequence of the last log entry they include.
    func pendingChanges(
        sent: [SyncEngineStore.Sent], settledThrough: MutationID?, in db: Database
    ) throws -> (before: [RecordChange], after: [RecordChange], lastLogSequence: Int64) {
        let cursor = try ModelContainer.syncConsumerCursor(SyncEngineStore.consumer, in: db)
        let unsent = try ModelContainer.syncLogEntries(after: cursor, limit: nil, in: db).flatMap(SyncOutbox(user: user).changes)
        // Held saves never settle while held; their records' later saves are held too, so
        // they come after every sent mutation of their records.
        let held = try SyncHeldSaves.all(in: db, memo: heldMemo).flatMap(\.mutation.changes)
        let before = sent.flatMap(\.mutation.changes) + held + unsent
        let after = sent.filter { $0.mutation.id > (settledThrough ?? MutationID.min) }.flatMap(\.mutation.changes) + held + unsent
        return (before, after, try ModelContainer.lastSyncLogSequence(in: db))
    }

    func pendingMasks() throws -> [SyncRebase.RecordRef: SyncRebase.Mask] {
        SyncRebase.masks(of: try pendingChanges().before)
    }
}

extension SchemaDescriptor {
    /// The entities, and `Entity.field` / `Entity.link` names, this schema syncs that
    /// `previous` did not.
    func additions(to previous: SchemaDescriptor) -> Set<String> {
        let known = Dictionary(previous.entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var added: Set<String> = []
        for entity in entities {
            guard let old = known[entity.name] else {
                added.insert(entity.name)
                continue
            }
            for name in Set(entity.fields.map(\.name)).subtracting(old.fields.map(\.name)) { added.insert(entity.name + "." + name) }
            for name in Set(entity.links.map(\.name)).subtracting(old.links.map(\.name)) { added.insert(entity.name + "." + name) }
        }
        return added
    }

    /// This schema with what `other` describes and it does not: `other`'s entities, and its
    /// fields (as optional) and links of entities both have. This schema's descriptions win.
    func merged(with other: SchemaDescriptor) -> SchemaDescriptor {
        var entities = self.entities
        for entity in other.entities {
            guard let index = entities.firstIndex(where: { $0.name == entity.name }) else {
                var kept = entity
                kept.fields = entity.fields.map { field in
                    var optional = field
                    optional.optional = true
                    return optional
                }
                entities.append(kept)
                continue
            }
            for field in entity.fields where !entities[index].fields.contains(where: { $0.name == field.name }) {
                var optional = field
                optional.optional = true
                entities[index].fields.append(optional)
            }
            for link in entity.links where !entities[index].links.contains(where: { $0.name == link.name }) {
                entities[index].links.append(link)
            }
        }
        return SchemaDescriptor(entities: entities)
    }

    /// The entities, and `Entity.field` / `Entity.link` names, this schema syncs.
    var syncedNames: Set<String> {
        var names: Set<String> = []
        for entity in entities {
            names.insert(entity.name)
            for field in entity.fields { names.insert(entity.name + "." + field.name) }
            for link in entity.links { names.insert(entity.name + "." + link.name) }
        }
        return names
    }

    /// Whether an update from `previous` to this schema must download again: it syncs
    /// something that earlier pulls skipped (`skipped`), or, for a store whose engine did not
    /// track what it skipped (nil), anything new.
    func needsDownload(after previous: SchemaDescriptor, skipped: Set<String>?) -> Bool {
        let added = additions(to: previous)
        guard let skipped else { return !added.isEmpty }
        return !added.isDisjoint(with: skipped)
    }
}
