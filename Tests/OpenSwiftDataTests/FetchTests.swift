import Foundation
import Testing

@testable import OpenSwiftData

@Suite("Fetching")
struct FetchTests {
    private func seeded() throws -> ModelContainer {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        for (index, title) in ["delta", "alpha", "echo", "charlie", "bravo"].enumerated() {
            let note = Note(title: title, count: index % 3, status: Status.allCases[index % 3])
            note.createdAt = Date(timeIntervalSinceReferenceDate: Double(100 - index))
            context.insert(note)
        }
        try context.save()
        return container
    }

    @Test("sortBy becomes ORDER BY, ascending and descending, several keys at once")
    func sorting() throws {
        let context = ModelContext(try seeded())
        let byTitle = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)]))
        #expect(byTitle.map(\.title) == ["alpha", "bravo", "charlie", "delta", "echo"])
        let reversed = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title, order: .reverse)]))
        #expect(reversed.map(\.title) == ["echo", "delta", "charlie", "bravo", "alpha"])
        let twoKeys = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.count, order: .reverse), SortDescriptor(\.title)]))
        #expect(twoKeys.map(\.title) == ["echo", "alpha", "bravo", "charlie", "delta"])
        let byDate = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.createdAt)]))
        #expect(byDate.map(\.title) == ["bravo", "charlie", "echo", "alpha", "delta"])
        let unsorted = try context.fetch(FetchDescriptor<Note>())
        #expect(unsorted.map(\.title) == ["delta", "alpha", "echo", "charlie", "bravo"], "without sortBy, rows come in insertion order")
    }

    @Test("fetchLimit and fetchOffset page through the results")
    func paging() throws {
        let context = ModelContext(try seeded())
        var descriptor = FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)])
        descriptor.fetchLimit = 2
        descriptor.fetchOffset = 1
        #expect(try context.fetch(descriptor).map(\.title) == ["bravo", "charlie"])
        #expect(try context.fetchCount(descriptor) == 2)
        descriptor.fetchLimit = nil
        descriptor.fetchOffset = 3
        #expect(try context.fetch(descriptor).map(\.title) == ["delta", "echo"])
        #expect(try context.fetchCount(descriptor) == 2)
        #expect(try context.fetchCount(FetchDescriptor<Note>()) == 5)
    }

    @Test("a fetch sees unsaved inserts, changes and deletions unless includePendingChanges is false")
    func pendingChanges() throws {
        let context = ModelContext(try seeded())
        let all = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)]))
        context.delete(all[0])  // alpha
        all[1].title = "zulu"  // bravo
        context.insert(Note(title: "aardvark"))

        let pending = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)]))
        #expect(pending.map(\.title) == ["aardvark", "charlie", "delta", "echo", "zulu"])
        #expect(try context.fetchCount(FetchDescriptor<Note>()) == 5)

        var saved = FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)])
        saved.includePendingChanges = false
        let titles = try context.fetch(saved).map(\.title)
        #expect(titles.count == 5)
        #expect(!titles.contains("aardvark"))
    }

    @Test("a predicate filters with Foundation's semantics")
    func predicate() throws {
        let context = ModelContext(try seeded())
        let descriptor = FetchDescriptor<Note>(
            predicate: #Predicate { $0.count > 0 && $0.title.contains("a") },
            sortBy: [SortDescriptor(\.title)]
        )
        #expect(try context.fetch(descriptor).map(\.title) == ["alpha", "bravo"])
        #expect(try context.fetchCount(descriptor) == 2)
    }

    @Test("fetchIdentifiers returns identifiers in order without models")
    func identifiers() throws {
        let container = try seeded()
        let context = ModelContext(container)
        let ids = try context.fetchIdentifiers(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)]))
        #expect(ids.count == 5)
        let none: Note? = context.registeredModel(for: ids[0])
        #expect(none == nil)
        #expect((context.model(for: ids[0]) as? Note)?.title == "alpha")
    }

    @Test("sorting by a property SQL cannot order like Swift falls back to an in-memory sort")
    func inMemorySort() throws {
        let container = try inMemoryContainer(Gadget.self)
        let context = ModelContext(container)
        for name in ["b", "c", "a"] { context.insert(Gadget(name: name)) }
        try context.save()
        let sorted = try ModelContext(container).fetch(FetchDescriptor<Gadget>(sortBy: [SortDescriptor(\.computed, order: .reverse)]))
        #expect(sorted.map(\.name) == ["c", "b", "a"])
    }
}
