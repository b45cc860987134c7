import Foundation
import OpenSwiftData
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol

/// What a client's engines reported, kept across its incarnations (an app's record of what it
/// was told): the records of every rejected save, and counts of events.
///
/// `@unchecked Sendable`: its sets are only read and written while holding `lock` (the engine
/// calls the tap from its own actor).
final class SimReports: @unchecked Sendable {
    private let lock = NSLock()
    private var rejectedRecords: Set<String> = []
    private var kinds: [String: Int] = [:]
    private var recent: [String] = []

    /// The events recorded since the last call, as trace lines.
    func takeRecent() -> [String] {
        lock.withLock {
            defer { recent = [] }
            return recent
        }
    }

    func record(_ event: SyncEvent) {
        lock.withLock {
            switch event {
            case let .rejected(rejection):
                recent.append(
                    "  rejected #\(rejection.mutationID) \(rejection.reason.rawValue): \(rejection.records.map(\.recordID).joined(separator: ","))")
            case let .reset(reason): recent.append("  reset \(reason.rawValue)")
            case let .revoked(scopes): recent.append("  revoked \(scopes.map(\.rawValue).joined(separator: ","))")
            case let .pushed(count, last): recent.append("  pushed \(count) through #\(last)")
            default: break
            }
            switch event {
            case let .rejected(rejection):
                kinds["event.rejected.\(rejection.reason.rawValue)", default: 0] += 1
                for record in rejection.records { rejectedRecords.insert("\(record.entity)/\(record.recordID)") }
            case .conflict: kinds["event.conflict", default: 0] += 1
            case let .reset(reason): kinds["event.reset.\(reason.rawValue)", default: 0] += 1
            case .revoked: kinds["event.revoked", default: 0] += 1
            default: break
            }
        }
    }

    /// Whether a rejection named this record.
    func wasRejected(entity: String, recordID: String) -> Bool { lock.withLock { rejectedRecords.contains("\(entity)/\(recordID)") } }

    var eventCounts: [String: Int] { lock.withLock { kinds } }
}

/// One simulated device: a store file that outlives its process, and the current incarnation
/// of the process (container, engine, transport), which a crash throws away.
final class SimClient {
    let name: String
    let user: String
    let url: URL
    let index: Int
    private(set) var incarnation = 0
    private(set) var container: ModelContainer?
    private(set) var engine: SyncEngine?
    private(set) var transport: SimTransport?
    /// A live channel is up: the client is prompted to sync when others push.
    var liveUp = true
    var partitioned = false {
        didSet { transport?.partitioned = partitioned }
    }
    /// The mark of every save this client committed, in order.
    private(set) var committedMarks: [String] = []
    let reports = SimReports()

    init(name: String, user: String, index: Int, directory: URL) {
        self.name = name
        self.user = user
        self.index = index
        url = directory.appendingPathComponent("\(name).sqlite")
    }

    static func configuration() -> SyncConfiguration {
        var configuration = SyncConfiguration()
        configuration.sync(SimList.self, scope: \SimList.space)
        configuration.sync(SimItem.self, scope: \SimItem.space)
        configuration.sync(SimTag.self, scope: \SimTag.space)
        configuration.sync(SimCounter.self, policy: .rejectStale, scope: \SimCounter.space)
        configuration.sync(SimTally.self, scope: \SimTally.space)
        configuration.merge(\SimTally.hits, .counter)
        configuration.sync(SimRoster.self, scope: \SimRoster.space)
        configuration.merge(\SimRoster.members, .set)
        configuration.sync(SimNote.self, scope: \SimNote.space)
        configuration.merge(\SimNote.body, .text)
        configuration.sync(SimPhoto.self, scope: \SimPhoto.space)
        configuration.sync(SimMark.self)
        // Small batches and pages: several pushes per sync, snapshots in several pages.
        configuration.maxMutationsPerPush = 5
        configuration.pullPageSize = 16
        return configuration
    }

    var isUp: Bool { engine != nil }

    /// Starts a process: opens the store file and an engine over a fresh transport.
    func open(network: SimNetwork, clock: SimClock, seed: UInt64) async throws {
        incarnation += 1
        let container = try ModelContainer(for: Schema(simModelTypes), configurations: ModelConfiguration(url: url))
        let transport = SimTransport(network: network, user: user, name: name)
        transport.partitioned = partitioned
        let engine = try SyncEngine(
            container: container, transport: transport, user: user, configuration: Self.configuration(), clock: clock,
            seed: seed &+ UInt64(index) &* 1_000_003 &+ UInt64(incarnation))
        let reports = self.reports
        await engine.setEventTap { event in reports.record(event) }
        self.container = container
        self.transport = transport
        self.engine = engine
    }

    /// Kills the process: the engine and container are thrown away (the file stays).
    func crash() {
        transport?.dead = true
        engine = nil
        transport = nil
        container = nil
    }

    /// One save of the workload, with its ledger mark; returns whether it committed.
    func save(mark: String, _ body: (ModelContext) throws -> Void) -> Bool {
        guard let container else { return false }
        let context = ModelContext(container)
        do {
            try body(context)
            context.insert(SimMark(key: mark, client: name))
            try context.save()
            committedMarks.append(mark)
            return true
        } catch {
            return false
        }
    }

    func fetch<T: PersistentModel>(_ type: T.Type) throws -> [T] {
        guard let container else { return [] }
        return try ModelContext(container).fetch(FetchDescriptor<T>())
    }

    /// The client's synced records with their scopes (as the store's sync table has them).
    func recordEntries() throws -> [SyncRecordEntry] {
        guard let container else { return [] }
        return try container.performSyncRead { db in try ModelContainer.syncRecordEntries(in: db) }
    }
}
