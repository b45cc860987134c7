import Foundation
import GRDB
import Hummingbird
import JWTKit
import Logging
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import ServiceLifecycle
import Testing

/// The claims an identity provider's token carries (as the server reads them).
private struct ProviderClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// An identity provider: an ES256 key pair whose public half is published as a JWKS.
private struct IdentityProvider {
    let key = ES256PrivateKey()
    let kid: String

    var jwksJSON: String {
        get throws {
            let parameters = try #require(key.parameters)
            let jwks = JWKS(keys: [JWK.ecdsa(.es256, identifier: JWKIdentifier(string: kid), x: parameters.x, y: parameters.y, curve: .p256)])
            return String(decoding: try JSONEncoder().encode(jwks), as: UTF8.self)
        }
    }

    func token(_ user: String, expires: Date = Date(timeIntervalSinceNow: 3600)) async throws -> String {
        let keys = await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: kid))
        return try await keys.sign(
            ProviderClaims(sub: SubjectClaim(value: user), exp: ExpirationClaim(value: expires)), kid: JWKIdentifier(string: kid))
    }
}

/// Records every log message (the request log lines, with their metadata).
/// `@unchecked Sendable`: `entries` is read and written under `lock`.
private final class LogRecorder: @unchecked Sendable {
    struct Entry {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    private let lock = NSLock()
    private var stored: [Entry] = []

    var entries: [Entry] { lock.withLock { stored } }

    func append(_ entry: Entry) { lock.withLock { stored.append(entry) } }

    var logger: Logger {
        Logger(label: "osd-server-test") { _ in RecordingHandler(recorder: self) }
    }
}

private struct RecordingHandler: LogHandler {
    let recorder: LogRecorder
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        recorder.append(
            LogRecorder.Entry(
                level: event.level, message: event.message.description, metadata: metadata.merging(event.metadata ?? [:]) { _, new in new }))
    }
}

