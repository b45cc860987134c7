import Foundation

/// `osd-benchmarks`: compares OpenSwiftData with hand-written GRDB code and prints a table.
///
/// `osd-benchmarks --memory-child osd|grdb <store path>` is the child process that the memory
/// probe launches, and `--prepare-store osd|grdb <store path> <count>` the one that populates its
/// stores; neither is meant to be run by hand. `osd-benchmarks --relationships` runs only the
/// relationship table (`--prefetch-phases <store>` its prefetch row's phases), `osd-benchmarks
/// --queries` only the query table, `osd-benchmarks --insert` only the insert row,
/// `osd-benchmarks --concurrency [seconds]` writer and reader actors on one store and a live
/// query's latency, `osd-benchmarks --migration` the migration figures (not part of the full
/// run: it writes 2.2 million rows), `osd-benchmarks --sync-capture` and `--sync-apply` the cost
/// of sync capture and of applying remote changes (``SyncCaptureBenchmark``).
let arguments = CommandLine.arguments
do {
    if arguments.count == 4, arguments[1] == MemoryProbe.childFlag {
        try MemoryProbe.runChild(try contender(named: arguments[2]), storeAt: URL(fileURLWithPath: arguments[3]))
    } else if arguments.count == 5, arguments[1] == MemoryProbe.prepareFlag, let count = Int(arguments[4]) {
        try contender(named: arguments[2]).populate(at: URL(fileURLWithPath: arguments[3]), count: count)
    } else if arguments.count == 4, arguments[1] == PhaseProbe.flag {
        try PhaseProbe.run(osdStore: URL(fileURLWithPath: arguments[2]), grdbStore: URL(fileURLWithPath: arguments[3]))
    } else if arguments.count == 3, arguments[1] == PrefetchProbe.flag {
        try PrefetchProbe.run(store: URL(fileURLWithPath: arguments[2]))
    } else if arguments.count == 2, arguments[1] == "--relationships" {
        let workbench = try Workbench()
        defer { workbench.removeAll() }
        try BenchmarkSuite.runRelationships(in: workbench)
    } else if arguments.count == 4, arguments[1] == MigrationBenchmark.childFlag {
        try MigrationBenchmark.runChild(storeAt: URL(fileURLWithPath: arguments[2]), variant: arguments[3])
    } else if arguments.count == 2, arguments[1] == "--migration" {
        let workbench = try Workbench()
        defer { workbench.removeAll() }
        try MigrationBenchmark.run(in: workbench.directory)
    } else if arguments.count >= 2, arguments.count <= 3, arguments[1] == "--concurrency" {
        let workbench = try Workbench()
        defer { workbench.removeAll() }
        try await ConcurrencyBenchmark.run(seconds: arguments.count == 3 ? Int(arguments[2]) ?? 10 : 10, in: workbench.directory)
    } else if arguments.count == 2, arguments[1] == "--insert" {
        try BenchmarkSuite.runInsert()
    } else if arguments.count == 2, arguments[1] == "--sync-capture" {
        let workbench = try Workbench()
        defer { workbench.removeAll() }
        try SyncCaptureBenchmark.runCapture(in: workbench)
    } else if arguments.count == 2, arguments[1] == "--sync-apply" {
        let workbench = try Workbench()
        defer { workbench.removeAll() }
        try SyncCaptureBenchmark.runApply(in: workbench)
    } else if arguments.count == 2, arguments[1] == "--queries" {
        let workbench = try Workbench()
        defer { workbench.removeAll() }
        try BenchmarkSuite.runQueries(in: workbench)
    } else {
        try BenchmarkSuite.run()
    }
} catch {
    FileHandle.standardError.write(Data("osd-benchmarks: \(error)\n".utf8))
    exit(1)
}

/// The side whose ``Contender/key`` is `key`.
func contender(named key: String) throws -> any Contender.Type {
    guard let contender = BenchmarkSuite.contenders.first(where: { $0.key == key }) else {
        throw BenchmarkError("unknown side \(key); expected osd or grdb")
    }
    return contender
}
