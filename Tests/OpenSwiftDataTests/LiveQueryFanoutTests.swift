import Foundation
import Testing

@testable import OpenSwiftData

@Suite("Live queries at scale")
struct LiveQueryFanoutTests {
    @Test("of 100 live queries, a save re-runs only the 50 over the entity it changed")
    @MainActor
    func onlyAffectedQueriesRerun() async throws {
        let container = try ModelContainer(for: Note.self, Marker.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let counter = try StatementCounter(container)
        var noteQueries = (0..<50).map { _ in context.liveResults(FetchDescriptor<Note>()).makeAsyncIterator() }
        var markerQueries = (0..<50).map { _ in context.liveResults(FetchDescriptor<Marker>()).makeAsyncIterator() }
        for index in noteQueries.indices { _ = try await noteQueries[index].next(isolation: MainActor.shared) }
        for index in markerQueries.indices { _ = try await markerQueries[index].next(isolation: MainActor.shared) }
        counter.reset()

        let writer = ModelContext(container)
        writer.insert(Note(title: "new"))
        try writer.save()
        // A marker save follows, so that a marker query has something to wake for: each marker
        // iterator must skip the note save without fetching, then fetch once for its own.
        writer.insert(Marker())
        try writer.save()
        counter.reset()

        for index in noteQueries.indices {
            #expect(try await noteQueries[index].next(isolation: MainActor.shared)?.count == 1)
        }
        #expect(counter.selects.count == 50, "one fetch per note query")
        #expect(counter.selects.allSatisfy { $0.contains("\"Note\"") })
        counter.reset()
        for index in markerQueries.indices {
            #expect(try await markerQueries[index].next(isolation: MainActor.shared)?.count == 1)
        }
        #expect(counter.selects.count == 50, "the note save woke no marker query; the marker save woke each once")
        #expect(counter.selects.allSatisfy { $0.contains("\"Marker\"") })
    }

    @Test("liveModel yields one model as it changes, and nil when it is deleted")
    @MainActor
    func liveModel() async throws {
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let ids = try await NoteImporter(modelContainer: container).importNotes(["watched", "other"])
        var states = context.liveModel(for: ids[0], as: Note.self).makeAsyncIterator()
        #expect(try await states.next(isolation: MainActor.shared)??.title == "watched")
        let importer = NoteImporter(modelContainer: container)
        try await importer.rename(ids[1], to: "ignored")
        try await importer.rename(ids[0], to: "renamed")
        #expect(try await states.next(isolation: MainActor.shared)??.title == "renamed", "the other note's rename is skipped")
        let writer = ModelContext(container)
        if let note = writer.model(for: ids[0]) as? Note { writer.delete(note) }
        try writer.save()
        let deleted = try await states.next(isolation: MainActor.shared)
        #expect(deleted != nil && deleted! == nil)
        #expect(try await states.next(isolation: MainActor.shared) == nil, "the sequence ends after the deletion")
    }
}
