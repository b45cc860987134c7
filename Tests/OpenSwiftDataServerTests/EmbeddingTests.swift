import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWSClient
import HummingbirdWebSocket
import Logging
import NIOCore
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import ServiceLifecycle
import Testing

/// An application's own request context, made fit for the sync routes.
struct EmbeddingAppContext: SyncRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket = WebSocketHandlerReference<EmbeddingAppContext>()
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}

@Suite("Embedding the server in a Hummingbird application")
struct EmbeddingTests {
    @Test(
        "an application with its own routes mounts the sync routes under /sync: its route answers without the sync middleware, push, pull and the live channel work under /sync"
    )
    func mountedUnderSync() async throws {
        let directory = try TemporaryDirectory()
        let configuration = SyncServerConfiguration(auth: AuthConfiguration(hmacSecret: LiveServer.secret))
        let server = try await SyncServer(configuration: configuration, storage: try SQLiteSyncStorage(path: directory.path("sync.sqlite")))
        var logger = Logger(label: "embedding-test")
        logger.logLevel = .warning

        let router = Router(context: EmbeddingAppContext.self)
        router.get("/hello") { _, _ in "hello" }
        router.addRoutes(server.routes(), atPath: "/sync")
        router.addRoutes(server.monitoringRoutes(), atPath: "/sync")
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            services: server.backgroundServices(logger: logger),
            onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw SyncServiceError(500, .internalError, "the application did not start") }
            let outcome: Result<Void, any Error>
            do {
                try await exercise(port: port, server: server, logger: logger)
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            await server.hub.shutdown()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            try outcome.get()
        }
        try await server.close()
    }

    private func exercise(port: Int, server: SyncServer, logger: Logger) async throws {
        let app = LiveServerClient(base: "http://127.0.0.1:\(port)")
        let sync = LiveServerClient(base: "http://127.0.0.1:\(port)/sync")
        let alice = try await server.verifier.mint(user: "alice")

        // The application's own route: answered by the application, with a header the sync
        // middleware would refuse, and none of the middleware's marks.
        let hello = try await app.send(.GET, "/hello", headers: ["Authorization": "Bearer not-a-token"])
        #expect(hello.status == 200)
        #expect(hello.text == "hello")
        #expect(hello.headers["x-request-id"] == nil)

        // The sync routes under /sync, with their middleware.
        let refused = try await sync.push(PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]), token: "not-a-token")
        #expect(refused.status == 401)
        #expect(refused.errorCode == .unauthorized)
        #expect(refused.headers["x-request-id"]?.isEmpty == false)
        let push = try await sync.push(
            PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("hello")])]), token: alice)
        #expect(push.status == 200)
        #expect(try push.decode(PushResponse.self).results.first?.status == .applied)
        #expect(push.headers["x-request-id"]?.isEmpty == false)
        let pull = try await sync.pull(PullRequest(clientID: "a"), token: alice)
        #expect(pull.status == 200)
        let page = try pull.decode(PullResponse.self)
        #expect(page.changes.first?.fields["title"] == .string("hello") && page.lastMutationID == 1)

        // Nothing at the root: the sync routes and the monitoring routes are where the
        // application put them.
        #expect(try await app.send(.POST, "/v1/push", token: alice).status == 404)
        #expect(try await app.send(.GET, "/health").status == 404)
        #expect(try await sync.send(.GET, "/health").status == 200)
        #expect(try await sync.send(.GET, "/ready").status == 200)
        let metrics = try await sync.send(.GET, "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("/sync/v1/push"))
        #expect(!metrics.text.contains("/hello"))

        // The live channel under /sync: a handshake with a token is upgraded and says hello.
        let url = "ws://127.0.0.1:\(port)/sync/v1/live"
        let (messages, continuation) = AsyncStream<LiveMessage>.makeStream()
        let socket = Task { [logger] in
            var headers = HTTPFields()
            headers[.authorization] = "Bearer \(alice)"
            try await WebSocketClient.connect(url: url, configuration: WebSocketClientConfiguration(additionalHeaders: headers), logger: logger) {
                inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message, let decoded = try? JSONDecoder().decode(LiveMessage.self, from: Data(text.utf8)) {
                        continuation.yield(decoded)
                    }
                }
                continuation.finish()
            }
        }
        defer { socket.cancel() }
        let first = try await withTimeout(messageDeadline) {
            var iterator = messages.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(first?.type == .hello)
        // A plain GET of the live route is an HTTP answer, not a handshake.
        let plain = try await sync.send(.GET, "/v1/live", token: alice)
        #expect(plain.status == 400)
        #expect(plain.errorCode == .malformedRequest)
    }
}
