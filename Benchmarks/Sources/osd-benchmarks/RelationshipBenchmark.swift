import Foundation
import GRDB
import Observation
import OpenSwiftData

/// A parent of the relationship benchmark: owns its children (cascade).
@Model
final class BenchParent {
    var name: String
    var rank: Int
    @Relationship(deleteRule: .cascade, inverse: \BenchChild.parent)
    var children: [BenchChild] = []

    init(name: String, rank: Int) {
        self.name = name
        self.rank = rank
    }
}

/// A child of the relationship benchmark.
@Model
final class BenchChild {
    var title: String
    var amount: Double
    var parent: BenchParent?

    init(title: String, amount: Double) {
        self.title = title
        self.amount = amount
    }
}

/// Relationship operations, OpenSwiftData against hand-written GRDB on the same store file:
/// reading a to-many relationship of every parent (lazily, and with prefetching) against one
/// hand-written `LEFT JOIN`, and a cascading delete against hand-written deletes.
///
/// Every model holds its own `ObservationRegistrar` (SwiftData's models are observable, and
/// Observation offers no way to register a read without one). One more row shows what that
/// costs on its own: Observation's registrars alone (one per model the prefetched read makes,
/// created and freed, no SQL) against the same JOIN.
enum RelationshipBenchmark {
    static let parentCount = 10_000
    static let childrenPerParent = 5
    static let cascadeParents = 1_000
    static let cascadeChildren = 10

    static func run(in directory: URL) throws -> [ComparisonRow] {
        let readStore = directory.appendingPathComponent("relationships-read.sqlite")
        let deleteTemplate = directory.appendingPathComponent("relationships-delete.sqlite")
        defer {
            for url in [readStore, deleteTemplate] { Workbench.removeStore(url) }
        }
        try populate(readStore, parents: parentCount, children: childrenPerParent)
        try populate(deleteTemplate, parents: cascadeParents, children: cascadeChildren)

        var lazy = (grdb: Timings(), osd: Timings())
        var prefetched = (grdb: Timings(), osd: Timings())
        var registrars = (grdb: Timings(), osd: Timings())
        var cascade = (grdb: Timings(), osd: Timings())
        let expected = parentCount * childrenPerParent
        for run in 1...BenchmarkSuite.runsPerSide {
            let join = try timed { try joinedChildCount(readStore) }
            let osdLazy = try timed { try childCount(readStore, prefetch: false) }
            let osdPrefetch = try timed { try childCount(readStore, prefetch: true) }
            let registrarsOnly = try timed { registrarCycle(parentCount + expected) }
            guard registrarsOnly.value == parentCount + expected else { throw BenchmarkError("made \(registrarsOnly.value) registrars") }
            for (label, result) in [("GRDB join", join), ("OSD lazy", osdLazy), ("OSD prefetch", osdPrefetch)] where result.value != expected {
                throw BenchmarkError("\(label) read \(result.value) children, expected \(expected)")
            }
            lazy.grdb.append(join.elapsed)
            lazy.osd.append(osdLazy.elapsed)
            prefetched.grdb.append(join.elapsed)
            prefetched.osd.append(osdPrefetch.elapsed)
            registrars.grdb.append(join.elapsed)
            registrars.osd.append(registrarsOnly.elapsed)

            let grdbDelete = try timeDelete(copyOf: deleteTemplate, in: directory, handWritten: true)
            let osdDelete = try timeDelete(copyOf: deleteTemplate, in: directory, handWritten: false)
            cascade.grdb.append(grdbDelete)
            cascade.osd.append(osdDelete)
            print(
                "relationships run \(run)/\(BenchmarkSuite.runsPerSide): join \(join.elapsed.formatted), lazy \(osdLazy.elapsed.formatted), prefetch \(osdPrefetch.elapsed.formatted), registrars alone \(registrarsOnly.elapsed.formatted), cascade GRDB \(grdbDelete.formatted) OSD \(osdDelete.formatted)"
            )
        }
        let parents = grouped(parentCount)
        return [
            ComparisonRow(
                "fetch \(parents) parents, read their children, lazily (vs one JOIN)", grdb: lazy.grdb.median, openSwiftData: lazy.osd.median,
                judged: false),
            ComparisonRow(
                "fetch \(parents) parents, read their children, prefetched (vs one JOIN)", grdb: prefetched.grdb.median,
                openSwiftData: prefetched.osd.median),
            ComparisonRow(
                "Observation alone: \(grouped(parentCount + expected)) ObservationRegistrar made and freed, no SQL (vs one JOIN)",
                grdb: registrars.grdb.median, openSwiftData: registrars.osd.median, judged: false),
            ComparisonRow(
                "cascade-delete \(grouped(cascadeParents)) parents with \(cascadeChildren) children each", grdb: cascade.grdb.median,
                openSwiftData: cascade.osd.median, judged: false),
        ]
    }

