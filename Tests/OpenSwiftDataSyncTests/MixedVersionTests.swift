import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

/// The models of an app's older version: `Memo` without `mood`, and no `Badge`.
enum OlderApp {
    @Model
    final class Memo {
        var title: String
        init(title: String) { self.title = title }
    }
}

/// The models of the app's newer version: `Memo` gained `mood`, and `Badge` is new.
enum NewerApp {
    @Model
    final class Memo {
        var title: String
        var mood: String?
        init(title: String, mood: String? = nil) {
            self.title = title
            self.mood = mood
        }
    }

    @Model
    final class Badge {
        var label: String
        init(label: String) { self.label = label }
    }
}

@Suite("Sync engine: mixed app versions (property 12)")
struct MixedVersionTests {
    static func older(_ server: TestServer, directory: TemporaryDirectory, name: String) throws -> (ModelContainer, SyncEngine, EventLog) {
        let container = try ModelContainer(
            for: Schema([OlderApp.Memo.self]), configurations: ModelConfiguration(url: directory.file("\(name).sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(OlderApp.Memo.self)
        let engine = try SyncEngine(
            container: container, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
            configuration: configuration, clock: server.clock, seed: seed(of: name))
        return (container, engine, EventLog(engine))
    }

    static func newer(_ server: TestServer, directory: TemporaryDirectory, name: String) throws -> (ModelContainer, SyncEngine, EventLog) {
        let container = try ModelContainer(
            for: Schema([NewerApp.Memo.self, NewerApp.Badge.self]), configurations: ModelConfiguration(url: directory.file("\(name).sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(NewerApp.Memo.self)
        configuration.sync(NewerApp.Badge.self)
        let engine = try SyncEngine(
            container: container, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
            configuration: configuration, clock: server.clock, seed: seed(of: name))
        return (container, engine, EventLog(engine))
    }

    static func memos(_ container: ModelContainer) throws -> [String] {
        try ModelContext(container).fetch(FetchDescriptor<NewerApp.Memo>()).map { "\($0.title)|\($0.mood ?? "-")" }.sorted()
    }

    @Test("an older client skips the entities and fields it does not know, keeps syncing, and never erases what the newer client wrote")
    func olderClientNeitherWedgesNorErases() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let (newContainer, newEngine, _) = try Self.newer(server, directory: directory, name: "new")
        let (oldContainer, oldEngine, oldEvents) = try Self.older(server, directory: directory, name: "old")

        let newContext = ModelContext(newContainer)
        newContext.insert(NewerApp.Memo(title: "plan", mood: "calm"))
        newContext.insert(NewerApp.Badge(label: "gold"))
        try newContext.save()
        try await newEngine.syncNow()

        // The older client receives what it knows, and is not stopped by what it does not.
        try await oldEngine.syncNow()
        let oldContext = ModelContext(oldContainer)
        let oldMemo = try #require(try oldContext.fetch(FetchDescriptor<OlderApp.Memo>()).first)
        #expect(oldMemo.title == "plan")
        #expect(!oldEvents.all.contains { if case .error = $0 { return true } else { return false } })

        // Its edits and inserts carry only its fields: the newer client's mood survives.
        oldMemo.title = "plan v2"
        oldContext.insert(OlderApp.Memo(title: "from old"))
        try oldContext.save()
        try await oldEngine.syncNow()
        #expect(try await oldEngine.pendingChangeCount() == 0)

        try await newEngine.syncNow()
        #expect(try Self.memos(newContainer) == ["from old|-", "plan v2|calm"])
        #expect(try ModelContext(newContainer).fetch(FetchDescriptor<NewerApp.Badge>()).map(\.label) == ["gold"])

        // A newer change of only unknown fields, then a new badge: the older client follows.
        let editing = ModelContext(newContainer)
        let newMemo = try #require(try editing.fetch(FetchDescriptor<NewerApp.Memo>()).first { $0.title == "plan v2" })
        newMemo.mood = "happy"
        editing.insert(NewerApp.Badge(label: "silver"))
        try editing.save()
        try await newEngine.syncNow()
        try await oldEngine.syncNow()
        #expect(try ModelContext(oldContainer).fetch(FetchDescriptor<OlderApp.Memo>()).map(\.title).sorted() == ["from old", "plan v2"])
        #expect(!oldEvents.all.contains { if case .error = $0 { return true } else { return false } })

        // A third client on the newer version sees everything, nothing erased.
        let (thirdContainer, thirdEngine, _) = try Self.newer(server, directory: directory, name: "third")
        try await thirdEngine.syncNow()
        #expect(try Self.memos(thirdContainer) == ["from old|-", "plan v2|happy"])
        #expect(try ModelContext(thirdContainer).fetch(FetchDescriptor<NewerApp.Badge>()).map(\.label).sorted() == ["gold", "silver"])
    }

    @Test("an older client updated to the newer schema downloads again and gains the entities and fields it skipped, keeping its unpushed save")
    func updatedClientDownloadsWhatItSkipped() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let (newContainer, newEngine, _) = try Self.newer(server, directory: directory, name: "new")
        let newContext = ModelContext(newContainer)
        newContext.insert(NewerApp.Memo(title: "plan", mood: "calm"))
        newContext.insert(NewerApp.Badge(label: "gold"))
        try newContext.save()
        try await newEngine.syncNow()

        do {
            let (oldContainer, oldEngine, _) = try Self.older(server, directory: directory, name: "device")
            try await oldEngine.syncNow()
            let oldContext = ModelContext(oldContainer)
            oldContext.insert(OlderApp.Memo(title: "unpushed"))
            try oldContext.save()
        }

        // The app is updated: the same store opened with the newer models.
        let (updatedContainer, updatedEngine, _) = try Self.newer(server, directory: directory, name: "device")
        try await updatedEngine.syncNow()
        #expect(try Self.memos(updatedContainer) == ["plan|calm", "unpushed|-"])
        #expect(try ModelContext(updatedContainer).fetch(FetchDescriptor<NewerApp.Badge>()).map(\.label) == ["gold"])
        #expect(try await updatedEngine.pendingChangeCount() == 0)
        try await newEngine.syncNow()
        #expect(try Self.memos(newContainer) == ["plan|calm", "unpushed|-"])
    }
}
