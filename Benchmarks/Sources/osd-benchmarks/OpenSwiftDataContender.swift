import Foundation
import OpenSwiftData

/// OpenSwiftData through its public, SwiftData-shaped API: a file-backed `ModelContainer`, a
/// `ModelContext`, `insert`, `fetch`, `delete` and `save`.
enum OpenSwiftDataContender: Contender {
    static let key = "osd"

    static func populate(at url: URL, count: Int) throws {
        let container = try openContainer(at: url)
        try insert(count: count, into: ModelContext(container))
    }

    static func timeInsert(count: Int, at url: URL) throws -> Duration {
        let container = try openContainer(at: url)
        let context = ModelContext(container)
        let elapsed = try ContinuousClock().measure {
            try insert(count: count, into: context)
        }
        try expect(try ModelContext(container).fetchCount(FetchDescriptor<BenchItem>()), count, "models after insert")
        return elapsed
    }

    static func timeFetch(at url: URL) throws -> (elapsed: Duration, checksum: Checksum) {
        let container = try openContainer(at: url)
        var checksum = Checksum()
        let elapsed = try ContinuousClock().measure {
            let items = try ModelContext(container).fetch(FetchDescriptor<BenchItem>())
            checksum = fold(items)
        }
        return (elapsed, checksum)
    }

    static func timeUpdate(every step: Int, at url: URL) throws -> Duration {
        let container = try openContainer(at: url)
        let context = ModelContext(container)
        let items = try context.fetch(FetchDescriptor<BenchItem>())
        let elapsed = try ContinuousClock().measure {
            for index in stride(from: 0, to: items.count, by: step) {
                items[index].quantity += 1
                items[index].note = "updated"
            }
            try context.save()
        }
        let updated = try ModelContext(container).fetch(FetchDescriptor<BenchItem>()).count(where: { $0.note == "updated" })
        try expect(updated, (items.count + step - 1) / step, "updated models")
        return elapsed
    }

    static func timeDelete(every step: Int, at url: URL) throws -> Duration {
        let container = try openContainer(at: url)
        let context = ModelContext(container)
        let items = try context.fetch(FetchDescriptor<BenchItem>())
        let elapsed = try ContinuousClock().measure {
            for index in stride(from: 0, to: items.count, by: step) {
                context.delete(items[index])
            }
            try context.save()
        }
        let remaining = try ModelContext(container).fetchCount(FetchDescriptor<BenchItem>())
        try expect(remaining, items.count - (items.count + step - 1) / step, "models after delete")
        return elapsed
    }

    static func readAll(at url: URL) throws -> (count: Int, checksum: Checksum) {
        let container = try openContainer(at: url)
        let items = try ModelContext(container).fetch(FetchDescriptor<BenchItem>())
        return (items.count, fold(items))
    }

    // MARK: Helpers

    static func openContainer(at url: URL) throws -> ModelContainer {
        try ModelContainer(for: BenchItem.self, configurations: ModelConfiguration(url: url))
    }

    /// Creates `count` models, inserts them and saves once.
    private static func insert(count: Int, into context: ModelContext) throws {
        for index in 0..<count {
            context.insert(BenchItem(SampleValues(index: index)))
        }
        try context.save()
    }

    static func fold(_ items: [BenchItem]) -> Checksum {
        var checksum = Checksum()
        for item in items {
            checksum.add(
                serial: item.serial, title: item.title, category: item.category, quantity: item.quantity,
                price: item.price, isActive: item.isActive, createdAt: item.createdAt, token: item.token,
                note: item.note, status: item.status
            )
        }
        return checksum
    }
}
