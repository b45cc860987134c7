import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

// Two versions of a synced notes app, for updates of the app on a device with saves queued.

enum MemosV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Memo.self, Label.self] }

    @Model final class Memo {
        var title: String
        var body: String = ""
        init(title: String) { self.title = title }
    }

    @Model final class Label {
        var name: String
        init(name: String) { self.name = name }
    }
}

/// A property added (optional, and one with a default) and an entity added.
enum MemosAdded: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Memo.self, Label.self, Sticker.self] }

    @Model final class Memo {
        var title: String
        var body: String = ""
        var mood: String?
        var priority: Int = 0
        init(title: String) { self.title = title }
    }

    @Model final class Label {
        var name: String
        init(name: String) { self.name = name }
    }

    @Model final class Sticker {
        var emoji: String
        init(emoji: String) { self.emoji = emoji }
    }
}

/// `title` renamed `heading` through `originalName`.
enum MemosRenamed: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Memo.self, Label.self] }

    @Model final class Memo {
        @Attribute(originalName: "title") var heading: String
        var body: String = ""
        init(heading: String) { self.heading = heading }
    }

    @Model final class Label {
        var name: String
        init(name: String) { self.name = name }
    }
}

/// The `Label` entity removed.
enum MemosWithoutLabels: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Memo.self] }

    @Model final class Memo {
        var title: String
        var body: String = ""
        init(title: String) { self.title = title }
    }
}

/// `title` renamed `heading`, and a new property takes the name `title`: two properties would
/// sync under one name.
enum MemosNameReused: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Memo.self] }

    @Model final class Memo {
        @Attribute(originalName: "title") var heading: String
        var title: String = ""
        init(heading: String) { self.heading = heading }
    }
}

/// A non-optional property without a default, filled by a custom stage's `didMigrate`.
enum MemosWithWords: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Memo.self, Label.self] }

    @Model final class Memo {
        var title: String
        var body: String = ""
        var words: Int
        init(title: String, words: Int) {
            self.title = title
            self.words = words
        }
    }

    @Model final class Label {
        var name: String
        init(name: String) { self.name = name }
    }
}

enum MemosCustomPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [MemosV1.self, MemosWithWords.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: MemosV1.self, toVersion: MemosWithWords.self, willMigrate: nil,
                didMigrate: { context in
                    for memo in try context.fetch(FetchDescriptor<MemosWithWords.Memo>()) {
                        memo.words = memo.body.split(separator: " ").count
                    }
                    try context.save()
                })
        ]
    }
}

/// The kinds of schema change an app update makes.
enum SchemaChange: String, CaseIterable, CustomTestStringConvertible {
    case propertyAdded, entityAdded, propertyRenamed, entityRemoved, customStage
    var testDescription: String { rawValue }
}

@Suite("App updates: a schema change never costs a save or the engine's state")
struct AppUpdateTests {
    /// The version 1 engine configuration.
    static func v1Configuration() -> SyncConfiguration {
        var configuration = SyncConfiguration()
        configuration.sync(MemosV1.Memo.self)
        configuration.sync(MemosV1.Label.self)
        return configuration
    }

    /// Opens version 2 of the app on `url` (running the migration), with its engine.
    static func openUpdated(
        _ change: SchemaChange, url: URL, transport: InMemorySyncTransport, clock: TestClock
    ) throws -> (ModelContainer, SyncEngine) {
        var configuration = SyncConfiguration()
        let container: ModelContainer
        switch change {
        case .propertyAdded, .entityAdded:
            container = try ModelContainer(for: Schema(versionedSchema: MemosAdded.self), configurations: ModelConfiguration(url: url))
            configuration.sync(MemosAdded.Memo.self)
            configuration.sync(MemosAdded.Label.self)
            if change == .entityAdded { configuration.sync(MemosAdded.Sticker.self) }
        case .propertyRenamed:
            container = try ModelContainer(for: Schema(versionedSchema: MemosRenamed.self), configurations: ModelConfiguration(url: url))
            configuration.sync(MemosRenamed.Memo.self)
            configuration.sync(MemosRenamed.Label.self)
        case .entityRemoved:
            container = try ModelContainer(for: Schema(versionedSchema: MemosWithoutLabels.self), configurations: ModelConfiguration(url: url))
            configuration.sync(MemosWithoutLabels.Memo.self)
        case .customStage:
            container = try ModelContainer(
                for: Schema(versionedSchema: MemosWithWords.self), migrationPlan: MemosCustomPlan.self, configurations: ModelConfiguration(url: url))
            configuration.sync(MemosWithWords.Memo.self)
            configuration.sync(MemosWithWords.Label.self)
        }
        let engine = try SyncEngine(
            container: container, transport: transport, user: "alice", configuration: configuration, clock: clock, seed: seed(of: "updated"))
        return (container, engine)
    }

