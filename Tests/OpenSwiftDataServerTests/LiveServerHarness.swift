import AsyncHTTPClient
import Foundation
import GRDB
import Logging
import NIOCore
import NIOHTTP1
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import ServiceLifecycle
import Testing

/// A real server on 127.0.0.1 with a port the system picked, over a SQLite file in a
/// temporary directory or a schema on the test PostgreSQL server, and an HTTP client for it.
struct LiveServer {
    static let secret = "test-secret-of-at-least-32-bytes!"
    let port: Int
    let server: SyncServer
    let directory: TemporaryDirectory
    let storage: TestStorage

    var base: String { "http://127.0.0.1:\(port)" }

    static func run<T>(
        _ backend: Backend = .sqlite, maxBodySize: Int = 64 * 1024, sync: SyncServiceConfiguration = SyncServiceConfiguration(),
        auth: AuthConfiguration = AuthConfiguration(hmacSecret: secret), adminToken: String? = nil,
        logger: Logger? = nil, storage makeStorage: ((String) throws -> SQLiteSyncStorage)? = nil, _ body: (LiveServer) async throws -> T
    ) async throws -> T {
        let directory = try TemporaryDirectory()
        let storage: TestStorage
        if let makeStorage {
            let path = directory.path("server.sqlite")
            storage = .sqlite(try makeStorage(path), path: path)
        } else {
            storage = try await TestStorage.make(backend, directory: directory, name: "server.sqlite")
        }
        return try await run(
            storage: storage, directory: directory, maxBodySize: maxBodySize, sync: sync, auth: auth, adminToken: adminToken, logger: logger, body)
    }

    /// Serves over a given storage (closed when the server stops).
    static func run<T>(
        storage: TestStorage, directory: TemporaryDirectory, maxBodySize: Int = 64 * 1024,
        sync: SyncServiceConfiguration = SyncServiceConfiguration(),
        auth: AuthConfiguration = AuthConfiguration(hmacSecret: secret), adminToken: String? = nil, logger: Logger? = nil,
        _ body: (LiveServer) async throws -> T
    ) async throws -> T {
        let configuration = SyncServerConfiguration(
            hostname: "127.0.0.1", port: 0, auth: auth, maxBodySize: maxBodySize, sync: sync, adminToken: adminToken)
        // Blobs where the storage keeps them: beside the SQLite file, or in PostgreSQL's chunks.
        let server = try await SyncServer(configuration: configuration, storage: storage.storage)
        let logger =
            logger
            ?? {
                var logger = Logger(label: "osd-server-test")
                logger.logLevel = .warning
                return logger
            }()
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = server.makeApplication(logger: logger) { port in portContinuation.yield(port) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                // A server that fails before it listens ends the wait for its port.
                defer { portContinuation.finish() }
                try await group.run()
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                // The server's own error, if it threw one.
                try await tasks.next()
                throw SyncServiceError(500, .internalError, "the server did not start")
            }
            let live = LiveServer(port: port, server: server, directory: directory, storage: storage)
            let result: Result<T, any Error>
            do {
                result = .success(try await body(live))
            } catch {
                result = .failure(error)
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            try await server.close()
            return try result.get()
        }
    }

    func token(_ user: String) async throws -> String { try await server.verifier.mint(user: user) }

    var client: LiveServerClient { LiveServerClient(base: base) }

    func send(
        _ method: HTTPMethod, _ path: String, token: String? = nil, headers: [String: String] = [:], body: Data? = nil
    ) async throws -> LiveServerClient.Answer {
        try await client.send(method, path, token: token, headers: headers, body: body)
    }

    func push(_ request: PushRequest, token: String) async throws -> LiveServerClient.Answer { try await client.push(request, token: token) }

    func pull(_ request: PullRequest, token: String) async throws -> LiveServerClient.Answer { try await client.pull(request, token: token) }

    /// Every table's row count, read through a separate connection.
    func footprint() async throws -> [String: Int] {
        try await storage.footprint()
    }
}

/// An HTTP client of a server at `base`.
struct LiveServerClient {
    let base: String

    struct Answer {
        var status: Int
        var body: Data
        var headers: [String: String]

        var text: String { String(decoding: body, as: UTF8.self) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: body) }

        /// The error code of an `ErrorResponse` body, or nil when the body is not one.
        var errorCode: SyncErrorCode? { (try? decode(ErrorResponse.self))?.error.code }
    }

    func send(_ method: HTTPMethod, _ path: String, token: String? = nil, headers: [String: String] = [:], body: Data? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 256 * 1024 * 1024)
        var headerMap: [String: String] = [:]
        for header in response.headers { headerMap[header.name.lowercased()] = header.value }
        return Answer(status: Int(response.status.code), body: Data(bytes.readableBytesView), headers: headerMap)
    }

    func push(_ request: PushRequest, token: String) async throws -> Answer {
        try await send(.POST, "/v1/push", token: token, body: try JSONEncoder.syncProtocol().encode(request))
    }

    func pull(_ request: PullRequest, token: String) async throws -> Answer {
        var components = URLComponents()
        components.queryItems = request.queryItems
        return try await send(.GET, "/v1/pull?" + (components.percentEncodedQuery ?? ""), token: token)
    }

}

/// Reads the server's database file directly.
struct GRDBProbe {
    let queue: DatabaseQueue

    init(path: String) throws {
        var configuration = Configuration()
        configuration.readonly = true
        queue = try DatabaseQueue(path: path, configuration: configuration)
    }

    func footprint() throws -> [String: Int] {
        try queue.read { db in
            var result: [String: Int] = [:]
            for table in ["osd_records", "osd_links", "osd_changes", "osd_clients", "osd_results", "osd_scopes", "osd_grants"] {
                result[table] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0
            }
            result["head"] = try Int.fetchOne(db, sql: "SELECT seq FROM osd_head") ?? -1
            return result
        }
    }
}
