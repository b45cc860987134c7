import Foundation
import Logging
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import ServiceLifecycle
import Testing

/// A real `osd-server` router on 127.0.0.1, on a port the system picked, over SQLite in a
/// temporary directory.
struct LoopbackServer {
    static let secret = "engine-test-secret-of-at-least-32-bytes"
    let port: Int
    let server: SyncServer
    let directory: TemporaryDirectory

    var url: URL { URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/") }

    /// Runs a server in `directory` (a new one by default: a server restarted on the same
    /// directory keeps its database and the devices' stores), with `maxBodySize`.
    static func run<T>(
        directory given: TemporaryDirectory? = nil, maxBodySize: Int = 8 * 1024 * 1024, _ body: (LoopbackServer) async throws -> T
    ) async throws -> T {
        let directory = try given ?? TemporaryDirectory()
        let configuration = SyncServerConfiguration(
            hostname: "127.0.0.1", port: 0, auth: AuthConfiguration(hmacSecret: secret), maxBodySize: maxBodySize)
        let server = try await SyncServer(configuration: configuration, storage: try SQLiteSyncStorage(path: directory.path("server.sqlite")))
        var logger = Logger(label: "osd-server-engine-test")
        logger.logLevel = .warning
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = server.makeApplication(logger: logger) { port in portContinuation.yield(port) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw SyncEngineError.store("the server did not start") }
            let result: Result<T, any Error>
            do {
                result = .success(try await body(LoopbackServer(port: port, server: server, directory: directory)))
            } catch {
                result = .failure(error)
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            try await server.close()
            return try result.get()
        }
    }

    /// A device whose engine talks HTTP to this server; `tokens` counts the provider's calls.
    func device(_ name: String, user: String = "alice", tokens: TokenCounter? = nil) throws -> Device {
        let url = directory.file("\(name).sqlite")
        let container = try ModelContainer(for: Schema(engineTestTypes + [Unsynced.self]), configurations: ModelConfiguration(url: url))
        let verifier = server.verifier
        let counter = tokens ?? TokenCounter()
        let transport = HTTPSyncTransport(server: self.url) {
            let call = counter.next()
            // The first token a counter hands out is forged when asked: the engine must ask again.
            if call == 1, counter.forgeFirst { return "forged.token.value" }
            return try await verifier.mint(user: user)
        }
        var configuration = Device.configuration()
        configuration.pollInterval = .seconds(3600)  // no polling in these tests: news comes by the live channel
        let engine = try SyncEngine(
            container: container, transport: transport, user: user, configuration: configuration, clock: SystemSyncClock(),
            seed: seed(of: name + user))
        return Device(url: url, container: container, engine: engine, inMemory: nil, context: ModelContext(container))
    }
}

/// Counts token requests.
/// `@unchecked Sendable`: `count` is only read and written while holding `lock`.
final class TokenCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    let forgeFirst: Bool

    init(forgeFirst: Bool = false) { self.forgeFirst = forgeFirst }

    func next() -> Int {
        lock.withLock {
            count += 1
            return count
        }
    }
    var calls: Int { lock.withLock { count } }
}

@Suite("Sync engine over HTTP against a real osd-server on loopback")
struct HTTPTests {
    @Test("two engines converge through the real HTTP server; a 401 asks the token provider again")
    func convergeOverHTTP() async throws {
        try await LoopbackServer.run { server in
            let tokens = TokenCounter(forgeFirst: true)
            let a = try server.device("a", tokens: tokens)
            let b = try server.device("b")
            let folder = Folder(name: "Work")
            a.context.insert(folder)
            let note = Note(title: "Report", folder: folder)
            note.tags = [Tag(name: "q3")]
            a.context.insert(note)
            try a.context.save()
            try await a.engine.syncNow()
            #expect(tokens.calls >= 2)
            try await b.engine.syncNow()
            #expect(try b.noteState() == ["Report||false|Work|q3"])

            let bNote = try #require(try b.context.fetch(FetchDescriptor<Note>()).first)
            bNote.body = "draft"
            try b.context.save()
            try await b.engine.syncNow()
            try await a.engine.syncNow()
            #expect(try a.noteState() == ["Report|draft|false|Work|q3"])
            #expect(try a.noteState() == b.noteState())

            let status = a.engine.status
            let (pending, online, lastSync) = await MainActor.run { (status.pendingChangeCount, status.isOnline, status.lastSyncDate) }
            #expect(pending == 0)
            #expect(online)
            #expect(lastSync != nil)
        }
    }

    @Test("started engines: a save on one is pushed by itself, the live channel tells the other, which pulls it")
    func liveChannelTriggersPull() async throws {
        try await LoopbackServer.run { server in
            let a = try server.device("a")
            let b = try server.device("b")
            let bEvents = EventLog(b.engine)
            await a.engine.start()
            await b.engine.start()
            // B has finished its first cycle and its live channel is up; only then A saves, so
            // B can learn of it only through the live channel (polling is off).
            let status = b.engine.status
            var ready = false
            for _ in 0..<20_000 where !ready {
                ready = await MainActor.run { status.isLiveConnected && status.lastSyncDate != nil && !status.isSyncing }
                if !ready { try await Task.sleep(for: .milliseconds(5)) }
            }
            #expect(ready)
            a.context.insert(Note(title: "live"))
            try a.context.save()
            let pulled = await bEvents.waitFor { event in
                if case let .pulled(changes) = event { return changes > 0 }
                return false
            }
            #expect(pulled != nil)
            #expect(try b.noteState() == ["live||false|-|"])
            await a.engine.stop()
            await b.engine.stop()
        }
    }
}