    /// The engine's pull cursor as stored.
    static func storedCursor(_ container: ModelContainer) throws -> String? {
        try container.performSyncRead { db in try String.fetchOne(db, sql: "SELECT value FROM osd_sync_engine WHERE key = 'cursor'") }
    }

    /// The engine's key/value state as stored.
    static func engineState(_ container: ModelContainer) throws -> [String: String] {
        try container.performSyncRead { db in
            Dictionary(
                try Row.fetchAll(db, sql: "SELECT key, value FROM osd_sync_engine").map { ($0["key"] as String, $0["value"] as String) },
                uniquingKeysWith: { $1 })
        }
    }

    /// Titles of the notes the server holds, with how many times each was inserted.
    static func serverMemos(_ server: TestServer) async throws -> [String: Int] {
        let reader = InMemorySyncTransport(service: server.service, user: "alice")
        let page = try await reader.pull(PullRequest(clientID: "reader", cursor: nil, limit: 10_000))
        var titles: [String: Int] = [:]
        for change in page.changes where change.entity == "Memo" && change.op == .insert {
            if case let .string(title)? = change.fields["title"] { titles[title, default: 0] += 1 }
        }
        return titles
    }

    @Test(
        "a device with an unsent save, a save sent without an answer and a pending edit over a pulled value is updated: nothing is lost, each save reaches the server once",
        arguments: SchemaChange.allCases)
    func updateKeepsQueuedSaves(change: SchemaChange) async throws {
        let server = try await TestServer()
        let directory = server.directory
        let url = directory.file("phone.sqlite")
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        let clientID: ClientID
        let cursor: String?
        let state: [String: String]
        do {
            // Version 1: a synced note and label, then a second device edits the note.
            let container = try ModelContainer(for: Schema(versionedSchema: MemosV1.self), configurations: ModelConfiguration(url: url))
            let engine = try SyncEngine(
                container: container, transport: transport, user: "alice", configuration: Self.v1Configuration(), clock: server.clock,
                seed: seed(of: "phone"))
            let context = ModelContext(container)
            let shared = MemosV1.Memo(title: "shared")
            shared.body = "one two three"
            context.insert(shared)
            context.insert(MemosV1.Label(name: "work"))
            try context.save()
            try await engine.syncNow()
            clientID = await engine.currentClientID

            let laptopContainer = try ModelContainer(
                for: Schema(versionedSchema: MemosV1.self), configurations: ModelConfiguration(url: directory.file("laptop.sqlite")))
            let laptop = try SyncEngine(
                container: laptopContainer, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
                configuration: Self.v1Configuration(), clock: server.clock, seed: seed(of: "laptop"))
            try await laptop.syncNow()
            let laptopContext = ModelContext(laptopContainer)
            let onLaptop = try #require(try laptopContext.fetch(FetchDescriptor<MemosV1.Memo>()).first)

            // A pending edit on the phone masks the laptop's edit of the same field, which the
            // phone pulls while its pushes fail: the server's value is kept as a shadow.
            shared.body = "phone body words"
            try context.save()
            onLaptop.body = "laptop body"
            try laptopContext.save()
            try await laptop.syncNow()
            transport.blockPushes = true
            await #expect(throws: (any Error).self) { try await engine.syncNow() }
            #expect(try ModelContext(container).fetch(FetchDescriptor<MemosV1.Memo>()).first?.body == "phone body words")

            // A save pushed whose answer is lost (the server applied it).
            transport.blockPushes = false
            transport.onPush { _, _ in throw SyncTransportError.unreachable("answer lost") }
            context.insert(MemosV1.Memo(title: "in flight"))
            try context.save()
            await #expect(throws: (any Error).self) { try await engine.syncNow() }
            transport.onPush(nil)

            // A save never sent: the app is killed before the engine runs again.
            context.insert(MemosV1.Memo(title: "queued offline"))
            try context.save()
            #expect(try await engine.pendingChangeCount() == 3)
            await engine.stop()
            cursor = try Self.storedCursor(container)
            #expect(cursor != nil)
            state = try Self.engineState(container)
        }

        // The update, and its first launch.
        let (container, engine) = try Self.openUpdated(change, url: url, transport: transport, clock: server.clock)
        #expect(await engine.currentClientID == clientID)
        // Nothing to download again: the server never sent what version 2 adds. Every other
        // piece of the engine's state (user, next id, revoked scopes…) is as it was.
        #expect(try Self.storedCursor(container) == cursor)
        // (The schema descriptors are the update's own bookkeeping.)
        let bookkeeping: Set<String> = ["schema", "earlierSchemas"]
        #expect(try Self.engineState(container).filter { !bookkeeping.contains($0.key) } == state.filter { !bookkeeping.contains($0.key) })
        // The custom stage's didMigrate filled `words` on both notes: one more save to push.
        #expect(try await engine.pendingChangeCount() == (change == .customStage ? 4 : 3))
        let pushesBefore = transport.sentPushes.count
        try await engine.syncNow()
        try await engine.syncNow()
        #expect(try await engine.pendingChangeCount() == 0)
        #expect(transport.sentPushes.count > pushesBefore)

        // Every save is on the server once; the pending edit won over the laptop's.
        let memos = try await Self.serverMemos(server)
        #expect(memos == ["shared": 1, "in flight": 1, "queued offline": 1])
        let reader = InMemorySyncTransport(service: server.service, user: "alice")
        let page = try await reader.pull(PullRequest(clientID: "reader-2", cursor: nil, limit: 10_000))
        let bodies = page.changes.filter { $0.entity == "Memo" }.compactMap { change -> String? in
            if case let .string(body)? = change.fields["body"] { return body } else { return nil }
        }
        #expect(bodies.contains("phone body words"))
        #expect(!bodies.contains("laptop body"))

        // The device shows the same notes.
        let context = ModelContext(container)
        let titles: [String]
        switch change {
        case .propertyAdded, .entityAdded:
            let local = try context.fetch(FetchDescriptor<MemosAdded.Memo>())
            titles = local.map(\.title)
            #expect(local.first { $0.title == "shared" }?.body == "phone body words")
            if change == .propertyAdded {
                let shared = try #require(local.first { $0.title == "shared" })
                shared.mood = "calm"
                try context.save()
                try await engine.syncNow()
                let page = try await reader.pull(PullRequest(clientID: "reader-3", cursor: nil, limit: 10_000))
                #expect(
                    page.changes.contains { change in
                        if case .string("calm")? = change.fields["mood"] { return true } else { return false }
                    })
            } else {
                context.insert(MemosAdded.Sticker(emoji: "star"))
                try context.save()
                try await engine.syncNow()
                #expect(try await engine.pendingChangeCount() == 0)
            }
        case .propertyRenamed:
            let local = try context.fetch(FetchDescriptor<MemosRenamed.Memo>())
            titles = local.map(\.heading)
            #expect(local.first { $0.heading == "shared" }?.body == "phone body words")
        case .entityRemoved:
            let local = try context.fetch(FetchDescriptor<MemosWithoutLabels.Memo>())
            titles = local.map(\.title)
            #expect(local.first { $0.title == "shared" }?.body == "phone body words")
        case .customStage:
            let local = try context.fetch(FetchDescriptor<MemosWithWords.Memo>())
            titles = local.map(\.title)
            #expect(local.first { $0.title == "shared" }?.words == 3)
        }
        #expect(titles.sorted() == ["in flight", "queued offline", "shared"])
        await engine.stop()
    }

    @Test("a table the app keeps in its store file survives every kind of migration", arguments: SchemaChange.allCases)
    func appTableSurvivesMigrations(change: SchemaChange) async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("app.sqlite")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: MemosV1.self), configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let memo = MemosV1.Memo(title: "searchable")
            memo.body = "alpha beta"
            context.insert(memo)
            try context.save()
        }
        // The app's own tables beside the store's: a full-text index and a plain cache.
        let queue = try DatabaseQueue(path: url.path)
        try await queue.write { db in
            try db.execute(sql: "CREATE VIRTUAL TABLE memo_search USING fts5(title, body)")
            try db.execute(sql: "INSERT INTO memo_search (title, body) VALUES ('searchable', 'alpha beta')")
            try db.execute(sql: "CREATE TABLE thumbnail_cache (key TEXT PRIMARY KEY, bytes BLOB)")
            try db.execute(sql: "INSERT INTO thumbnail_cache VALUES ('a', x'0102')")
        }
        try queue.close()

        let server = try await TestServer()
        let (container, engine) = try Self.openUpdated(
            change, url: url, transport: InMemorySyncTransport(service: server.service, user: "alice"), clock: server.clock)
        await engine.stop()
        _ = container
        let reopened = try DatabaseQueue(path: url.path)
        defer { try? reopened.close() }
        let (found, cached, labels) = try await reopened.read { db in
            (
                try String.fetchOne(db, sql: "SELECT title FROM memo_search WHERE memo_search MATCH 'alpha'"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM thumbnail_cache"),
                try db.tableExists("Label")
            )
        }
        #expect(found == "searchable")
        #expect(cached == 1)
        // An entity removed from the schema still loses its table, as in SwiftData.
        #expect(labels == (change != .entityRemoved))
    }

    @Test("a store written before the table record exists: its first open keeps a table the app made, drops a removed entity's")
    func storeWithoutTableRecord() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("old.sqlite")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: MemosV1.self), configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(MemosV1.Memo(title: "old"))
            try context.save()
        }
        let queue = try DatabaseQueue(path: url.path)
        try await queue.write { db in
            try db.execute(sql: "DROP TABLE osd_store_tables")
            try db.execute(sql: "CREATE TABLE app_settings (key TEXT PRIMARY KEY, value TEXT)")
            // The sync engine's tables as an earlier version left them, unrecorded.
            try db.execute(sql: "CREATE TABLE osd_sync_engine (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT")
            try db.execute(sql: "INSERT INTO osd_sync_engine VALUES ('clientID', 'c-old')")
        }
        try queue.close()
        let container = try ModelContainer(for: Schema(versionedSchema: MemosWithoutLabels.self), configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(container).fetch(FetchDescriptor<MemosWithoutLabels.Memo>()).map(\.title) == ["old"])
        let reopened = try DatabaseQueue(path: url.path)
        defer { try? reopened.close() }
        let (settings, client, labels, record) = try await reopened.read { db in
            (
                try db.tableExists("app_settings"),
                try String.fetchOne(db, sql: "SELECT value FROM osd_sync_engine WHERE key = 'clientID'"),
                try db.tableExists("Label"),
                try db.tableExists("osd_store_tables")
            )
        }
        #expect(settings)
        #expect(client == "c-old")
        #expect(!labels)
        #expect(record)
    }
}

