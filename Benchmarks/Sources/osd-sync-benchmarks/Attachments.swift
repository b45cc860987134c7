import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import Synchronization

// 8. Attachments: a `megabytes` MB `.externalStorage` value through sync, against `cp` of the same
// file in the same run. Measures the upload and the download (throughput, and the peak resident
// memory above what the process held before, sampled every 5 ms), then the time from a save with
// a 20 MB attachment on one started engine to its record (not its bytes) in a live query of
// another.

@Model
final class BenchAttachment {
    var title: String
    @Attribute(.externalStorage) var data: Data?

    init(title: String, data: Data?) {
        self.title = title
        self.data = data
    }
}

/// The highest resident memory seen while `body` runs, sampled every 5 ms.
final class PeakMemory: Sendable {
    private let peak = Mutex<Double>(0)

    func measure<T>(_ body: () async throws -> T) async throws -> (T, Double) {
        let sampler = Task {
            while !Task.isCancelled {
                let now = residentMB()
                peak.withLock { $0 = max($0, now) }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        let result = try await body()
        sampler.cancel()
        let now = residentMB()
        return (result, peak.withLock { max($0, now) })
    }
}

func attachmentBenchmark(server: URL, verifier: TokenVerifier, directory: URL, megabytes: Int) async throws {
    guard megabytes > 0 else { return }
    let clock = ContinuousClock()
    let size = megabytes * 1_048_576
    let source = directory.appendingPathComponent("attachment.bin")
    var bytes = Data(count: size)
    bytes.withUnsafeMutableBytes { buffer in
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for index in buffer.bindMemory(to: UInt64.self).indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            buffer.storeBytes(of: state, toByteOffset: index * 8, as: UInt64.self)
        }
    }
    try bytes.write(to: source)
    bytes = Data()

    // The baseline: the same bytes copied by `cp`.
    let copy = Process()
    copy.executableURL = URL(fileURLWithPath: "/bin/cp")
    copy.arguments = [source.path, directory.appendingPathComponent("attachment-copy.bin").path]
    let copyStart = clock.now
    try copy.run()
    copy.waitUntilExit()
    let copied = milliseconds(clock.now - copyStart)

    func device(_ name: String) throws -> (ModelContainer, SyncEngine) {
        let container = try ModelContainer(
            for: BenchAttachment.self, configurations: ModelConfiguration(url: directory.appendingPathComponent("\(name).sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(BenchAttachment.self)
        let engine = try SyncEngine(container: container, server: server, user: "frank", configuration: configuration) {
            try await verifier.mint(user: "frank")
        }
        return (container, engine)
    }
    let (a, aEngine) = try device("attach-a")
    let (b, bEngine) = try device("attach-b")
    let aContext = ModelContext(a)
    let saveStart = clock.now
    aContext.insert(BenchAttachment(title: "film", data: try Data(contentsOf: source, options: .alwaysMapped)))
    try aContext.save()
    let saved = milliseconds(clock.now - saveStart)
    try await aEngine.syncNow()

    let meter = PeakMemory()
    let uploadBefore = residentMB()
    let uploadStart = clock.now
    let (_, uploadPeak) = try await meter.measure { try await aEngine.transferAttachments() }
    let uploaded = milliseconds(clock.now - uploadStart)

    try await bEngine.syncNow()
    let downloadMeter = PeakMemory()
    let downloadBefore = residentMB()
    let downloadStart = clock.now
    let (_, downloadPeak) = try await downloadMeter.measure { try await bEngine.transferAttachments() }
    let downloaded = milliseconds(clock.now - downloadStart)
    let arrived = try ModelContext(b).fetch(FetchDescriptor<BenchAttachment>()).first?.data?.count ?? 0

    func rate(_ milliseconds: Double) -> Double { Double(megabytes) / (milliseconds / 1000) }
    print(String(format: "attachments: cp of %d MB %.0f ms (%.0f MB/s); save (hash, file) %.0f ms", megabytes, copied, rate(copied), saved))
    print(
        String(
            format: "attachments: upload %.0f ms (%.0f MB/s, ×%.2f of cp), peak memory +%.0f MB", uploaded, rate(uploaded), copied / uploaded,
            uploadPeak - uploadBefore))
    print(
        String(
            format: "attachments: download %.0f ms (%.0f MB/s, ×%.2f of cp), peak memory +%.0f MB, %@", downloaded, rate(downloaded),
            copied / downloaded, downloadPeak - downloadBefore, arrived == size ? "identical size" : "WRONG SIZE \(arrived)"))

    // A save with a 20 MB attachment until its record is in a live query on the other device.
    await aEngine.start()
    await bEngine.start()
    while await !(bEngine.status.isLiveConnected) { try await Task.sleep(for: .milliseconds(10)) }
    let bContext = ModelContext(b)
    var updates = bContext.liveResults(FetchDescriptor<BenchAttachment>()).makeAsyncIterator()
    _ = try await updates.next()
    let twenty = try Data(contentsOf: source, options: .alwaysMapped).prefix(20 * 1_048_576)
    let recordStart = clock.now
    aContext.insert(BenchAttachment(title: "clip", data: Data(twenty)))
    try aContext.save()
    while let results = try await updates.next() {
        if results.contains(where: { $0.title == "clip" }) { break }
    }
    let record = milliseconds(clock.now - recordStart)
    print(String(format: "attachments: save with a 20 MB attachment → its record in a live query on another device: %.0f ms", record))
    await aEngine.stop()
    await bEngine.stop()
}
