import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync

/// One record whose fields are edited the same way written whole and merged.
@Model
final class BenchTally {
    @Attribute(.unique) var tallyID: String
    var plainHits: Int = 0
    var hits: Int = 0
    var plainMembers: [String] = []
    var members: [String] = []

    init(tallyID: String) {
        self.tallyID = tallyID
    }
}

/// What merging costs against plain writes: the same `saves` saves of one record, made with
/// the engine not running (saves), then one sync that pushes them all (push), then one sync of
/// a second device that pulls them (pull). Four edits, each on its own field: an `Int` written
/// whole (`plainHits += 1`) and the same as a `.counter` (`hits += 1`); a `[String]` written
/// whole and the same as a `.set`, where each save adds an element and, past 20, removes the
/// oldest, so the value keeps its size.
func mergedFieldsBenchmark(server url: URL, verifier: TokenVerifier, directory: URL, saves: Int) async throws {
    let clock = ContinuousClock()
    func device(_ name: String) throws -> (ModelContainer, SyncEngine) {
        let container = try ModelContainer(
            for: BenchTally.self, configurations: ModelConfiguration(url: directory.appendingPathComponent("\(name).sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(BenchTally.self)
        configuration.merge(\BenchTally.hits, .counter)
        configuration.merge(\BenchTally.members, .set)
        configuration.maxMutationsPerPush = 100
        let engine = try SyncEngine(container: container, server: url, user: "tally", configuration: configuration) {
            try await verifier.mint(user: "tally")
        }
        return (container, engine)
    }
    let (writer, writerEngine) = try device("tally-writer")
    let (reader, readerEngine) = try device("tally-reader")
    let writerContext = ModelContext(writer)
    writerContext.insert(BenchTally(tallyID: "t"))
    try writerContext.save()
    try await writerEngine.syncNow()
    try await readerEngine.syncNow()

    func phase(_ edit: (BenchTally, Int) -> Void) async throws -> (save: Double, push: Double, pull: Double) {
        guard let tally = try writerContext.fetch(FetchDescriptor<BenchTally>()).first else { return (0, 0, 0) }
        let start = clock.now
        for index in 0..<saves {
            edit(tally, index)
            try writerContext.save()
        }
        let save = milliseconds(clock.now - start)
        let pushStart = clock.now
        try await writerEngine.syncNow()
        let push = milliseconds(clock.now - pushStart)
        let pullStart = clock.now
        try await readerEngine.syncNow()
        return (save, push, milliseconds(clock.now - pullStart))
    }
    // Every element a round adds is new (the plain array and the set add the same ones).
    func window(_ members: inout [String], _ index: Int, round: Int) {
        members.append("member \(round).\(index)")
        if members.count > 20 { members.removeFirst() }
    }
    // Each edit twice, interleaved, keeping the faster run: the ratios compare runs made
    // under the same load.
    var best: [String: (save: Double, push: Double, pull: Double)] = [:]
    for round in 0..<2 {
        for (name, edit) in [
            ("plain int", { (tally: BenchTally, _: Int) in tally.plainHits += 1 }),
            ("counter", { (tally: BenchTally, _: Int) in tally.hits += 1 }),
            ("plain array", { (tally: BenchTally, index: Int) in window(&tally.plainMembers, index, round: round) }),
            ("set", { (tally: BenchTally, index: Int) in window(&tally.members, index, round: round) }),
        ] {
            let run = try await phase(edit)
            let kept = best[name] ?? run
            best[name] = (min(kept.save, run.save), min(kept.push, run.push), min(kept.pull, run.pull))
        }
    }
    let shown = try ModelContext(reader).fetch(FetchDescriptor<BenchTally>()).first
    let agrees =
        shown?.hits == 2 * saves && shown?.plainHits == 2 * saves && shown?.members == shown?.plainMembers && shown?.members.count == 20
    func line(_ name: String, against baseline: String) -> String {
        guard let run = best[name], let base = best[baseline] else { return name }
        return String(
            format: "%@ %.0f ms (×%.2f) / %.0f ms (×%.2f) / %.0f ms (×%.2f)", name, run.save, run.save / base.save, run.push,
            run.push / base.push, run.pull, run.pull / base.pull)
    }
    print(
        "merged fields: \(saves) saves of one record, saves / push / pull on a second device (×: against the plain write): "
            + [
                line("plain int", against: "plain int"), line("counter", against: "plain int"), line("plain array", against: "plain array"),
                line("set", against: "plain array"),
            ].joined(separator: "; ") + "; the second device \(agrees ? "agrees" : "DISAGREES")")
}