@Suite("App updates across devices: what an updated app syncs that an older one skipped")
struct SkippedFieldsTests {
    @Test("a field a newer device wrote, skipped by an older one, is downloaded when the older one updates; a field no one wrote is not")
    func skippedFieldDownloadedOnUpdate() async throws {
        let server = try await TestServer()
        let directory = server.directory
        // The laptop already runs version 2 and writes the new property.
        let laptopContainer = try ModelContainer(
            for: Schema(versionedSchema: MemosAdded.self), configurations: ModelConfiguration(url: directory.file("laptop.sqlite")))
        var laptopConfiguration = SyncConfiguration()
        laptopConfiguration.sync(MemosAdded.Memo.self)
        laptopConfiguration.sync(MemosAdded.Label.self)
        let laptop = try SyncEngine(
            container: laptopContainer, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
            configuration: laptopConfiguration, clock: server.clock, seed: seed(of: "laptop"))
        let memo = MemosAdded.Memo(title: "plan")
        memo.mood = "hopeful"
        let laptopContext = ModelContext(laptopContainer)
        laptopContext.insert(memo)
        try laptopContext.save()
        try await laptop.syncNow()

        // The phone, still on version 1, pulls the note without the field it does not know.
        let url = directory.file("phone.sqlite")
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: MemosV1.self), configurations: ModelConfiguration(url: url))
            let engine = try SyncEngine(
                container: container, transport: transport, user: "alice", configuration: AppUpdateTests.v1Configuration(), clock: server.clock,
                seed: seed(of: "phone"))
            try await engine.syncNow()
            #expect(try ModelContext(container).fetch(FetchDescriptor<MemosV1.Memo>()).map(\.title) == ["plan"])
            await engine.stop()
        }
        // Updated, it downloads again and shows the value.
        let (container, engine) = try AppUpdateTests.openUpdated(.propertyAdded, url: url, transport: transport, clock: server.clock)
        #expect(try AppUpdateTests.storedCursor(container) == nil)
        try await engine.syncNow()
        #expect(try ModelContext(container).fetch(FetchDescriptor<MemosAdded.Memo>()).map(\.mood) == ["hopeful"])
        await engine.stop()
    }

    @Test("a first download cut off mid-snapshot before the update is completed by version 2, with the save made meanwhile")
    func halfFinishedSnapshotResumes() async throws {
        let server = try await TestServer()
        let directory = server.directory
        // The laptop has 30 notes on the server.
        let laptopContainer = try ModelContainer(
            for: Schema(versionedSchema: MemosV1.self), configurations: ModelConfiguration(url: directory.file("laptop.sqlite")))
        let laptop = try SyncEngine(
            container: laptopContainer, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
            configuration: AppUpdateTests.v1Configuration(), clock: server.clock, seed: seed(of: "laptop"))
        let laptopContext = ModelContext(laptopContainer)
        for index in 0..<30 { laptopContext.insert(MemosV1.Memo(title: "laptop \(index)")) }
        try laptopContext.save()
        try await laptop.syncNow()

        // The phone's first download stops after two pages of ten (the app is closed).
        let url = directory.file("phone.sqlite")
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: MemosV1.self), configurations: ModelConfiguration(url: url))
            var configuration = AppUpdateTests.v1Configuration()
            configuration.snapshotPageSize = 10
            configuration.pullPageSize = 10
            let engine = try SyncEngine(
                container: container, transport: transport, user: "alice", configuration: configuration, clock: server.clock, seed: seed(of: "phone"))
            let pages = Counter()
            transport.onPull { page in
                guard pages.next() <= 2 else { throw SyncTransportError.unreachable("app closed") }
                return page
            }
            let context = ModelContext(container)
            context.insert(MemosV1.Memo(title: "phone"))
            try context.save()
            await #expect(throws: (any Error).self) { try await engine.syncNow() }
            transport.onPull(nil)
            await engine.stop()
        }
        let (container, engine) = try AppUpdateTests.openUpdated(.propertyAdded, url: url, transport: transport, clock: server.clock)
        try await engine.syncNow()
        #expect(try await engine.pendingChangeCount() == 0)
        let titles = try ModelContext(container).fetch(FetchDescriptor<MemosAdded.Memo>()).map(\.title)
        #expect(titles.count == 31)
        #expect(titles.contains("phone"))
        #expect(try await AppUpdateTests.serverMemos(server)["phone"] == 1)
        await engine.stop()
    }
}

