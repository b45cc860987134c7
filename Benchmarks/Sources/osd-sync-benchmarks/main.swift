// Sync engine figures against an in-process osd-server on loopback (HTTP and WebSocket):
//   swift run -c release osd-sync-benchmarks [records] [saves] [rounds] [mergeSaves] [textEvery] [textEdits] [attachmentMB]
// 1. initial sync of `records` (default 100,000) server records into an empty store;
// 2. steady push of `saves` (default 10,000) local saves: throughput, and p50/p99 from a
//    save's commit to the server's acknowledgement;
// 3. propagation: a save on client A until the change is in a live query on client B, over the
//    live channel (`rounds`, default 200);
// 4. the engine's memory with 100,000 pending changes;
// 5. back online: `saves` saves made offline, then one `syncNow()` (push, pull, settle);
// 6. merged fields: `mergeSaves` (default 2,000) saves of one record as plain writes, as a
//    `.counter` and as a `.set` (see MergedFields.swift);
// 7. a real editing trace through sync: its first `textEdits` edits (default all 259,778) as
//    saves of a `.text`, one every `textEvery` edits (default 20), pushed, and merged on a
//    second device that edited concurrently (see TextTrace.swift);
// 8. attachments: a `attachmentMB` MB (default 100) `.externalStorage` value uploaded and
//    downloaded against `cp`, with peak memory, and a save with a 20 MB attachment until its
//    record shows on another device (see Attachments.swift).
import Foundation
import Logging
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import ServiceLifecycle

@Model
final class BenchNote {
    var title: String
    var body: String
    var rank: Int
    init(title: String, body: String, rank: Int) {
        self.title = title
        self.body = body
        self.rank = rank
    }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

/// Resident memory of this process, in MB (Linux).
func residentMB() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
    return pages * 4096 / 1_048_576
}

/// Counts acknowledged mutation ids as `pushed` events arrive.
actor AckClock {
    var acknowledged: MutationID = 0
    var times: [MutationID: ContinuousClock.Instant] = [:]

    func pushed(through last: MutationID, at instant: ContinuousClock.Instant) {
        guard last > acknowledged else { return }
        for id in (acknowledged + 1)...last { times[id] = instant }
        acknowledged = last
    }
}