/// Holds pushes inside the storage until opened, so that a test can shut the server down
/// while a request is in flight.
private actor Gate {
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var isOpen = false
    private(set) var arrivals = 0

    func pass() async {
        arrivals += 1
        guard !isOpen else { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }
}

/// The SQLite storage, with pushes held at a gate.
private final class GatedStorage: SyncStorageBackend {
    let base: SQLiteSyncStorage
    let gate: Gate

    init(base: SQLiteSyncStorage, gate: Gate) {
        self.base = base
        self.gate = gate
    }

    func metadata() async throws -> StorageMetadata { try await base.metadata() }
    func start(wallMilliseconds: UInt64) async throws -> HLCTimestamp { try await base.start(wallMilliseconds: wallMilliseconds) }
    func push(_ load: PushLoad, decide: @escaping @Sendable (PushSnapshot) throws -> PushPlan) async throws -> PushPlan {
        await gate.pass()
        return try await base.push(load, decide: decide)
    }
    func pull(
        clientID: ClientID, user: String, probe: ServerVersion?, plan: @escaping @Sendable (PullContext) throws -> PullRead
    ) async throws -> PullPage {
        try await base.pull(clientID: clientID, user: user, probe: probe, plan: plan)
    }
    func scopes(of user: String) async throws -> [ScopeAccess] { try await base.scopes(of: user) }
    func scope(_ scope: ScopeID) async throws -> ScopeRecord? { try await base.scope(scope) }
    func updateScope(_ scope: ScopeID, decide: @escaping @Sendable (ScopeRecord?) throws -> ScopeRecord) async throws -> ScopeRecord {
        try await base.updateScope(scope, decide: decide)
    }
    func compact(before milliseconds: Int64) async throws -> CompactionResult { try await base.compact(before: milliseconds) }
    func overview(_ limits: OverviewLimits) async throws -> StorageOverview { try await base.overview(limits) }
    func rotateEpoch(expecting expected: String?) async throws -> EpochChange { try await base.rotateEpoch(expecting: expected) }
    var defaultBlobStorage: (any BlobStorage)? { base.defaultBlobStorage }
    func blobScopes(of digest: String) async throws -> [ScopeID] { try await base.blobScopes(of: digest) }
    func noteBlob(_ reference: BlobReference, holder user: String, at milliseconds: Int64) async throws {
        try await base.noteBlob(reference, holder: user, at: milliseconds)
    }
    func holds(blob digest: String, user: String) async throws -> Bool { try await base.holds(blob: digest, user: user) }
    func blobBytes(of user: String) async throws -> Int64 { try await base.blobBytes(of: user) }
    func unreferencedBlobs(before milliseconds: Int64, limit: Int) async throws -> [String] {
        try await base.unreferencedBlobs(before: milliseconds, limit: limit)
    }
    func forgetBlob(_ digest: String, before milliseconds: Int64) async throws -> Bool { try await base.forgetBlob(digest, before: milliseconds) }
    func isReady() async -> Bool { await base.isReady() }
    func close() async throws { try await base.close() }
}

@Suite("Operations on loopback: JWKS auth, request logs, graceful shutdown", .serialized)
struct OperationsTests {
    private func note(_ id: MutationID, _ recordID: RecordID, user: String = "alice") -> PushRequest {
        PushRequest(
            clientID: ClientID("\(user)-phone"),
            mutations: [mutation(id, .insert, recordID, scope: .user(user), fields: ["title": .string(recordID)])])
    }

    @Test("a JWKS document: the provider's ES256 tokens are accepted; other keys, HS256 tokens and expired ones are 401")
    func jwksDocument() async throws {
        let provider = IdentityProvider(kid: "idp-1")
        let impostor = IdentityProvider(kid: "idp-1")
        try await LiveServer.run(auth: AuthConfiguration(jwksJSON: try provider.jwksJSON)) { server in
            let token = try await provider.token("alice")
            let push = try await server.push(note(1, "n1"), token: token)
            #expect(push.status == 200, "\(push.text)")
            #expect(try push.decode(PushResponse.self).results.first?.status == .applied)
            let before = try await server.footprint()
            let hmac = try await TokenVerifier(configuration: AuthConfiguration(hmacSecret: LiveServer.secret), now: { Date() }).mint(user: "alice")
            for (name, bad) in [
                ("another key under the same kid", try await impostor.token("alice")),
                ("an HS256 token when only the JWKS is configured", hmac),
                ("an expired provider token", try await provider.token("alice", expires: Date(timeIntervalSinceNow: -60))),
            ] {
                let answer = try await server.push(note(2, "n2"), token: bad)
                #expect(answer.status == 401, "\(name): \(answer.text)")
                #expect(answer.errorCode == .unauthorized, "\(name)")
                #expect(try await server.footprint() == before, "\(name) stored something")
            }
        }
    }

    @Test("a JWKS URL is fetched when the server starts, and its keys verify tokens")
    func jwksURL() async throws {
        let provider = IdentityProvider(kid: "idp-url")
        let jwks = try provider.jwksJSON
        let router = Router()
        router.get("/.well-known/jwks.json") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: jwks)))
        }
        var logger = Logger(label: "jwks-provider")
        logger.logLevel = .warning
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let url = try #require(URL(string: "http://127.0.0.1:\(port)/.well-known/jwks.json"))
            try await LiveServer.run(auth: AuthConfiguration(jwksURL: url, jwksFetchTimeout: messageDeadline)) { server in
                let push = try await server.push(note(1, "n1", user: "bob"), token: try await provider.token("bob"))
                #expect(push.status == 200, "\(push.text)")
                let scopes = try await server.send(.GET, "/v1/scopes", token: try await provider.token("bob"))
                #expect(try scopes.decode(ScopeListResponse.self).scopes == [ScopeAccess(scope: .user("bob"), role: .owner)])
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test("every request is logged as one structured line carrying the request id the answer names")
    func requestLogs() async throws {
        let recorder = LogRecorder()
        try await LiveServer.run(logger: recorder.logger) { server in
            let alice = try await server.token("alice")
            let push = try await server.push(note(1, "n1"), token: alice)
            let refused = try await server.send(.GET, "/v1/pull?protocolVersion=1&clientID=alice-phone", token: "forged")
            for (answer, route, status) in [(push, "/v1/push", "200"), (refused, "/v1/pull", "401")] {
                let id = try #require(answer.headers["x-request-id"])
                let lines = recorder.entries.filter { $0.message == "request" && $0.metadata["hb.request.id"]?.description == id }
                #expect(lines.count == 1, "one log line for request \(id)")
                let line = try #require(lines.first)
                #expect(line.metadata["route"]?.description == route)
                #expect(line.metadata["status"]?.description == status)
                #expect(line.metadata["method"] != nil && line.metadata["ms"] != nil)
            }
            #expect(push.headers["x-request-id"] != refused.headers["x-request-id"])
        }
    }

    @Test("graceful shutdown: a push in flight finishes and is answered, then the database is closed with the data on disk")
    func gracefulShutdown() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shutdown.sqlite")
        let gate = Gate()
        let storage = GatedStorage(base: try SQLiteSyncStorage(path: path), gate: gate)
        let configuration = SyncServerConfiguration(hostname: "127.0.0.1", port: 0, auth: AuthConfiguration(hmacSecret: LiveServer.secret))
        let server = try await SyncServer(configuration: configuration, storage: storage)
        var logger = Logger(label: "osd-server-test")
        logger.logLevel = .warning
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = server.makeApplication(logger: logger) { portContinuation.yield($0) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        let token = try await server.verifier.mint(user: "alice")
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let client = LiveServerClient(base: "http://127.0.0.1:\(port)")
            let request = note(1, "in-flight")
            let push = Task { try await client.push(request, token: token) }
            for _ in 0..<500 where await gate.arrivals == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(await gate.arrivals == 1, "the push reached the storage")
            await group.triggerGracefulShutdown()
            try await Task.sleep(for: .milliseconds(200))
            await gate.open()
            let answer = try await push.value
            #expect(answer.status == 200, "\(answer.text)")
            #expect(try answer.decode(PushResponse.self).results.first?.status == .applied)
            try await tasks.waitForAll()
        }
        try await server.close()
        #expect(await storage.isReady() == false, "the database is closed")
        let queue = try DatabaseQueue(path: path)
        let stored = try await queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records WHERE record_id = 'in-flight'") }
        #expect(stored == 1)
    }

    @Test(
        "graceful shutdown is bounded: a live client that never answers the close frame gets 1001 and does not hold the server, and a push in flight is answered",
        .timeLimit(.minutes(1)))
    func boundedShutdown() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("bounded.sqlite")
        let gate = Gate()
        let storage = GatedStorage(base: try SQLiteSyncStorage(path: path), gate: gate)
        let configuration = SyncServerConfiguration(
            hostname: "127.0.0.1", port: 0, auth: AuthConfiguration(hmacSecret: LiveServer.secret), shutdownGracePeriod: 2)
        let server = try await SyncServer(configuration: configuration, storage: storage)
        var logger = Logger(label: "osd-server-test")
        logger.logLevel = .error
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = server.makeApplication(logger: logger) { portContinuation.yield($0) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        let token = try await server.verifier.mint(user: "alice")
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let silent = try RawWebSocket(port: port)
            try silent.sendHandshake(port: port, headers: ["Authorization": "Bearer \(token)"])
            #expect(try await silent.readResponse().head.hasPrefix("HTTP/1.1 101"))
            #expect(try await silent.readFrame()?.text.contains("hello") == true)
            let client = LiveServerClient(base: "http://127.0.0.1:\(port)")
            let request = note(1, "in-flight")
            let push = Task { try await client.push(request, token: token) }
            for _ in 0..<500 where await gate.arrivals == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(await gate.arrivals == 1, "the push reached the storage")
            let start = ContinuousClock.now
            await group.triggerGracefulShutdown()
            var close: RawWebSocket.Frame?
            while let frame = try await silent.readFrame() {
                if frame.opcode == 8 {
                    close = frame
                    break
                }
            }
            #expect(close?.closeCode == 1001)
            await gate.open()
            let answer = try await push.value
            #expect(answer.status == 200, "\(answer.text)")
            try await tasks.waitForAll()
            #expect(ContinuousClock.now - start < .seconds(5), "the shutdown ends within the grace period and a margin")
            #expect(await server.hub.count == 0)
        }
        try await server.close()
        let queue = try DatabaseQueue(path: path)
        let stored = try await queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records WHERE record_id = 'in-flight'") }
        #expect(stored == 1)
    }
}
