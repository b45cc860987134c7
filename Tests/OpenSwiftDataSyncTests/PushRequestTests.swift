import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

@Suite("Sync engine: push requests within the server's limits")
struct PushRequestTests {
    @Test("a save larger than the server's push limit is sent in parts, in order, each once, not rejected")
    func oversizedSaveSplit() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(configuration: SyncServiceConfiguration(maxMutationsPerPush: 3, maxChangesPerPush: 5), directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        a.context.insert(Note(title: "before"))
        try a.context.save()
        let notes = (0..<12).map { Note(title: "n\($0)") }
        for note in notes { a.context.insert(note) }
        try a.context.save()
        // The same records changed again by the next save: its parts must land after the first's.
        for note in notes { note.body = "edited" }
        try a.context.save()
        a.context.insert(Note(title: "after"))
        try a.context.save()
        try await a.engine.syncNow()

        #expect(!events.all.contains { if case .rejected = $0 { return true } else { return false } })
        #expect(try await a.engine.pendingChangeCount() == 0)
        let accepted = a.transport.sentPushes.filter { push in push.mutations.count <= 3 && push.mutations.reduce(0) { $0 + $1.changes.count } <= 5 }
        let ids = accepted.flatMap { $0.mutations.map(\.id) }
        // Ids still grow by one with nothing skipped, and each went through once it fitted.
        #expect(Set(ids) == Set(1...MutationID(Set(ids).count)))
        #expect(Set(ids).count > 4)

        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()
        let expected = (["after||false|-|", "before||false|-|"] + (0..<12).map { "n\($0)|edited|false|-|" }).sorted()
        #expect(try b.noteState() == expected)
        #expect(try a.noteState() == expected)
        let pulled = try await server.service.pull(user: "alice", request: PullRequest(clientID: "probe", limit: 1000))
        #expect(pulled.changes.filter { $0.entity == "Note" }.count == 14)
    }

    @Test("the schema descriptor goes with the first push of a session only; the server keeps applying its policies")
    func schemaSentOnce() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        do {
            let a = try Device.open(server, directory: directory, name: "a")
            a.context.insert(Reading(key: "weight", value: 70))
            try a.context.save()
            try await a.engine.syncNow()
            let reading = try #require(try a.context.fetch(FetchDescriptor<Reading>()).first)
            reading.value = 71
            try a.context.save()
            try await a.engine.syncNow()
            let pushes = a.transport.sentPushes
            #expect(pushes.count == 2)
            #expect(pushes.first?.schema != nil)
            #expect(pushes.last?.schema == nil)
            // A reference carries what its destination's delete does to the record: the
            // inverse relationship's rule (Folder.notes cascades).
            let folder = pushes.first?.schema?.entity(named: "Note")?.fields.first { $0.name == "folder" }
            #expect(folder?.destination == "Folder")
            #expect(folder?.deleteRule == .cascade)
        }

        // A new session sends it again.
        let reopened = try Device.open(server, directory: directory, name: "a")
        let again = try #require(try reopened.context.fetch(FetchDescriptor<Reading>()).first)
        again.value = 72
        try reopened.context.save()
        try await reopened.engine.syncNow()
        #expect(reopened.transport.sentPushes.first?.schema != nil)
    }
}
