import Foundation
import OpenSwiftData
import Synchronization

/// A row written by one writer actor of the concurrency benchmark.
@Model
final class Entry {
    var writer: Int
    var sequence: Int
    var payload: String
    var startedAt: Date

    init(writer: Int, sequence: Int, payload: String, startedAt: Date) {
        self.writer = writer
        self.sequence = sequence
        self.payload = payload
        self.startedAt = startedAt
    }
}

/// Inserts a few entries per save until the deadline, timing each save.
@ModelActor
actor EntryWriter {
    func run(writer: Int, rowsPerSave: Int, until deadline: ContinuousClock.Instant) throws -> (saves: [Duration], rows: Int) {
        modelContext.author = "writer-\(writer)"
        let clock = ContinuousClock()
        var latencies: [Duration] = []
        var sequence = 0
        while clock.now < deadline {
            let started = Date()
            for _ in 0..<rowsPerSave {
                modelContext.insert(Entry(writer: writer, sequence: sequence, payload: "entry \(writer)-\(sequence)", startedAt: started))
                sequence += 1
            }
            latencies.append(try clock.measure { try modelContext.save() })
        }
        return (latencies, sequence)
    }
}

/// Reads the newest entries and the count until the deadline.
@ModelActor
actor EntryReader {
    func run(until deadline: ContinuousClock.Instant) throws -> Int {
        let clock = ContinuousClock()
        var reads = 0
        var newest = FetchDescriptor<Entry>(sortBy: [SortDescriptor(\.startedAt, order: .reverse)])
        newest.fetchLimit = 20
        while clock.now < deadline {
            _ = try modelContext.fetch(newest)
            _ = try modelContext.fetchCount(FetchDescriptor<Entry>())
            reads += 1
        }
        return reads
    }
}

/// Writes one entry at a time, paced, for the live-query latency probe.
@ModelActor
actor PacedWriter {
    func run(count: Int, pause: Duration) async throws {
        for sequence in 0..<count {
            modelContext.insert(Entry(writer: 99, sequence: sequence, payload: "paced", startedAt: Date()))
            try modelContext.save()
            try await Task.sleep(for: pause)
        }
    }
}

/// `osd-benchmarks --concurrency [seconds]`: four writer actors and four reader actors on one
/// file store, then a live query's latency from the start of a save to its new value.
enum ConcurrencyBenchmark {
    static func run(seconds: Int, in directory: URL) async throws {
        let url = directory.appendingPathComponent("concurrency.store")
        let container = try ModelContainer(for: Entry.self, configurations: ModelConfiguration(url: url))
        let writers = 4, readers = 4, rowsPerSave = 10
        print("Concurrency: \(writers) writer actors (\(rowsPerSave) rows per save) and \(readers) reader actors on one WAL store for \(seconds) s")
        let deadline = ContinuousClock.now + .seconds(seconds)
        let started = ContinuousClock.now
        let (latencies, written, reads) = try await withThrowingTaskGroup(of: ([Duration], Int, Int).self) { group in
            for number in 0..<writers {
                let writer = EntryWriter(modelContainer: container)
                group.addTask {
                    let (saves, rows) = try await writer.run(writer: number, rowsPerSave: rowsPerSave, until: deadline)
                    return (saves, rows, 0)
                }
            }
            for _ in 0..<readers {
                let reader = EntryReader(modelContainer: container)
                group.addTask { ([], 0, try await reader.run(until: deadline)) }
            }
            var latencies: [Duration] = [], written = 0, reads = 0
            for try await (saves, rows, readCount) in group {
                latencies += saves
                written += rows
                reads += readCount
            }
            return (latencies, written, reads)
        }
        let elapsed = ContinuousClock.now - started
        let seconds = elapsed.milliseconds / 1_000

        // No lost or duplicated rows, and one history transaction per save.
        let check = ModelContext(container)
        let rows = try check.fetch(FetchDescriptor<Entry>())
        let distinct = Set(rows.map { "\($0.writer)-\($0.sequence)" }).count
        let transactions = try check.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        let inserts = transactions.reduce(0) { $0 + $1.changes.count }
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Duration { sorted.isEmpty ? .zero : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        print(
            String(
                format: "saves: %d in %.1f s = %.0f saves/s (%.0f rows/s); save latency p50 %@, p99 %@", latencies.count, seconds,
                Double(latencies.count) / seconds, Double(written) / seconds, percentile(0.5).formatted, percentile(0.99).formatted))
        print(String(format: "reads: %d (newest 20 + count) = %.0f reads/s", reads, Double(reads) / seconds))
        let intact = rows.count == written && distinct == written && transactions.count == latencies.count && inserts == written
        print(
            "check: \(written) rows written, \(rows.count) stored, \(distinct) distinct, \(transactions.count) history transactions for \(latencies.count) saves, \(inserts) recorded inserts: \(intact ? "PASS" : "FAIL")"
        )
        if !intact { throw BenchmarkError("rows or history entries were lost or duplicated") }

        try await measureLiveQuery(container: container)
    }

    /// From the start of a save in another actor to the new value of a live query on the main
    /// actor.
    @MainActor
    private static func measureLiveQuery(container: ModelContainer) async throws {
        let context = ModelContext(container)
        var newest = FetchDescriptor<Entry>(predicate: #Predicate { $0.writer == 99 }, sortBy: [SortDescriptor(\.sequence, order: .reverse)])
        newest.fetchLimit = 1
        var results = context.liveResults(newest).makeAsyncIterator()
        _ = try await results.next(isolation: MainActor.shared)
        let count = 200
        let writer = PacedWriter(modelContainer: container)
        let task = Task { try await writer.run(count: count, pause: .milliseconds(5)) }
        var latencies: [Double] = []
        while latencies.count < count, let value = try await results.next(isolation: MainActor.shared) {
            guard let entry = value.first else { continue }
            latencies.append(Date().timeIntervalSince(entry.startedAt) * 1_000)
            if entry.sequence == count - 1 { break }
        }
        try await task.value
        let sorted = latencies.sorted()
        guard !sorted.isEmpty else { throw BenchmarkError("the live query yielded nothing") }
        let p50 = sorted[sorted.count / 2], p99 = sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
        print(
            String(
                format: "live query: %d new values for %d saves; latency from save start to new value p50 %.2f ms, p99 %.2f ms", latencies.count,
                count, p50, p99))
    }
}