    static func container(_ url: URL) throws -> ModelContainer {
        try ModelContainer(for: BenchParent.self, configurations: ModelConfiguration(url: url))
    }

    /// Makes and frees `count` observation registrars, as many as the models of the prefetched
    /// read hold, and returns how many were made.
    private static func registrarCycle(_ count: Int) -> Int {
        var registrars: [ObservationRegistrar] = []
        registrars.reserveCapacity(count)
        for _ in 0..<count { registrars.append(ObservationRegistrar()) }
        let made = registrars.count
        registrars = []
        return made
    }

    static func populate(_ url: URL, parents: Int, children: Int) throws {
        Workbench.removeStore(url)
        let context = ModelContext(try container(url))
        for number in 0..<parents {
            let parent = BenchParent(name: "parent \(number)", rank: number)
            context.insert(parent)
            parent.children = (0..<children).map { BenchChild(title: "child \(number).\($0)", amount: Double($0) * 1.5) }
        }
        try context.save()
    }

    /// OpenSwiftData: fetch every parent, read each one's children and every child's title.
    private static func childCount(_ url: URL, prefetch: Bool) throws -> Int {
        let context = ModelContext(try container(url))
        var descriptor = FetchDescriptor<BenchParent>()
        if prefetch { descriptor.relationshipKeyPathsForPrefetching = [\.children] }
        var count = 0
        var length = 0
        // The context lives while its models are read (a context that goes unloads their
        // relationships, and the optimizer may end its lifetime right after its last use).
        try withExtendedLifetime(context) {
            for parent in try context.fetch(descriptor) {
                for child in parent.children {
                    count += 1
                    length &+= child.title.utf8.count
                }
            }
        }
        return length > 0 ? count : -1
    }

    private struct Parent {
        var id: Int64
        var name: String
        var rank: Int
        var children: [Child]
    }

    private struct Child {
        var title: String
        var amount: Double
    }

    /// Hand-written GRDB: one LEFT JOIN, rows decoded by hand into parents holding children.
    static func joinedChildCount(_ url: URL) throws -> Int {
        let pool = try DatabasePool(path: url.path)
        let parents = try pool.read { db -> [Parent] in
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT p._pk, p.name, p.rank, c.title, c.amount FROM BenchParent p
                    LEFT JOIN BenchChild c ON c.parent = p._pk ORDER BY p._pk
                    """)
            var parents: [Parent] = []
            while let row = try rows.next() {
                let id: Int64 = row[0]
                if parents.last?.id != id { parents.append(Parent(id: id, name: row[1], rank: row[2], children: [])) }
                if let title: String = row[3] { parents[parents.count - 1].children.append(Child(title: title, amount: row[4])) }
            }
            return parents
        }
        var count = 0
        var length = 0
        for parent in parents {
            for child in parent.children {
                count += 1
                length &+= child.title.utf8.count
            }
        }
        return length > 0 ? count : -1
    }

    /// Deletes every parent of a copy of the template; only the deletion and its save are timed.
    private static func timeDelete(copyOf template: URL, in directory: URL, handWritten: Bool) throws -> Duration {
        let url = directory.appendingPathComponent("relationships-delete-run.sqlite")
        Workbench.removeStore(url)
        defer { Workbench.removeStore(url) }
        // The template's rows may still sit in its write-ahead log: copy both files.
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: template.path + suffix) {
            try FileManager.default.copyItem(atPath: template.path + suffix, toPath: url.path + suffix)
        }
        let clock = ContinuousClock()
        if handWritten {
            let pool = try DatabasePool(path: url.path)
            let keys = try pool.read { db in try Int64.fetchAll(db, sql: "SELECT _pk FROM BenchParent") }
            let elapsed = try clock.measure {
                try pool.write { db in
                    let children = try db.makeStatement(sql: "DELETE FROM BenchChild WHERE parent = ?")
                    let parent = try db.makeStatement(sql: "DELETE FROM BenchParent WHERE _pk = ?")
                    for key in keys {
                        try children.execute(arguments: [key])
                        try parent.execute(arguments: [key])
                    }
                }
            }
            let left = try pool.read { db in
                try Int.fetchOne(db, sql: "SELECT (SELECT COUNT(*) FROM BenchParent) + (SELECT COUNT(*) FROM BenchChild)")
            }
            guard left == 0 else { throw BenchmarkError("hand-written cascade left \(left ?? -1) rows") }
            return elapsed
        }
        let container = try container(url)
        let context = ModelContext(container)
        let parents = try context.fetch(FetchDescriptor<BenchParent>())
        let elapsed = try clock.measure {
            for parent in parents { context.delete(parent) }
            try context.save()
        }
        let left =
            try ModelContext(container).fetchCount(FetchDescriptor<BenchParent>()) + ModelContext(container).fetchCount(FetchDescriptor<BenchChild>())
        guard left == 0 else { throw BenchmarkError("OpenSwiftData cascade left \(left) rows") }
        return elapsed
    }
}