func benchmark() async throws {
    let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
    let records = arguments.first ?? 100_000
    let saves = arguments.dropFirst().first ?? 10_000
    let rounds = arguments.dropFirst(2).first ?? 200
    let mergeSaves = arguments.dropFirst(3).first ?? 2_000
    let textEvery = arguments.dropFirst(4).first ?? 20
    let textEdits = arguments.dropFirst(5).first
    let attachmentMB = arguments.dropFirst(6).first ?? 100
    let clock = ContinuousClock()

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-sync-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    var logger = Logger(label: "osd-sync-bench")
    logger.logLevel = .error
    let serverConfiguration = SyncServerConfiguration(
        hostname: "127.0.0.1", port: 0, auth: AuthConfiguration(hmacSecret: "benchmark-secret-of-at-least-32-bytes"), maxBodySize: 64 << 20)
    let server = try await SyncServer(
        configuration: serverConfiguration, storage: try SQLiteSyncStorage(path: directory.appendingPathComponent("server.sqlite").path))
    let (ports, portContinuation) = AsyncStream<Int>.makeStream()
    let app = server.makeApplication(logger: logger) { portContinuation.yield($0) }
    let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
    let serverTask = Task { try await group.run() }
    var portIterator = ports.makeAsyncIterator()
    guard let port = await portIterator.next(), let url = URL(string: "http://127.0.0.1:\(port)") else {
        print("the server did not start")
        return
    }
    let verifier = server.verifier

    func device(_ name: String, user: String = "alice", batch: Int = 100) throws -> (ModelContainer, SyncEngine) {
        let container = try ModelContainer(
            for: BenchNote.self, configurations: ModelConfiguration(url: directory.appendingPathComponent("\(name).sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(BenchNote.self)
        configuration.maxMutationsPerPush = batch
        configuration.pullPageSize = 5000
        let engine = try SyncEngine(container: container, server: url, user: user, configuration: configuration) {
            try await verifier.mint(user: user)
        }
        return (container, engine)
    }

    // 1. Initial sync: the server holds `records` records of another user's device.
    let seedUser = "seed"
    var id: MutationID = 1
    for start in stride(from: 0, to: records, by: 1000) {
        let changes = (start..<min(records, start + 1000)).map { index in
            RecordChange(
                op: .insert, entity: "BenchNote", recordID: "r\(index)", scope: .user(seedUser),
                fields: ["title": .string("note \(index)"), "body": .string(String(repeating: "x", count: 64)), "rank": .int(Int64(index))])
        }
        _ = try await server.service.push(
            user: seedUser,
            request: PushRequest(
                clientID: "seeder", mutations: [Mutation(id: id, stamp: HLCTimestamp(milliseconds: 1_800_000_000_000, counter: 0), changes: changes)])
        )
        id += 1
    }
    let (fresh, freshEngine) = try device("fresh", user: seedUser)
    let initialStart = clock.now
    try await freshEngine.syncNow()
    let initial = clock.now - initialStart
    let received = try ModelContext(fresh).fetchCount(FetchDescriptor<BenchNote>())
    print(
        String(
            format: "initial sync: %d records in %.0f ms (%.0f records/s)", received, milliseconds(initial),
            Double(received) / (milliseconds(initial) / 1000)))

    // 2. Steady push: one save at a time, the engine running.
    let (pusher, pushEngine) = try device("pusher")
    let acks = AckClock()
    let events = pushEngine.events
    let listener = Task {
        for await event in events {
            if case let .pushed(_, last) = event { await acks.pushed(through: last, at: clock.now) }
        }
    }
    await pushEngine.start()
    let context = ModelContext(pusher)
    var saved: [ContinuousClock.Instant] = []
    saved.reserveCapacity(saves)
    let pushStart = clock.now
    for index in 0..<saves {
        context.insert(BenchNote(title: "push \(index)", body: "", rank: index))
        try context.save()
        saved.append(clock.now)
        if index % 50 == 0 { await Task.yield() }
    }
    while await acks.acknowledged < MutationID(saves) { try await Task.sleep(for: .milliseconds(5)) }
    let pushTotal = clock.now - pushStart
    let times = await acks.times
    let latencies = saved.enumerated().compactMap { index, instant in times[MutationID(index + 1)].map { milliseconds($0 - instant) } }
    print(
        String(
            format: "steady push: %d saves in %.0f ms (%.0f saves/s); save → acknowledged p50 %.1f ms, p99 %.1f ms", saves, milliseconds(pushTotal),
            Double(saves) / (milliseconds(pushTotal) / 1000), percentile(latencies, 0.5), percentile(latencies, 0.99)))
    await pushEngine.stop()
    listener.cancel()

    // 3. Propagation A → B through the live channel, seen by a live query on B.
    let (a, aEngine) = try device("a", user: "carol")
    let (b, bEngine) = try device("b", user: "carol")
    await aEngine.start()
    await bEngine.start()
    while await !(bEngine.status.isLiveConnected) { try await Task.sleep(for: .milliseconds(10)) }
    let bContext = ModelContext(b)
    var updates = bContext.liveResults(FetchDescriptor<BenchNote>()).makeAsyncIterator()
    _ = try await updates.next()
    let aContext = ModelContext(a)
    var propagation: [Double] = []
    for round in 0..<rounds {
        let start = clock.now
        aContext.insert(BenchNote(title: "live \(round)", body: "", rank: round))
        try aContext.save()
        while let results = try await updates.next() {
            if results.count > round { break }
        }
        propagation.append(milliseconds(clock.now - start))
    }
    print(
        String(
            format: "propagation A save → B live query: %d rounds, p50 %.1f ms, p99 %.1f ms", rounds, percentile(propagation, 0.5),
            percentile(propagation, 0.99)))
    await aEngine.stop()
    await bEngine.stop()

    // 4. Memory with 100,000 pending changes (offline: nothing is pushed).
    let before = residentMB()
    let offlineContainer = try ModelContainer(
        for: BenchNote.self, configurations: ModelConfiguration(url: directory.appendingPathComponent("offline.sqlite")))
    var offlineConfiguration = SyncConfiguration()
    offlineConfiguration.sync(BenchNote.self)
    let offlineEngine = try SyncEngine(
        container: offlineContainer, server: URL(string: "http://127.0.0.1:1") ?? url, user: "dave", configuration: offlineConfiguration
    ) { "none" }
    let offlineContext = ModelContext(offlineContainer)
    for start in stride(from: 0, to: 100_000, by: 1000) {
        for index in start..<(start + 1000) {
            offlineContext.insert(BenchNote(title: "offline \(index)", body: "", rank: index))
            try offlineContext.save()
        }
    }
    let pending = try await offlineEngine.pendingChangeCount()
    try? await offlineEngine.syncNow()
    print(String(format: "memory: %d pending changes, resident %.0f MB → %.0f MB after a failed sync", pending, before, residentMB()))

    // 5. Back online: `saves` saves queued while the engine was not running, then one sync.
    let (returning, returningEngine) = try device("returning", user: "erin")
    let returningContext = ModelContext(returning)
    for index in 0..<saves {
        returningContext.insert(BenchNote(title: "queued \(index)", body: "", rank: index))
        try returningContext.save()
    }
    let queued = try await returningEngine.pendingChangeCount()
    let onlineStart = clock.now
    try await returningEngine.syncNow()
    let online = clock.now - onlineStart
    let left = try await returningEngine.pendingChangeCount()
    print(
        String(
            format: "back online: %d queued saves pushed and settled by one sync in %.0f ms (%.0f saves/s), %d left pending", queued,
            milliseconds(online), Double(queued) / (milliseconds(online) / 1000), left))

    // 6. Fields that merge against plain writes.
    try await mergedFieldsBenchmark(server: url, verifier: verifier, directory: directory, saves: mergeSaves)

    // 7. A real editing trace through sync.
    try await textTraceBenchmark(server: url, verifier: verifier, directory: directory, every: textEvery, edits: textEdits)

    // 8. Attachments.
    try await attachmentBenchmark(server: url, verifier: verifier, directory: directory, megabytes: attachmentMB)

    await group.triggerGracefulShutdown()
    _ = await serverTask.result
    try await server.close()
}

try await benchmark()