@Suite("App updates: what the update removes or renames")
struct UpdateRemovalTests {
    @Test("a queued save that inserts a record of an entity the update removes, beside an edit of a kept one, is accepted whole")
    func queuedSaveOfRemovedEntity() async throws {
        let server = try await TestServer()
        let url = server.directory.file("phone.sqlite")
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: MemosV1.self), configurations: ModelConfiguration(url: url))
            let engine = try SyncEngine(
                container: container, transport: transport, user: "alice", configuration: AppUpdateTests.v1Configuration(), clock: server.clock,
                seed: seed(of: "phone"))
            let context = ModelContext(container)
            let memo = MemosV1.Memo(title: "errands")
            context.insert(memo)
            try context.save()
            try await engine.syncNow()
            // Offline: one save edits the note and adds a label.
            memo.body = "milk"
            context.insert(MemosV1.Label(name: "home"))
            try context.save()
            await engine.stop()
        }
        let (container, engine) = try AppUpdateTests.openUpdated(.entityRemoved, url: url, transport: transport, clock: server.clock)
        let events = EventLog(engine)
        try await engine.syncNow()
        try await engine.syncNow()
        #expect(try await engine.pendingChangeCount() == 0)
        #expect(!events.all.contains { if case .rejected = $0 { return true } else { return false } })
        #expect(try ModelContext(container).fetch(FetchDescriptor<MemosWithoutLabels.Memo>()).first?.body == "milk")
        let page = try await InMemorySyncTransport(service: server.service, user: "alice").pull(
            PullRequest(clientID: "reader", cursor: nil, limit: 100))
        #expect(page.changes.contains { $0.entity == "Label" && $0.fields["name"] == .string("home") })
        #expect(page.changes.contains { $0.entity == "Memo" && $0.fields["body"] == .string("milk") })
        await engine.stop()
    }

    @Test("a new property named like a renamed property's original name is refused at engine setup, naming both")
    func syncNameReused() async throws {
        let server = try await TestServer()
        let container = try ModelContainer(
            for: Schema(versionedSchema: MemosNameReused.self), configurations: ModelConfiguration(url: server.directory.file("reused.sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(MemosNameReused.Memo.self)
        #expect {
            _ = try SyncEngine(
                container: container, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
                configuration: configuration)
        } throws: { error in
            guard case let .unsupportedModel(entity, reason)? = error as? SyncEngineError else { return false }
            return entity == "Memo" && reason.contains("heading") && reason.contains("title")
        }
    }
}

/// Counts calls across tasks.
/// `@unchecked Sendable`: `value` is only read and written while holding `lock`.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int {
        lock.withLock {
            value += 1
            return value
        }
    }
}
