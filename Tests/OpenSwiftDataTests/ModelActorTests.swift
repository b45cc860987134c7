import Foundation
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

@ModelActor
actor NoteImporter {
    func importNotes(_ titles: [String]) throws -> [PersistentIdentifier] {
        let notes = titles.map { Note(title: $0) }
        for note in notes { modelContext.insert(note) }
        try modelContext.save()
        return notes.map(\.persistentModelID)
    }

    func rename(_ id: PersistentIdentifier, to title: String) throws {
        guard let note = self[id, as: Note.self] else { return }
        note.title = title
        try modelContext.save()
    }

    func count() throws -> Int {
        try modelContext.fetchCount(FetchDescriptor<Note>())
    }
}

@Suite("@ModelActor")
struct ModelActorTests {
    @Test("an actor works with its own context; identifiers cross actors and load on the other side")
    func identifiersCrossActors() async throws {
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let importer = NoteImporter(modelContainer: container)
        let ids = try await importer.importNotes(["a", "b", "c"])
        #expect(ids.count == 3)

        let context = ModelContext(container)
        let loaded = try ids.map { id -> String in
            let note: Note = try #require(context.model(for: id) as? Note)
            return note.title
        }
        #expect(loaded == ["a", "b", "c"])

        try await importer.rename(ids[1], to: "B")
        let fresh = ModelContext(container)
        #expect(try fresh.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title) == ["a", "B", "c"])
        #expect(importer.modelContainer === container)
    }

    @Test("several actors write one file store concurrently; every row arrives once")
    func concurrentWriters() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: directory.file("actors.store")))
        let importers = (0..<4).map { _ in NoteImporter(modelContainer: container) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (number, importer) in importers.enumerated() {
                group.addTask {
                    for batch in 0..<10 {
                        _ = try await importer.importNotes((0..<5).map { "\(number)-\(batch)-\($0)" })
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await importers[0].count() == 200)
        let titles = try ModelContext(container).fetch(FetchDescriptor<Note>()).map(\.title)
        #expect(Set(titles).count == 200)
    }
}

/// An actor written by hand on the container's main context, as some SwiftData apps write it.
actor MainContextStore: ModelActor {
    nonisolated let modelExecutor: any ModelExecutor
    nonisolated let modelContainer: ModelContainer

    @MainActor
    init(container: ModelContainer) {
        modelContainer = container
        modelExecutor = DefaultSerialModelExecutor(modelContext: container.mainContext)
    }

    /// Adds a note without saving (the main context's autosave writes it), from code that is
    /// also the main actor's: `assumeIsolated` stops the process unless the actor runs on the
    /// main actor's executor.
    func add(_ title: String) {
        MainActor.assumeIsolated { () }
        modelContext.insert(Note(title: title))
    }

    func count() throws -> Int {
        try modelContext.fetchCount(FetchDescriptor<Note>())
    }
}

@Suite("An actor on the main context")
struct MainContextActorTests {
    @Test("an actor whose executor is made for the main context runs on the main actor, alongside the main context's autosave")
    @MainActor
    func actorOnMainContext() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: directory.file("main.store")))
        let main = container.mainContext
        let store = MainContextStore(container: container)
        #expect(store.modelExecutor.modelContext === main)
        for round in 0..<50 {
            // The main actor changes the context (scheduling an autosave), and the actor does
            // too, from a task of its own.
            main.insert(Note(title: "main \(round)"))
            await Task.detached { await store.add("actor \(round)") }.value
            if round % 10 == 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        for _ in 0..<200 where main.hasChanges {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(!main.hasChanges)
        #expect(try await store.count() == 100)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Note>()) == 100)
    }
}
