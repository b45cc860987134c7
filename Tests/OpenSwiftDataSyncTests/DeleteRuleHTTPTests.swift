import Foundation
import OpenSwiftData
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import Testing

@Suite("Sync engine: the server enforces delete rules (two engines, real server on loopback)")
struct DeleteRuleHTTPTests {
    @Test("a folder deleted (cascade) on one device while the other files a note in it: both end without the note")
    func cascadeAgainstConcurrentInsert() async throws {
        try await LoopbackServer.run { server in
            let a = try server.device("a")
            let b = try server.device("b")
            let bEvents = EventLog(b.engine)
            a.context.insert(Folder(name: "Trip"))
            a.context.insert(Folder(name: "Work"))
            try a.context.save()
            try await a.engine.syncNow()
            try await b.engine.syncNow()
            #expect(try b.fetch(Folder.self).count == 2)

            // Trip: A's delete reaches the server first; B's note filed in it is refused
            // (its list is a deleted cascade target), reported and rolled back on B.
            let aTrip = try #require(try a.context.fetch(FetchDescriptor<Folder>(predicate: #Predicate { $0.name == "Trip" })).first)
            a.context.delete(aTrip)
            try a.context.save()
            let bTrip = try #require(try b.context.fetch(FetchDescriptor<Folder>(predicate: #Predicate { $0.name == "Trip" })).first)
            b.context.insert(Note(title: "Tickets", folder: bTrip))
            try b.context.save()
            try await a.engine.syncNow()
            try await b.engine.syncNow()
            let rejected = await bEvents.waitFor { event in
                if case let .rejected(rejection) = event { return rejection.reason == .recordDeleted }
                return false
            }
            #expect(rejected != nil)

            // Work: B's note reaches the server first; A, which never saw it, deletes the
            // folder, and the server deletes the note by cascade.
            let bWork = try #require(try b.context.fetch(FetchDescriptor<Folder>(predicate: #Predicate { $0.name == "Work" })).first)
            b.context.insert(Note(title: "Report", folder: bWork))
            try b.context.save()
            try await b.engine.syncNow()
            let aWork = try #require(try a.context.fetch(FetchDescriptor<Folder>(predicate: #Predicate { $0.name == "Work" })).first)
            a.context.delete(aWork)
            try a.context.save()
            try await a.engine.syncNow()
            try await b.engine.syncNow()
            try await a.engine.syncNow()

            #expect(try a.fetch(Folder.self).isEmpty && b.fetch(Folder.self).isEmpty)
            #expect(try b.noteState() == [])
            #expect(try a.noteState() == b.noteState())
        }
    }
}
