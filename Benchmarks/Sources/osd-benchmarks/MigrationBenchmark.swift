import Foundation
import GRDB
import OpenSwiftData

/// Version 1 of the migration benchmark's entity.
enum LedgerV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [Entry.self] }

    @Model final class Entry {
        var memo: String
        var amount: Double
        var note: String?

        init(memo: String, amount: Double) {
            self.memo = memo
            self.amount = amount
        }
    }
}

/// Version 2: a column added with a default, another renamed (both in place).
enum LedgerV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Entry.self] }

    @Model final class Entry {
        @Attribute(originalName: "memo") var label: String
        var amount: Double
        var note: String?
        var currency: String = "EUR"

        init(label: String, amount: Double) {
            self.label = label
            self.amount = amount
        }
    }
}

/// Version 2b: a column removed (the table is rebuilt, its rows copied in batches).
enum LedgerV2Rebuild: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Entry.self] }

    @Model final class Entry {
        @Attribute(originalName: "memo") var label: String
        var amount: Double
        var currency: String = "EUR"

        init(label: String, amount: Double) {
            self.label = label
            self.amount = amount
        }
    }
}

/// Migrating stores of 100,000 and 1,000,000 rows, in a child process each, for time and peak
/// memory: the peak must not grow with the row count.
enum MigrationBenchmark {
    static let childFlag = "--migration-child"

    static func run(in directory: URL) throws {
        print("| rows | migration | time | peak RSS of the migrating process | peak RSS opening without migration |")
        print("|---:|---|---:|---:|---:|")
        for rows in [100_000, 1_000_000] {
            for variant in ["in-place", "rebuild"] {
                let url = directory.appendingPathComponent("ledger-\(rows)-\(variant).sqlite")
                defer { remove(url) }
                try populate(url, rows: rows)
                let baseline = try child(url, variant: "none")
                let migrated = try child(url, variant: variant)
                guard migrated.count == rows else { throw BenchmarkError("the migration kept \(migrated.count) of \(rows) rows") }
                let what = variant == "in-place" ? "add a defaulted column, rename one" : "also remove one (table rebuilt)"
                print(
                    "| \(grouped(rows)) | \(what) | \(String(format: "%.1f ms", migrated.milliseconds)) | \(grouped(migrated.peakKB)) KB | \(grouped(baseline.peakKB)) KB |"
                )
            }
        }
    }

    /// A version-1 store of `rows` entries, written with plain SQL.
    private static func populate(_ url: URL, rows: Int) throws {
        remove(url)
        _ = try ModelContainer(for: Schema(versionedSchema: LedgerV1.self), configurations: [ModelConfiguration(url: url)])
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            let insert = try db.makeStatement(sql: "INSERT INTO \"Entry\" (memo, amount, note) VALUES (?, ?, ?)")
            for number in 0..<rows {
                try insert.execute(arguments: ["entry \(number)", Double(number % 10_000) / 100, number % 3 == 0 ? "checked" : nil])
            }
        }
        try queue.close()
    }

    private struct Report {
        let milliseconds: Double
        let peakKB: Int
        let count: Int
    }

    private static func child(_ url: URL, variant: String) throws -> Report {
        let text = try MemoryProbe.launchSelf([childFlag, url.path, variant])
        let fields = MemoryProbe.fields(of: text)
        guard let milliseconds = fields["ms"].flatMap(Double.init), let peak = fields["peak_kb"].flatMap({ Int($0) }),
            let count = fields["count"].flatMap({ Int($0) })
        else {
            throw BenchmarkError("migration child printed an unreadable report: \(text)")
        }
        return Report(milliseconds: milliseconds, peakKB: peak, count: count)
    }

    /// The child: opens the store (migrating it, for `in-place` and `rebuild`), prints a report.
    static func runChild(storeAt url: URL, variant: String) throws {
        let clock = ContinuousClock()
        var count = 0
        let configuration = ModelConfiguration(url: url)
        let elapsed = try clock.measure {
            switch variant {
            case "none":
                let container = try ModelContainer(for: Schema(versionedSchema: LedgerV1.self), configurations: [configuration])
                count = try ModelContext(container).fetchCount(FetchDescriptor<LedgerV1.Entry>())
            case "in-place":
                let container = try ModelContainer(for: Schema(versionedSchema: LedgerV2.self), configurations: [configuration])
                count = try ModelContext(container).fetchCount(FetchDescriptor<LedgerV2.Entry>())
            default:
                let container = try ModelContainer(for: Schema(versionedSchema: LedgerV2Rebuild.self), configurations: [configuration])
                count = try ModelContext(container).fetchCount(FetchDescriptor<LedgerV2Rebuild.Entry>())
            }
        }
        print("ms=\(elapsed.milliseconds) peak_kb=\(MemoryProbe.peakRSSKilobytes()) count=\(count)")
    }

    private static func remove(_ url: URL) {
        Workbench.removeStore(url)
        Workbench.removeStore(URL(fileURLWithPath: url.path + "-backup"))
    }
}
