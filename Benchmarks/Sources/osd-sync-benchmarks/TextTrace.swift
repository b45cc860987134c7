import EditingTrace
import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync

/// A note whose body merges as a text.
@Model
final class BenchPaper {
    @Attribute(.unique) var paperID: String
    var body: String = ""

    init(paperID: String) {
        self.paperID = paperID
    }
}

/// Starts measuring this process's peak resident memory afresh (Linux: the kernel's high-water
/// mark is reset by writing 5 to `/proc/self/clear_refs`).
func resetPeakResident() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

/// This process's peak resident memory since the last reset, in MB (Linux `VmHWM`).
func peakResidentMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
    else { return 0 }
    return kilobytes / 1024
}

/// A real editing trace through sync: device A replays the trace as saves of the note's body
/// (one save every `every` edits, with the engine not running), then pushes them all (the
/// server applies each save's edit inside the push); device B, which typed a line at the start
/// of the note meanwhile, then syncs: it pushes its line and pulls A's edits, converging. Both
/// must end with B's line, whole, and the trace's final text around it. The baseline is the same saves of a
/// plain `String` written whole, pushed and pulled the same way.
func textTraceBenchmark(server url: URL, verifier: TokenVerifier, directory: URL, every: Int, edits limit: Int?) async throws {
    guard var trace = try EditingTrace.load() else {
        print("text trace: skipped, the editing trace is not at \(EditingTrace.folder.path) (set OSD_EDITING_TRACE)")
        return
    }
    if let limit { trace = trace.prefix(limit) }
    let clock = ContinuousClock()
    func device(_ name: String, user: String, merging: Bool) throws -> (ModelContainer, SyncEngine) {
        let container = try ModelContainer(
            for: BenchPaper.self, configurations: ModelConfiguration(url: directory.appendingPathComponent("\(name).sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(BenchPaper.self)
        if merging { configuration.merge(\BenchPaper.body, .text) }
        configuration.maxMutationsPerPush = 200
        let engine = try SyncEngine(container: container, server: url, user: user, configuration: configuration) {
            try await verifier.mint(user: user)
        }
        return (container, engine)
    }
    let line = "Notes from the second device.\n"
    func run(merging: Bool) async throws -> (saves: Double, push: Double, converge: Double, count: Int, agrees: Bool, memory: Double) {
        let user = merging ? "paper-text" : "paper-plain"
        let (writer, writerEngine) = try device("\(user)-a", user: user, merging: merging)
        let (reader, readerEngine) = try device("\(user)-b", user: user, merging: merging)
        let writerContext = ModelContext(writer)
        // Record ids are global: each run its own.
        writerContext.insert(BenchPaper(paperID: user))
        try writerContext.save()
        try await writerEngine.syncNow()
        try await readerEngine.syncNow()
        let readerContext = ModelContext(reader)
        guard let written = try writerContext.fetch(FetchDescriptor<BenchPaper>()).first,
            let typed = try readerContext.fetch(FetchDescriptor<BenchPaper>()).first
        else {
            print("text trace: the second device did not receive the note")
            return (0, 0, 0, 0, false, 0)
        }
        // B types its line, offline, before A's edits arrive.
        typed.body = line
        try readerContext.save()

        let memoryBefore = residentMB()
        resetPeakResident()
        var buffer: [UInt8] = []
        var count = 0
        let start = clock.now
        for (index, edit) in trace.edits.enumerated() {
            if edit.deleted > 0 { buffer.removeSubrange(edit.position..<edit.position + edit.deleted) }
            if !edit.text.isEmpty { buffer.insert(contentsOf: edit.text.utf8, at: edit.position) }
            if (index + 1) % every == 0 || index == trace.edits.count - 1 {
                written.body = String(decoding: buffer, as: UTF8.self)
                try writerContext.save()
                count += 1
            }
        }
        let saves = milliseconds(clock.now - start)
        let pushStart = clock.now
        try await writerEngine.syncNow()
        let push = milliseconds(clock.now - pushStart)
        let convergeStart = clock.now
        try await readerEngine.syncNow()
        let converge = milliseconds(clock.now - convergeStart)
        try await writerEngine.syncNow()
        let memory = peakResidentMB() - memoryBefore
        let shownA = try ModelContext(writer).fetch(FetchDescriptor<BenchPaper>()).first?.body
        let shownB = try ModelContext(reader).fetch(FetchDescriptor<BenchPaper>()).first?.body
        // Merged, both devices hold B's line whole and, around it, the whole paper (the line
        // and A's first characters were typed at one place concurrently: their order follows
        // the replicas' identities); written whole, the last writer's value (A's paper, pushed
        // before B's line).
        func agrees(_ shown: String?) -> Bool {
            guard var shown else { return false }
            if merging {
                guard let range = shown.range(of: line) else { return false }
                shown.removeSubrange(range)
            }
            return shown == trace.final
        }
        return (saves, push, converge, count, shownA == shownB && agrees(shownB), memory)
    }
    let text = try await run(merging: true)
    let plain = try await run(merging: false)
    print(
        String(
            format:
                "text trace: %d edits as %d saves (one every %d edits); saves %.0f ms (×%.2f), push and the server applying them %.0f ms (×%.2f), the second device converging %.0f ms (×%.2f); final text %@ on both devices; peak resident memory %.0f MB above the run's start (plain %.0f MB)",
            trace.edits.count, text.count, every, text.saves, text.saves / plain.saves, text.push, text.push / plain.push, text.converge,
            text.converge / plain.converge, text.agrees ? "equal to the trace's" : "DIFFERENT from the trace's", text.memory, plain.memory)
            + (plain.agrees ? "" : "; the plain baseline DISAGREES"))
}
