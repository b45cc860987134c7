// Several servers on one PostgreSQL, beside the embedded SQLite server, in one run:
//   swift run -c release osd-server-benchmarks --postgres postgres://user@host/db [batches]
// For each storage and topology (SQLite; PostgreSQL with one server; PostgreSQL with two servers
// on one database) and 8 and 32 concurrent clients pushing batches of 100 mutations spread over
// the servers: mutations per second and p50/p99 push latency. Then the cross-server live
// notification latency: a WebSocket on server A, pushes through server B.
import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import ServiceLifecycle

/// A running server of the benchmark.
struct BenchServer {
    let server: SyncServer
    let port: Int
    let group: ServiceGroup
    let task: Task<Void, any Error>

    static func start(storage: any SyncStorage, logger: Logger) async throws -> BenchServer {
        let configuration = SyncServerConfiguration(
            hostname: "127.0.0.1", port: 0, auth: AuthConfiguration(hmacSecret: "benchmark-secret-of-at-least-32-bytes"), maxBodySize: 64 << 20)
        let server = try await SyncServer(configuration: configuration, storage: storage)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = server.makeApplication(logger: logger) { continuation.yield($0) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw BenchmarkError("the server did not start") }
        return BenchServer(server: server, port: port, group: group, task: task)
    }

