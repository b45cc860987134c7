import Foundation
import GRDB
import OpenSwiftData

/// An item of the query benchmark, with the indexes its queries use.
@Model
final class QueryItem {
    var sku: Int
    var name: String
    var price: Double
    var createdAt: Date
    @Relationship(deleteRule: .cascade, inverse: \QueryTag.item)
    var tags: [QueryTag] = []

    #Index<QueryItem>([\.sku], [\.createdAt])

    init(sku: Int, name: String, price: Double, createdAt: Date) {
        self.sku = sku
        self.name = name
        self.price = price
        self.createdAt = createdAt
    }
}

/// A tag of a benchmark item (the to-many side of the `EXISTS` query).
@Model
final class QueryTag {
    var label: String
    var item: QueryItem?

    init(label: String) {
        self.label = label
    }
}

/// `#Predicate` fetches against the same queries hand-written in SQL through GRDB, on one store
/// file of 100,000 items (each with one tag): both sides decode every column of every result.
enum QueryBenchmark {
    static let itemCount = 100_000
    static let lookups = 2_000
    static let windows = 500
    static let scans = 5
    static let target = 1.5
    static let epoch = Date(timeIntervalSinceReferenceDate: 700_000_000)

    static func run(in directory: URL) throws -> [ComparisonRow] {
        let url = directory.appendingPathComponent("queries.sqlite")
        defer { Workbench.removeStore(url) }
        try populate(url)
        let container = try ModelContainer(for: QueryItem.self, configurations: ModelConfiguration(url: url))
        let pool = try DatabasePool(path: url.path)

        var rows: [ComparisonRow] = []
        for query in queries {
            var grdb = Timings()
            var osd = Timings()
            for run in 1...BenchmarkSuite.runsPerSide {
                let handWritten = try timed { try query.grdb(pool) }
                let translated = try timed { try query.osd(container) }
                guard handWritten.value == translated.value, handWritten.value > 0 else {
                    throw BenchmarkError("\(query.name): GRDB read \(handWritten.value) results, OpenSwiftData \(translated.value)")
                }
                grdb.append(handWritten.elapsed)
                osd.append(translated.elapsed)
                print(
                    "queries run \(run)/\(BenchmarkSuite.runsPerSide) \(query.name): GRDB \(handWritten.elapsed.formatted), OSD \(translated.elapsed.formatted) (\(handWritten.value) results)"
                )
            }
            rows.append(ComparisonRow(query.name, grdb: grdb.median, openSwiftData: osd.median, target: target))
        }
        return rows
    }

    /// One query on both sides; each returns the number of results read (summed over repeats).
    struct Query {
        let name: String
        let grdb: (DatabasePool) throws -> Int
        let osd: (ModelContainer) throws -> Int
    }

    static var queries: [Query] {
        [
            Query(
                name: "\(grouped(lookups)) lookups by an indexed column (`sku == k`)",
                grdb: { pool in
                    var found = 0
                    for number in 0..<lookups {
                        let key = (number * 37) % itemCount
                        found += try pool.read { db in
                            try Item.fetchAll(db, sql: "SELECT \(Item.columns) FROM QueryItem WHERE sku = ?", arguments: [key]).count
                        }
                    }
                    return found
                },
                osd: { container in
                    let context = ModelContext(container)
                    var found = 0
                    for number in 0..<lookups {
                        let key = (number * 37) % itemCount
                        found += try context.fetch(FetchDescriptor(predicate: #Predicate<QueryItem> { $0.sku == key })).count
                    }
                    return found
                }),
            Query(
                name: "\(grouped(windows)) × range + sort + limit 20 (`createdAt > d`, newest first)",
                grdb: { pool in
                    var found = 0
                    for number in 0..<windows {
                        let since = epoch.addingTimeInterval(Double((number * 97) % itemCount) * 60)
                        found += try pool.read { db in
                            try Item.fetchAll(
                                db, sql: "SELECT \(Item.columns) FROM QueryItem WHERE createdAt > ? ORDER BY createdAt DESC LIMIT 20",
                                arguments: [since.timeIntervalSinceReferenceDate]
                            ).count
                        }
                    }
                    return found
                },
                osd: { container in
                    let context = ModelContext(container)
                    var found = 0
                    for number in 0..<windows {
                        let since = epoch.addingTimeInterval(Double((number * 97) % itemCount) * 60)
                        var descriptor = FetchDescriptor(
                            predicate: #Predicate<QueryItem> { $0.createdAt > since }, sortBy: [SortDescriptor(\.createdAt, order: .reverse)])
                        descriptor.fetchLimit = 20
                        found += try context.fetch(descriptor).count
                    }
                    return found
                }),
            Query(
                name: "\(scans) × `name.contains(s)` over 100,000 names",
                grdb: { pool in
                    var found = 0
                    for number in 0..<scans {
                        let needle = "item 1\(number)"
                        found += try pool.read { db in
                            try Item.fetchAll(db, sql: "SELECT \(Item.columns) FROM QueryItem WHERE instr(name, ?) > 0", arguments: [needle]).count
                        }
                    }
                    return found
                },
                osd: { container in
                    var found = 0
                    for number in 0..<scans {
                        let needle = "item 1\(number)"
                        found += try ModelContext(container).fetch(FetchDescriptor(predicate: #Predicate<QueryItem> { $0.name.contains(needle) }))
                            .count
                    }
                    return found
                }),
            Query(
                name: "\(scans) × EXISTS over a to-many (`tags.contains { $0.label == l }`)",
                grdb: { pool in
                    var found = 0
                    for number in 0..<scans {
                        let label = "label \(number)"
                        found += try pool.read { db in
                            try Item.fetchAll(
                                db,
                                sql:
                                    "SELECT \(Item.columns) FROM QueryItem t WHERE EXISTS (SELECT 1 FROM QueryTag s WHERE s.item = t._pk AND s.label = ?)",
                                arguments: [label]
                            ).count
                        }
                    }
                    return found
                },
                osd: { container in
                    var found = 0
                    for number in 0..<scans {
                        let label = "label \(number)"
                        found += try ModelContext(container).fetch(
                            FetchDescriptor(predicate: #Predicate<QueryItem> { $0.tags.contains { $0.label == label } })
                        ).count
                    }
                    return found
                }),
        ]
    }

    /// GRDB's side: a plain struct decoded by hand from every column.
    struct Item: FetchableRecord {
        static let columns = "_pk, sku, name, price, createdAt"
        var id: Int64
        var sku: Int
        var name: String
        var price: Double
        var createdAt: Date

        init(row: Row) {
            id = row[0]
            sku = row[1]
            name = row[2]
            price = row[3]
            createdAt = Date(timeIntervalSinceReferenceDate: row[4])
        }
    }

    private static func populate(_ url: URL) throws {
        Workbench.removeStore(url)
        let container = try ModelContainer(for: QueryItem.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        for number in 0..<itemCount {
            let item = QueryItem(
                sku: number, name: "item \(number)", price: Double(number % 1000) / 10, createdAt: epoch.addingTimeInterval(Double(number) * 60))
            context.insert(item)
            // One in 500 items carries each of the labels the EXISTS query looks for.
            item.tags = [QueryTag(label: "label \(number % 500)")]
        }
        try context.save()
    }
}
