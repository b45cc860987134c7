import Foundation

/// The whole comparison: four timed operations and one memory probe, each on both sides.
enum BenchmarkSuite {
    static let recordCount = 100_000
    /// Every `changeStep`-th record is changed, or deleted: 10,000 of 100,000.
    static let changeStep = 10
    static let runsPerSide = 3
    static var contenders: [any Contender.Type] { [GRDBBaseline.self, OpenSwiftDataContender.self] }

    static func run() throws {
        let workbench = try Workbench()
        defer { workbench.removeAll() }
        let changed = recordCount / changeStep
        print("OpenSwiftData vs hand-written GRDB: \(grouped(recordCount)) records of 10 columns, median of \(runsPerSide) runs per side")
        print("Store files in \(workbench.directory.path) (a fresh file per run, removed afterwards)")
        print("Fetch times include reading every property and releasing what was fetched, on both sides.")
        print("Change and delete times cover the changes and the save only; the initial fetch of all records is not timed.")
        print("")

        // First, while this process is still small: see MemoryProbe.
        let (grdbMemory, osdMemory) = try probeMemory(in: workbench)

        let insert = try timeBoth("insert") { contender in
            let url = workbench.freshURL(for: contender)
            defer { workbench.remove(url) }
            return try contender.timeInsert(count: recordCount, at: url)
        }

        var checksums: [String: Checksum] = [:]
        let fetch = try timeBoth("fetch") { contender in
            let url = try workbench.populatedCopy(for: contender, count: recordCount)
            defer { workbench.remove(url) }
            let (elapsed, checksum) = try contender.timeFetch(at: url)
            if let previous = checksums[contender.key], previous != checksum {
                throw BenchmarkError("\(contender.key) read different data in two runs")
            }
            checksums[contender.key] = checksum
            return elapsed
        }
        let distinct = Set(checksums.values.map(\.description))
        guard distinct.count == 1, let checksum = distinct.first, checksum == grdbMemory.checksum else {
            throw BenchmarkError("the sides read different data: \(checksums), memory children \(grdbMemory.checksum)")
        }

        let update = try timeBoth("change") { contender in
            let url = try workbench.populatedCopy(for: contender, count: recordCount)
            defer { workbench.remove(url) }
            return try contender.timeUpdate(every: changeStep, at: url)
        }

        let delete = try timeBoth("delete") { contender in
            let url = try workbench.populatedCopy(for: contender, count: recordCount)
            defer { workbench.remove(url) }
            return try contender.timeDelete(every: changeStep, at: url)
        }

        print("")
        print("Checksum of the data read (same on both sides and in both memory children): \(checksum)")
        print("")
        let all = grouped(recordCount)
        let some = grouped(changed)
        printTable([
            ComparisonRow("insert \(all) models, one save", grdb: insert.grdb, openSwiftData: insert.osd),
            ComparisonRow("fetch \(all) and read every property", grdb: fetch.grdb, openSwiftData: fetch.osd),
            ComparisonRow("change \(some) and save (fetch not timed)", grdb: update.grdb, openSwiftData: update.osd),
            ComparisonRow("delete \(some) and save (fetch not timed)", grdb: delete.grdb, openSwiftData: delete.osd),
            ComparisonRow("peak RSS, fetch \(all) (child process)", grdbKB: grdbMemory.peakKB, openSwiftDataKB: osdMemory.peakKB),
        ])
        let growthRatio = Double(osdMemory.growthKB) / Double(max(grdbMemory.growthKB, 1))
        print(
            "Peak RSS growth in each child (peak minus peak at start): GRDB +\(grouped(grdbMemory.growthKB)) KB, "
                + "OpenSwiftData +\(grouped(osdMemory.growthKB)) KB (ratio \(String(format: "%.2f", growthRatio)))")
        print("")
        try runRelationships(in: workbench)
        print("")
        try runQueries(in: workbench)
    }

    /// The query table (also `osd-benchmarks --queries` on its own).
    static func runQueries(in workbench: Workbench) throws {
        print(
            "Queries, median of \(runsPerSide) runs (one store file of \(grouped(QueryBenchmark.itemCount)) items read by both sides; GRDB runs the same SQL written by hand):"
        )
        printTable(try QueryBenchmark.run(in: workbench.directory))
    }

    /// The relationship table (also `osd-benchmarks --relationships` on its own).
    static func runRelationships(in workbench: Workbench) throws {
        print(
            "Relationships, median of \(runsPerSide) runs (one store file read by both sides; GRDB reads parents and children with one hand-written LEFT JOIN):"
        )
        printTable(try RelationshipBenchmark.run(in: workbench.directory))
    }

    /// Prepares a store per side and measures the peak RSS of a child that fetches it.
    private static func probeMemory(in workbench: Workbench) throws -> (grdb: MemoryProbe.Report, osd: MemoryProbe.Report) {
        var reports: [String: MemoryProbe.Report] = [:]
        for contender in contenders {
            let url = workbench.freshURL(for: contender)
            defer { workbench.remove(url) }
            try MemoryProbe.prepareStore(for: contender, at: url, count: recordCount)
            let report = try MemoryProbe.measure(contender, storeAt: url)
            try expect(report.count, recordCount, "records read by the \(contender.key) memory child")
            reports[contender.key] = report
            print(
                "memory  \(contender.key): peak \(grouped(report.peakKB)) KB (\(grouped(report.baselineKB)) KB at start, +\(grouped(report.growthKB)) KB to open and fetch)"
            )
        }
        guard let grdb = reports[GRDBBaseline.key], let osd = reports[OpenSwiftDataContender.key] else {
            throw BenchmarkError("a memory child did not report")
        }
        guard grdb.checksum == osd.checksum else {
            throw BenchmarkError("the memory children read different data: \(grdb.checksum) and \(osd.checksum)")
        }
        return (grdb, osd)
    }

    /// Throws unless `actual` equals `expected`.
    private static func expect(_ actual: Int, _ expected: Int, _ what: String) throws {
        guard actual == expected else { throw BenchmarkError("expected \(expected) \(what), found \(actual)") }
    }

    /// Runs `body` `runsPerSide` times for each side, alternating sides, and returns the medians.
    /// Only the insert row (`osd-benchmarks --insert`), for quick comparisons of the save path.
    static func runInsert() throws {
        let workbench = try Workbench()
        defer { workbench.removeAll() }
        let insert = try timeBoth("insert") { contender in
            let url = workbench.freshURL(for: contender)
            defer { workbench.remove(url) }
            return try contender.timeInsert(count: recordCount, at: url)
        }
        print(
            "insert \(grouped(recordCount)) models, one save: GRDB \(insert.grdb.formatted), OSD \(insert.osd.formatted), ratio \(String(format: "%.2f", insert.osd / insert.grdb))"
        )
    }

    private static func timeBoth(_ label: String, _ body: (any Contender.Type) throws -> Duration) throws -> (grdb: Duration, osd: Duration) {
        var timings: [String: Timings] = [:]
        for run in 1...runsPerSide {
            for contender in contenders {
                let elapsed = try body(contender)
                timings[contender.key, default: Timings()].append(elapsed)
                print(
                    "\(label.padding(toLength: 7, withPad: " ", startingAt: 0)) run \(run)/\(runsPerSide)  \(contender.key.padding(toLength: 4, withPad: " ", startingAt: 0)) \(elapsed.formatted)"
                )
            }
        }
        return (timings[GRDBBaseline.key]?.median ?? .zero, timings[OpenSwiftDataContender.key]?.median ?? .zero)
    }
}
