import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

/// A clock the tests move by hand; sleeping returns at once (tests drive the engine with
/// `syncNow()`, never by waiting).
/// `@unchecked Sendable`: `current` is only read and written while holding `lock`.
final class TestClock: SyncClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }

    func now() -> Date { lock.withLock { current } }

    func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }

    func sleep(seconds: Double) async throws {
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// The real server core over SQLite in a temporary directory, on a shared test clock.
final class TestServer: Sendable {
    let directory: TemporaryDirectory
    let clock: TestClock
    let storage: SQLiteSyncStorage
    let service: SyncService

    init(
        configuration: SyncServiceConfiguration = SyncServiceConfiguration(), clock: TestClock = TestClock(), directory: TemporaryDirectory? = nil,
        name: String = "server.sqlite"
    ) async throws {
        self.directory = try directory ?? TemporaryDirectory()
        self.clock = clock
        storage = try SQLiteSyncStorage(path: self.directory.path(name))
        service = try await SyncService(storage: storage, configuration: configuration, now: { [clock] in clock.now() })
    }
}

/// One device: a store file, its container, an engine and its transport.
struct Device {
    let url: URL
    let container: ModelContainer
    let engine: SyncEngine
    let inMemory: InMemorySyncTransport?
    let context: ModelContext

    /// The in-memory transport of a device made with `open` (HTTP devices have none).
    var transport: InMemorySyncTransport {
        guard let inMemory else { preconditionFailure("an HTTP device has no in-memory transport") }
        return inMemory
    }

    static func configuration(pageSize: Int = 1000) -> SyncConfiguration {
        var configuration = SyncConfiguration()
        configuration.sync(Folder.self)
        configuration.sync(Note.self, scope: \Note.space)
        configuration.sync(Tag.self)
        configuration.sync(Reading.self, policy: .rejectStale)
        configuration.pullPageSize = pageSize
        configuration.snapshotPageSize = pageSize
        return configuration
    }

    /// Opens (or reopens) a device's store at `url`.
    static func open(
        _ server: TestServer, user: String = "alice", url: URL? = nil, directory: TemporaryDirectory, name: String = UUID().uuidString,
        pageSize: Int = 1000, transport: InMemorySyncTransport? = nil, clock: (any SyncClock)? = nil
    ) throws -> Device {
        let url = url ?? directory.file("\(name).sqlite")
        let container = try ModelContainer(for: Schema(engineTestTypes + [Unsynced.self]), configurations: ModelConfiguration(url: url))
        let transport = transport ?? InMemorySyncTransport(service: server.service, user: user)
        let engine = try SyncEngine(
            container: container, transport: transport, user: user, configuration: configuration(pageSize: pageSize), clock: clock ?? server.clock,
            seed: seed(of: url.lastPathComponent + user))
        return Device(url: url, container: container, engine: engine, inMemory: transport, context: ModelContext(container))
    }

    /// Bob's device with his note "team plan" in scope `team:t1` (saved with `alsoInserting`,
    /// in one save) and pushed; with `grantingAlice`, bob then grants alice the scope.
    static func bobSharingPlan(
        _ server: TestServer, directory: TemporaryDirectory, grantingAlice: Bool = true, alsoInserting: [Note] = []
    ) async throws -> (bob: Device, shared: Note) {
        let bob = try Device.open(server, user: "bob", directory: directory, name: "bob")
        let shared = Note(title: "team plan")
        shared.space = "team:t1"
        bob.context.insert(shared)
        for note in alsoInserting { bob.context.insert(note) }
        try bob.context.save()
        try await bob.engine.syncNow()
        if grantingAlice {
            _ = try await server.service.grant(user: "bob", scope: "team:t1", request: GrantRequest(user: "alice"))
        }
        return (bob, shared)
    }

    func fetch<T: PersistentModel>(_ type: T.Type) throws -> [T] {
        try ModelContext(container).fetch(FetchDescriptor<T>())
    }

    /// Every note as `title|body|pinned|folder|tags`, sorted: what two converged devices share.
    func noteState() throws -> [String] {
        try fetch(Note.self).map { note in
            "\(note.title)|\(note.body)|\(note.pinned)|\(note.folder?.name ?? "-")|\(note.tags.map(\.name).sorted().joined(separator: ","))"
        }.sorted()
    }
}

/// Collects an engine's events as they come.
/// `@unchecked Sendable`: `events` is only read and written while holding `lock`.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [SyncEvent] = []
    private var task: Task<Void, Never>?

    init(_ engine: SyncEngine) {
        let stream = engine.events
        task = Task { [weak self] in
            for await event in stream { self?.append(event) }
        }
    }

    private func append(_ event: SyncEvent) { lock.withLock { events.append(event) } }

    var all: [SyncEvent] { lock.withLock { events } }

    /// Waits (yielding) until an event matches; the bound is a liveness guard, not a timing
    /// assertion.
    func waitFor(_ matches: @escaping (SyncEvent) -> Bool) async -> SyncEvent? {
        for _ in 0..<20_000 {
            if let found = all.first(where: matches) { return found }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    deinit { task?.cancel() }
}

/// A stable seed from a name (FNV-1a), so each device gets its own client id, the same in every run.
func seed(of name: String) -> UInt64 {
    var value: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in name.utf8 {
        value ^= UInt64(byte)
        value = value &* 0x0000_0100_0000_01B3
    }
    return value
}

/// A clock whose sleeps wait until the test releases them: the run loop's delays are read, not
/// waited for.
/// `@unchecked Sendable`: `requests` and `generation` are only touched while holding `lock`.
final class GatedClock: SyncClock, @unchecked Sendable {
    private let lock = NSLock()
    private var requests: [Double] = []
    private var generation = 0
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func now() -> Date { start }

    /// The delays asked for so far, in order.
    var sleeps: [Double] { lock.withLock { requests } }

    /// Ends every sleep in progress.
    func release() { lock.withLock { generation += 1 } }

    func sleep(seconds: Double) async throws {
        let mine = lock.withLock { () -> Int in
            requests.append(seconds)
            return generation
        }
        while lock.withLock({ generation }) == mine {
            try Task.checkCancellation()
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}

extension TemporaryDirectory {
    /// Copies the store file `name` as it is now (a consistent copy, WAL included) to `copy`, as
    /// a device's backup would.
    func backUpStore(_ name: String, to copy: String) async throws {
        let live = try DatabaseQueue(path: path(name))
        try await live.writeWithoutTransaction { db in
            try db.execute(sql: "VACUUM INTO ?", arguments: [path(copy)])
        }
        try live.close()
    }
}
