import Foundation
import Observation
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

@Suite("Many contexts, one truth")
struct ManyContextsTests {
    @Test("a save in one context refreshes the unchanged instances another context fetches again, and tells their observers")
    func refreshOnFetch() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: directory.file("shared.store")))
        let writer = ModelContext(container)
        writer.insert(Note(title: "draft"))
        writer.insert(Note(title: "other"))
        try writer.save()

        let reader = ModelContext(container)
        let byTitle = FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)])
        let notes = try reader.fetch(byTitle)
        let draft = notes[0]
        #expect(draft.title == "draft")
        let observed = LockedFlag()
        withObservationTracking {
            _ = draft.title
        } onChange: {
            observed.set()
        }

        let writersDraft = try #require(try writer.fetch(FetchDescriptor<Note>(predicate: #Predicate { $0.title == "draft" })).first)
        writersDraft.title = "final"
        writersDraft.count = 3
        try writer.save()

        let again = try reader.fetch(byTitle)
        #expect(again.contains { $0 === draft }, "the same instance")
        #expect(draft.title == "final" && draft.count == 3)
        #expect(observed.value)
    }

    @Test("an instance with unsaved changes keeps them when another context's save is fetched; its own save wins")
    func localChangesWin() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: directory.file("shared.store")))
        let first = ModelContext(container)
        first.insert(Note(title: "n"))
        try first.save()

        let second = ModelContext(container)
        let mine = try #require(try second.fetch(FetchDescriptor<Note>()).first)
        mine.count = 10

        let theirs = try #require(try first.fetch(FetchDescriptor<Note>()).first)
        theirs.count = 20
        theirs.title = "renamed"
        try first.save()

        _ = try second.fetch(FetchDescriptor<Note>())
        #expect(mine.count == 10, "unsaved local value kept")
        #expect(mine.title == "n", "a model with unsaved changes is not refreshed at all until it is saved")
        try second.save()
        let check = try #require(try ModelContext(container).fetch(FetchDescriptor<Note>()).first)
        // The save writes the properties it changed; the other context's title stays.
        #expect(check.count == 10)
        #expect(check.title == "renamed")
    }
}

@ModelActor
actor MarkerWriter {
    func addMarker() throws {
        modelContext.insert(Marker())
        try modelContext.save()
    }
}

@Suite("Live queries and save events")
struct LiveQueryTests {
    @Test("a live query yields at once, after saves that change its result (also values), and not after unrelated saves")
    @MainActor
    func liveResults() async throws {
        let container = try ModelContainer(for: Note.self, Marker.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        var results = context.liveResults(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)])).makeAsyncIterator()
        let first = try await results.next(isolation: #isolation)
        #expect(first?.isEmpty == true)

        let importer = NoteImporter(modelContainer: container)
        let ids = try await importer.importNotes(["b", "a"])
        #expect(try await results.next(isolation: #isolation)?.map(\.title) == ["a", "b"])

        // An unrelated entity's save wakes nothing; the next value is the rename that follows it.
        try await MarkerWriter(modelContainer: container).addMarker()
        try await importer.rename(ids[0], to: "c")
        let renamed = try await results.next(isolation: #isolation)
        #expect(renamed?.map(\.title) == ["a", "c"])
    }

    @Test("saveEvents announces each committed save with its entities and identifiers")
    func saveEvents() async throws {
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        var events = container.saveEvents().makeAsyncIterator()
        let ids = try await NoteImporter(modelContainer: container).importNotes(["x", "y"])
        let event = await events.next()
        #expect(event?.entities == ["Note"])
        #expect(event?.inserted == ids)
        #expect(event?.updated.isEmpty == true && event?.deleted.isEmpty == true)
    }
}
