// Sync server figures on loopback with the embedded SQLite storage:
//   swift run -c release osd-server-benchmarks
// 1. push throughput: 8 concurrent clients pushing batches of 100 mutations (p50/p99 latency);
// 2. a pull of 100,000 records from a fresh cursor (server-side time, and over HTTP);
// 3. live notification latency: from a push's answer to another client's WebSocket message.
// With `--postgres URL [batches]`: SQLite and PostgreSQL (one and two servers) side by side
// (PostgresBenchmark.swift). With `--delete-rules [items]`: the cost of the server's delete
// rules (DeleteRuleBenchmark.swift).
import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import ServiceLifecycle

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

/// The process's CPU time (user + system), in milliseconds: on a machine shared with other
/// work, the wall time of a phase overstates what the server needs.
func cpuMilliseconds() -> Double {
    var usage = rusage()
    #if os(Linux)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000
}

func benchmark() async throws {
    let arguments = CommandLine.arguments
    let clients = 8
    let batches = Int(arguments.dropFirst().first ?? "") ?? 25
    let batchSize = 100
    let pullRecords = 100_000
    let liveRounds = 200

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-server-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    var logger = Logger(label: "osd-server-bench")
    logger.logLevel = .error
    let configuration = SyncServerConfiguration(
        hostname: "127.0.0.1", port: 0, auth: AuthConfiguration(hmacSecret: "benchmark-secret-of-at-least-32-bytes"), maxBodySize: 64 << 20)
    let server = try await SyncServer(
        configuration: configuration, storage: try SQLiteSyncStorage(path: directory.appendingPathComponent("bench.sqlite").path))
    let (ports, portContinuation) = AsyncStream<Int>.makeStream()
    let app = server.makeApplication(logger: logger) { portContinuation.yield($0) }
    let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
    let serverTask = Task { try await group.run() }
    var portIterator = ports.makeAsyncIterator()
    guard let port = await portIterator.next() else { fatalError("the server did not start") }
    let base = "http://127.0.0.1:\(port)"
    let token = try await server.verifier.mint(user: "alice")
    let http = HTTPClient.shared

    func post(_ path: String, _ body: Data) async throws -> (Int, ByteBuffer) {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await http.execute(request, timeout: .seconds(120))
        return (Int(response.status.code), try await response.body.collect(upTo: 1 << 30))
    }

    func get(_ path: String) async throws -> (Int, ByteBuffer) {
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        let response = try await http.execute(request, timeout: .seconds(120))
        return (Int(response.status.code), try await response.body.collect(upTo: 1 << 30))
    }

    func batch(client: String, first: Int64, count: Int) throws -> Data {
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

    // 1. Push throughput. The clients' bodies are encoded before the clock starts (their
    // encoding is the clients' work, not the server's; its CPU time is reported on its own).
    let encodeCPUStart = cpuMilliseconds()
    let bodies = try (0..<clients).map { client in
        try (0..<batches).map { index in try batch(client: "bench-\(client)", first: Int64(index * batchSize + 1), count: batchSize) }
    }
    let encodeCPU = cpuMilliseconds() - encodeCPUStart
    let pushCPUStart = cpuMilliseconds()
    let start = ContinuousClock.now
    let latencies = try await withThrowingTaskGroup(of: [Double].self) { tasks in
        for client in 0..<clients {
            tasks.addTask {
                var latencies: [Double] = []
                for index in 0..<batches {
                    let body = bodies[client][index]
                    let pushStart = ContinuousClock.now
                    let (status, answer) = try await post("/v1/push", body)
                    guard status == 200 else { fatalError("push failed: \(status) \(String(buffer: answer))") }
                    latencies.append(milliseconds(ContinuousClock.now - pushStart))
                }
                return latencies
            }
        }
        var all: [Double] = []
        for try await latencies in tasks { all += latencies }
        return all
    }
    let elapsed = ContinuousClock.now - start
    let pushCPU = cpuMilliseconds() - pushCPUStart
    let pushed = clients * batches * batchSize
    let rate = Double(pushed) / (milliseconds(elapsed) / 1000)

    // 2. Pull 100,000 records from a fresh cursor (seeding the rest through the core).
    var seeded = pushed
    var seedID: Int64 = 1
    while seeded < pullRecords {
        let count = min(1_000, pullRecords - seeded)
        let request = try JSONDecoder().decode(PushRequest.self, from: batch(client: "seed", first: seedID, count: count))
        _ = try await server.service.push(user: "alice", request: request)
        seedID += Int64(count)
        seeded += count
    }
    var serverPull = Duration.zero
    let pullCPUStart = cpuMilliseconds()
    var cursor: String?
    var pulled = 0
    repeat {
        let pullStart = ContinuousClock.now
        let page = try await server.service.pull(user: "alice", request: PullRequest(clientID: "reader", cursor: cursor, limit: 10_000))
        serverPull += ContinuousClock.now - pullStart
        pulled += page.changes.count
        cursor = page.hasMore ? page.cursor : nil
    } while cursor != nil
    let pullCPU = cpuMilliseconds() - pullCPUStart
    var httpPull = Duration.zero
    var httpPulled = 0
    cursor = nil
    repeat {
        let pullStart = ContinuousClock.now
        var components = URLComponents()
        components.queryItems = PullRequest(clientID: "reader-http", cursor: cursor, limit: 10_000).queryItems
        let (status, body) = try await get("/v1/pull?" + (components.percentEncodedQuery ?? ""))
        guard status == 200 else { fatalError("pull failed: \(status)") }
        let page = try JSONDecoder().decode(PullResponse.self, from: Data(body.readableBytesView))
        httpPull += ContinuousClock.now - pullStart
        httpPulled += page.changes.count
        cursor = page.hasMore ? page.cursor : nil
    } while cursor != nil

    // 3. Live notification latency.
    let (messages, messageContinuation) = AsyncStream<ContinuousClock.Instant>.makeStream()
    var headers = HTTPFields()
    headers[.authorization] = "Bearer \(token)"
    let socket = Task {
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/live", configuration: WebSocketClientConfiguration(additionalHeaders: headers), logger: logger
        ) { inbound, _, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                if case .text(let text) = message, text.contains("\"changed\"") { messageContinuation.yield(ContinuousClock.now) }
            }
        }
    }
    var messageIterator = messages.makeAsyncIterator()
    try await Task.sleep(for: .milliseconds(500))
    var liveLatencies: [Double] = []
    var sendLatencies: [Double] = []
    var beforeAnswer = 0
    for round in 0..<liveRounds {
        let body = try batch(client: "live", first: Int64(round + 1), count: 1)
        let sent = ContinuousClock.now
        let (status, _) = try await post("/v1/push", body)
        let acknowledged = ContinuousClock.now
        guard status == 200, let received = await messageIterator.next() else { fatalError("live push failed") }
        if received < acknowledged { beforeAnswer += 1 }
        liveLatencies.append(max(0, milliseconds(received - acknowledged)))
        sendLatencies.append(milliseconds(received - sent))
    }
    socket.cancel()

    print(
        """
        | figure | value |
        |---|---|
        | push: \(clients) clients × \(batches) batches of \(batchSize) mutations | \(Int(rate)) mutations/s (\(pushed) in \(String(format: "%.2f", milliseconds(elapsed) / 1000)) s wall; \(String(format: "%.2f", pushCPU / 1000)) s CPU for the server and the clients' HTTP: \(Int(Double(pushed) / (pushCPU / 1000))) mutations per CPU-second; encoding the bodies beforehand took \(String(format: "%.2f", encodeCPU / 1000)) s CPU) |
        | push latency (batch of \(batchSize)) | p50 \(String(format: "%.1f", percentile(latencies, 0.5))) ms, p99 \(String(format: "%.1f", percentile(latencies, 0.99))) ms |
        | pull of \(pulled) records from a fresh cursor, server side (pages of 10,000) | \(String(format: "%.0f", milliseconds(serverPull))) ms wall, \(String(format: "%.0f", pullCPU)) ms CPU |
        | same pull over HTTP, client decoding included | \(String(format: "%.0f", milliseconds(httpPull))) ms (\(httpPulled) records) |
        | live notification after a push's answer (\(liveRounds) pushes) | p50 \(String(format: "%.2f", percentile(liveLatencies, 0.5))) ms, p99 \(String(format: "%.2f", percentile(liveLatencies, 0.99))) ms (\(beforeAnswer) of \(liveRounds) messages arrived before the answer: counted as 0) |
        | live notification after the push was sent | p50 \(String(format: "%.2f", percentile(sendLatencies, 0.5))) ms, p99 \(String(format: "%.2f", percentile(sendLatencies, 0.99))) ms |
        """)
    await group.triggerGracefulShutdown()
    _ = try? await serverTask.value
    try await server.close()
}

if let flag = CommandLine.arguments.firstIndex(of: "--delete-rules") {
    let items = CommandLine.arguments.dropFirst(flag + 1).first.flatMap { Int($0) } ?? 5_000
    do {
        try await deleteRuleBenchmark(items: items)
    } catch {
        FileHandle.standardError.write(Data("osd-server-benchmarks: \(error)\n".utf8))
        exit(1)
    }
} else if let flag = CommandLine.arguments.firstIndex(of: "--postgres"), CommandLine.arguments.count > flag + 1 {
    let url = CommandLine.arguments[flag + 1]
    let batches = CommandLine.arguments.dropFirst(flag + 2).first.flatMap { Int($0) } ?? 20
    do {
        try await postgresBenchmark(url: url, batches: batches)
    } catch {
        FileHandle.standardError.write(Data("osd-server-benchmarks: \(error)\n".utf8))
        exit(1)
    }
} else {
    try await benchmark()
}