    func stop() async throws {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        try await server.close()
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func benchPost(_ base: String, _ path: String, token: String, _ body: Data) async throws -> (Int, ByteBuffer) {
    var request = HTTPClientRequest(url: base + path)
    request.method = .POST
    request.headers.add(name: "Authorization", value: "Bearer \(token)")
    request.headers.add(name: "Content-Type", value: "application/json")
    request.body = .bytes(ByteBuffer(bytes: body))
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
    return (Int(response.status.code), try await response.body.collect(upTo: 1 << 30))
}

func benchBatch(client: String, first: Int64, count: Int) throws -> Data {
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    let mutations = (0..<count).map { offset in
        let id = first + Int64(offset)
        return Mutation(
            id: id, stamp: HLCTimestamp(milliseconds: now, counter: UInt16(offset)),
            changes: [
                RecordChange(
                    op: .insert, entity: "Note", recordID: "\(client)-\(id)", scope: .user("alice"),
                    fields: [
                        "title": .string("Note \(id) of \(client)"), "count": .int(id), "created": .date(Date().timeIntervalSinceReferenceDate),
                    ])
            ])
    }
    return try JSONEncoder.syncProtocol().encode(PushRequest(clientID: client, mutations: mutations))
}

/// Pushes `clients × batches` batches of `batchSize`, client i's k-th batch through server
/// (i + k) mod n; returns mutations/s, latencies and CPU milliseconds.
func pushLoad(
    servers: [BenchServer], token: String, clients: Int, batches: Int, batchSize: Int
) async throws -> (rate: Double, latencies: [Double], wall: Double, cpu: Double) {
    let cpuStart = cpuMilliseconds()
    let start = ContinuousClock.now
    let latencies = try await withThrowingTaskGroup(of: [Double].self) { tasks in
        for client in 0..<clients {
            tasks.addTask {
                var latencies: [Double] = []
                for index in 0..<batches {
                    let body = try benchBatch(client: "bench-\(client)", first: Int64(index * batchSize + 1), count: batchSize)
                    let base = "http://127.0.0.1:\(servers[(client + index) % servers.count].port)"
                    let pushStart = ContinuousClock.now
                    let (status, answer) = try await benchPost(base, "/v1/push", token: token, body)
                    guard status == 200 else { throw BenchmarkError("push failed: \(status) \(String(buffer: answer))") }
                    latencies.append(milliseconds(ContinuousClock.now - pushStart))
                }
                return latencies
            }
        }
        var all: [Double] = []
        for try await latencies in tasks { all += latencies }
        return all
    }
    let wall = milliseconds(ContinuousClock.now - start)
    return (Double(clients * batches * batchSize) / (wall / 1000), latencies, wall, cpuMilliseconds() - cpuStart)
}

func postgresBenchmark(url: String, batches: Int) async throws {
    var logger = Logger(label: "osd-server-bench")
    logger.logLevel = .error
    let batchSize = 100
    let liveRounds = 200
    var rows: [String] = []
    var schemas: [String] = []
    func freshSchema() throws -> PostgresStorageConfiguration {
        var configuration = try PostgresStorageConfiguration(url: url)
        configuration.schema = "osd_bench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        configuration.poolSize = 16
        schemas.append(configuration.schema)
        return configuration
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-server-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    for clients in [8, 32] {
        for topology in ["SQLite, 1 server", "PostgreSQL, 1 server", "PostgreSQL, 2 servers"] {
            var servers: [BenchServer] = []
            if topology.hasPrefix("SQLite") {
                let storage = try SQLiteSyncStorage(path: directory.appendingPathComponent("bench-\(clients).sqlite").path)
                servers.append(try await BenchServer.start(storage: storage, logger: logger))
            } else {
                let configuration = try freshSchema()
                for _ in 0..<(topology.hasSuffix("2 servers") ? 2 : 1) {
                    servers.append(
                        try await BenchServer.start(
                            storage: try await PostgresSyncStorage(configuration: configuration, logger: logger), logger: logger))
                }
            }
            let token = try await servers[0].server.verifier.mint(user: "alice")
            let result = try await pushLoad(servers: servers, token: token, clients: clients, batches: batches, batchSize: batchSize)
            rows.append(
                "| \(topology) | \(clients) | \(Int(result.rate)) | \(String(format: "%.0f", percentile(result.latencies, 0.5))) | \(String(format: "%.0f", percentile(result.latencies, 0.99))) | \(Int(Double(clients * batches * batchSize) / (result.cpu / 1000))) |"
            )
            for server in servers { try await server.stop() }
        }
    }

    // Cross-server live latency: the socket on A, the pushes through B.
    let configuration = try freshSchema()
    let storageA = try await PostgresSyncStorage(configuration: configuration, logger: logger)
    let storageB = try await PostgresSyncStorage(configuration: configuration, logger: logger)
    await storageA.waitUntilListening()
    let a = try await BenchServer.start(storage: storageA, logger: logger)
    let b = try await BenchServer.start(storage: storageB, logger: logger)
    let token = try await a.server.verifier.mint(user: "alice")
    let (messages, messageContinuation) = AsyncStream<ContinuousClock.Instant>.makeStream()
    var headers = HTTPFields()
    headers[.authorization] = "Bearer \(token)"
    let socket = Task { [logger] in
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(a.port)/v1/live", configuration: WebSocketClientConfiguration(additionalHeaders: headers), logger: logger
        ) { inbound, _, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                if case .text(let text) = message, text.contains("\"changed\"") { messageContinuation.yield(ContinuousClock.now) }
            }
        }
    }
    var messageIterator = messages.makeAsyncIterator()
    try await Task.sleep(for: .milliseconds(500))
    var afterAnswer: [Double] = []
    var afterSend: [Double] = []
    for round in 0..<liveRounds {
        let body = try benchBatch(client: "live", first: Int64(round + 1), count: 1)
        let sent = ContinuousClock.now
        let (status, _) = try await benchPost("http://127.0.0.1:\(b.port)", "/v1/push", token: token, body)
        let acknowledged = ContinuousClock.now
        guard status == 200, let received = await messageIterator.next() else { throw BenchmarkError("live push failed") }
        afterAnswer.append(max(0, milliseconds(received - acknowledged)))
        afterSend.append(milliseconds(received - sent))
    }
    socket.cancel()
    try await a.stop()
    try await b.stop()

    print(
        """
        | storage, servers | clients | mutations/s | p50 push (ms) | p99 push (ms) | mutations per CPU-second |
        |---|---|---|---|---|---|
        \(rows.joined(separator: "\n"))

        | cross-server live notification (socket on A, \(liveRounds) pushes through B) | p50 | p99 |
        |---|---|---|
        | from the push's answer | \(String(format: "%.2f", percentile(afterAnswer, 0.5))) ms | \(String(format: "%.2f", percentile(afterAnswer, 0.99))) ms |
        | from sending the push | \(String(format: "%.2f", percentile(afterSend, 0.5))) ms | \(String(format: "%.2f", percentile(afterSend, 0.99))) ms |

        (\(batches) batches of \(batchSize) mutations per client; schemas \(schemas.joined(separator: ", ")) left in the database)
        """)
}
