import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

@Suite("Sync engine: rejections and conflicts")
struct RejectionTests {
    @Test("rejectStale: the losing device gets a conflict event with both versions, shows the server's value, and resolves by keeping its own")
    func rejectStaleConflict() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let aEvents = EventLog(a.engine)
        a.context.insert(Reading(key: "weight", value: 70))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()

        let bReading = try #require(try b.context.fetch(FetchDescriptor<Reading>()).first)
        bReading.value = 71
        try b.context.save()
        try await b.engine.syncNow()

        let aReading = try #require(try a.context.fetch(FetchDescriptor<Reading>()).first)
        aReading.value = 69
        try a.context.save()
        try await a.engine.syncNow()

        let event = await aEvents.waitFor { if case .conflict = $0 { return true } else { return false } }
        guard case let .conflict(conflict)? = event else {
            Issue.record("no conflict event: \(aEvents.all)")
            return
        }
        #expect(conflict.record.recordID == "weight")
        #expect(conflict.localFields["value"] == .double(69))
        #expect(conflict.server?.fields["value"] == .double(71))
        #expect(aEvents.all.contains { if case let .rejected(rejection) = $0 { return rejection.reason == .stale } else { return false } })
        // Rolled back to the server's value.
        #expect(try a.fetch(Reading.self).map(\.value) == [71])

        try await a.engine.resolve(conflict, with: .keepLocal)
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try a.fetch(Reading.self).map(\.value) == [69])
        #expect(try b.fetch(Reading.self).map(\.value) == [69])
    }

    @Test("a save into a scope the user was not granted is rejected, rolled back locally and reported; the queue behind it flows")
    func rejectedInsertRolledBack() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let bob = try Device.open(server, user: "bob", directory: directory, name: "bob")
        let bobNote = Note(title: "Bob's team note")
        bobNote.space = "team:bob"
        bob.context.insert(bobNote)
        try bob.context.save()
        try await bob.engine.syncNow()

        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        let intruder = Note(title: "sneaky")
        intruder.space = "team:bob"
        a.context.insert(intruder)
        try a.context.save()
        a.context.insert(Note(title: "fine"))
        try a.context.save()
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["fine||false|-|"])
        let rejection = await events.waitFor { if case .rejected = $0 { return true } else { return false } }
        guard case let .rejected(details)? = rejection else {
            Issue.record("no rejected event: \(events.all)")
            return
        }
        #expect(details.reason == .scopeNotGranted)
        #expect(try await a.engine.pendingChangeCount() == 0)
        let c = try Device.open(server, directory: directory, name: "c")
        try await c.engine.syncNow()
        #expect(try c.noteState() == ["fine||false|-|"])
    }

    @Test("a rejected delete is undone: the record comes back with the server's values")
    func rejectedDeleteRestored() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let events = EventLog(a.engine)
        a.context.insert(Reading(key: "weight", value: 70))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        let bReading = try #require(try b.context.fetch(FetchDescriptor<Reading>()).first)
        bReading.value = 71
        try b.context.save()
        try await b.engine.syncNow()

        // A deletes from a stale base: rejected under rejectStale, and rolled back.
        let aReading = try #require(try a.context.fetch(FetchDescriptor<Reading>()).first)
        a.context.delete(aReading)
        try a.context.save()
        #expect(try a.fetch(Reading.self).isEmpty)
        try await a.engine.syncNow()
        #expect(events.all.contains { if case let .rejected(rejection) = $0 { return rejection.reason == .stale } else { return false } })
        #expect(try a.fetch(Reading.self).map(\.value) == [71])
        #expect(try await a.engine.pendingChangeCount() == 0)
    }

    @Test("an update the server refuses as a request is rolled back to the server's values, not only inserts")
    func refusedUpdateRolledBack() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        let note = Note(title: "kept", body: "server body")
        a.context.insert(note)
        try a.context.save()
        try await a.engine.syncNow()

        // One save edits the body and moves the note to a malformed scope: refused as a request.
        note.body = "refused body"
        note.space = "no colon here"
        try a.context.save()
        a.context.insert(Note(title: "behind it"))
        try a.context.save()
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(events.all.contains { if case let .rejected(rejection) = $0 { return rejection.reason == .validation } else { return false } })
        let notes = try a.fetch(Note.self).sorted { $0.title < $1.title }
        #expect(notes.map(\.title) == ["behind it", "kept"])
        #expect(notes.last?.body == "server body")
        #expect(notes.last?.space == nil)
        #expect(try await a.engine.pendingChangeCount() == 0)
        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()
        #expect(try b.noteState() == a.noteState())
    }

    @Test("a model type that is not in the container's schema is a typed error at setup")
    func modelNotInSchema() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let container = try ModelContainer(
            for: Schema([Note.self, Folder.self, Tag.self]), configurations: ModelConfiguration(url: directory.file("x.sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(Note.self)
        configuration.sync(Reading.self)
        #expect(throws: SyncEngineError.modelNotInSchema("Reading")) {
            _ = try SyncEngine(
                container: container, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
                configuration: configuration)
        }
    }
}
