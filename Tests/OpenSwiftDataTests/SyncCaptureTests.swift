import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

/// A container of the sync test models on a new store file, with capture on for every synced
/// entity (SyncLocalNote stays local) and a manual clock.
private func syncedContainer(at url: URL = syncStoreURL(), clock: ManualClock = ManualClock(), scopes: Bool = false) throws -> ModelContainer {
    let container = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
    try container.enableSyncCapture(configuration(clock: clock, scopes: scopes))
    return container
}

private func configuration(clock: ManualClock, scopes: Bool = false) -> SyncCaptureConfiguration {
    var configuration = SyncCaptureConfiguration(clock: { clock.now })
    if scopes {
        configuration.sync(SyncProject.self) { "project:\($0.title)" }
        configuration.sync(SyncTask.self) { task in task.project.map { "project:\($0.title)" } }
    } else {
        configuration.sync(SyncProject.self)
        configuration.sync(SyncTask.self)
    }
    configuration.sync(SyncUser.self)
    configuration.sync(SyncLabel.self)
    return configuration
}

@Suite("Sync capture")
struct SyncCaptureTests {
    @Test("an entity with a compound #Unique or two unique attributes cannot sync: a typed error names it, nothing is recorded")
    func identityValidation() throws {
        let container = try ModelContainer(
            for: SyncCompoundKey.self, SyncTwoKeys.self, SyncUser.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        #expect(throws: SyncCaptureError.unsupportedIdentity(entity: "SyncCompoundKey", reason: "its #Unique constraint spans 2 properties")) {
            try container.enableSyncCapture(SyncCaptureConfiguration(SyncUser.self, SyncCompoundKey.self))
        }
        do {
            try container.enableSyncCapture(SyncCaptureConfiguration(SyncTwoKeys.self))
            Issue.record("two unique attributes were accepted")
        } catch let SyncCaptureError.unsupportedIdentity(entity, _) {
            #expect(entity == "SyncTwoKeys")
        }
        #expect(throws: SyncCaptureError.unknownEntity("SyncTask")) {
            try container.enableSyncCapture(SyncCaptureConfiguration(SyncTask.self))
        }
        #expect(!container.isSyncCaptureEnabled)
        try container.enableSyncCapture(SyncCaptureConfiguration(SyncUser.self))
        #expect(container.isSyncCaptureEnabled)
    }

    @Test(
        "an insert records every field as saved, typed, under the record id the model's temporary identifier named; a unique attribute is the record id"
    )
    func insertCapture() throws {
        let url = syncStoreURL()
        let clock = ManualClock()
        let container = try syncedContainer(at: url, clock: clock)
        let context = ModelContext(container)
        context.author = "app"
        let project = SyncProject(title: "Launch")
        project.budget = Decimal(string: "12.50")!
        let user = SyncUser(handle: "u42", name: "Ada")
        let task = SyncTask(title: "Write", project: project)
        task.due = Date(timeIntervalSinceReferenceDate: 123.25)
        task.estimate = 2.5
        task.priority = 3
        task.payload = Data([0, 1, 2])
        task.token = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        task.link = URL(string: "https://example.com/a")
        task.state = .closed
        task.notes = ["x", "y"]
        task.assignee = user
        context.insert(task)
        let temporary = task.persistentModelID
        try context.save()

        let entries = try container.syncLogEntries()
        #expect(entries.count == 1)
        let entry = try #require(entries.first)
        #expect(entry.sequence == 1)
        #expect(entry.author == "app")
        #expect(entry.timestamp == clock.now)
        #expect(HLCTimestamp(rawValue: entry.stamp).milliseconds == UInt64(clock.now.timeIntervalSince1970 * 1000))
        #expect(entry.changes.count == 3)
        #expect(entry.changes.allSatisfy { $0.kind == .insert && $0.baseVersion == nil && $0.scope == nil })

        let captured = try #require(entry.changes.first { $0.entity == "SyncTask" })
        // "SyncTask/temporary(<UUID>)"
        let uuid = String(temporary.description.dropFirst("SyncTask/temporary(".count).dropLast())
        #expect(UUID(uuidString: uuid) != nil)
        #expect(captured.recordID == uuid)
        #expect(try container.syncRecordID(for: task.persistentModelID) == uuid)
        #expect(try container.persistentIdentifier(forSyncRecord: uuid, entity: "SyncTask") == task.persistentModelID)

        let projectRecord = try #require(entry.changes.first { $0.entity == "SyncProject" })
        let userRecord = try #require(entry.changes.first { $0.entity == "SyncUser" })
        #expect(userRecord.recordID == "u42")
        #expect(UUID(uuidString: projectRecord.recordID) != nil)
        #expect(captured.value(of: "title") == SyncFieldValue(kind: .string, stored: .text("Write")))
        #expect(captured.value(of: "done") == SyncFieldValue(kind: .bool, stored: .integer(0)))
        #expect(captured.value(of: "due") == SyncFieldValue(kind: .date, stored: .real(123.25)))
        #expect(captured.value(of: "estimate") == SyncFieldValue(kind: .double, stored: .real(2.5)))
        #expect(captured.value(of: "priority") == SyncFieldValue(kind: .int, stored: .integer(3)))
        #expect(captured.value(of: "payload") == SyncFieldValue(kind: .data, stored: .blob(Data([0, 1, 2]))))
        #expect(captured.value(of: "token")?.kind == .uuid)
        #expect(captured.value(of: "link") == SyncFieldValue(kind: .url, stored: .text("https://example.com/a")))
        #expect(captured.value(of: "state") == SyncFieldValue(kind: .string, stored: .text("closed")))
        #expect(captured.value(of: "notes") == SyncFieldValue(kind: .json, stored: .text("[\"x\",\"y\"]")))
        #expect(captured.value(of: "project") == .reference(projectRecord.recordID))
        #expect(captured.value(of: "assignee") == .reference("u42"))
        #expect(projectRecord.value(of: "budget") == SyncFieldValue(kind: .decimal, stored: .text("12.5")))
        // A to-many relationship kept by the other side's foreign key is not a field.
        #expect(projectRecord.value(of: "tasks") == nil)
    }

    @Test(
        "an update records only the changed fields with their new values; a delete its record id and last scope; reading later returns what was saved"
    )
    func updateDeleteImmutable() throws {
        let url = syncStoreURL()
        let container = try syncedContainer(at: url, scopes: true)
        let context = ModelContext(container)
        let project = SyncProject(title: "Alpha")
        let task = SyncTask(title: "one", project: project)
        context.insert(task)
        try context.save()
        let taskID = try #require(try container.syncRecordID(for: task.persistentModelID))

        task.title = "two"
        task.priority = 7
        try context.save()
        project.title = "Beta"
        try context.save()
        context.delete(task)
        try context.save()

        let entries = try container.syncLogEntries()
        #expect(entries.map(\.sequence) == [1, 2, 3, 4])
        let insert = try #require(entries[0].changes.first { $0.entity == "SyncTask" })
        #expect(insert.scope == "project:Alpha")
        #expect(insert.value(of: "title")?.stored == .text("one"))
        let update = try #require(entries[1].changes.first)
        #expect(entries[1].changes.count == 1)
        #expect(update.kind == .update)
        #expect(update.recordID == taskID)
        #expect(update.fields.map(\.name).sorted() == ["priority", "title"])
        #expect(update.value(of: "title")?.stored == .text("two"))
        #expect(update.value(of: "priority")?.stored == .integer(7))
        #expect(entries[2].changes.first?.scope == "project:Beta")
        let deletion = try #require(entries[3].changes.first)
        #expect(deletion.kind == .delete)
        #expect(deletion.recordID == taskID)
        #expect(deletion.fields.isEmpty)
        #expect(deletion.scope == "project:Alpha")  // the scope its last captured change had
        #expect(try container.persistentIdentifier(forSyncRecord: taskID, entity: "SyncTask") == nil)

        // The first entry still holds what was saved then, in a new container on the same file.
        let reopened = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
        #expect(try reopened.syncLogEntries() == entries)
        #expect(try reopened.syncLogEntries(after: 1, limit: 2).map(\.sequence) == [2, 3])
        #expect(try reopened.syncLogCount(after: 2) == 2)
    }

    @Test("a reference to a model inserted later in the same save is recorded with that model's record id")
    func referenceFixup() throws {
        let container = try syncedContainer()
        let context = ModelContext(container)
        let task = SyncTask(title: "t")
        context.insert(task)
        let project = SyncProject(title: "p")
        task.project = project  // the project is inserted after the task
        try context.save()
        let entry = try #require(try container.syncLogEntries().first)
        let projectID = try #require(try container.syncRecordID(for: project.persistentModelID))
        let insert = try #require(entry.changes.first { $0.entity == "SyncTask" })
        #expect(insert.value(of: "project") == .reference(projectID))
        task.project = nil
        try context.save()
        let cleared = try #require(try container.syncLogEntries(after: 1).first?.changes.first)
        #expect(cleared.value(of: "project") == .reference(nil))
    }

    @Test("changing the unique attribute that is a record's id fails the save with a typed error and writes nothing")
    func recordIDIsImmutable() throws {
        let container = try syncedContainer()
        let context = ModelContext(container)
        let user = SyncUser(handle: "u1", name: "A")
        context.insert(user)
        try context.save()
        user.handle = "u2"
        #expect(throws: SyncCaptureError.recordIDChanged(entity: "SyncUser", recordID: "u1")) { try context.save() }
        #expect(try container.syncLogCount() == 1)
        context.rollback()
        #expect(try ModelContext(container).fetch(FetchDescriptor<SyncUser>()).map(\.handle) == ["u1"])
        user.name = "B"
        try context.save()
        #expect(try container.syncLogCount() == 2)
    }

    @Test("the clock's stamps grow across saves and restarts, also when the wall clock goes back, and after a remote stamp")
    func hybridLogicalClock() throws {
        let url = syncStoreURL()
        let clock = ManualClock()
        var stamps: [UInt64] = []
        do {
            let container = try syncedContainer(at: url, clock: clock)
            let context = ModelContext(container)
            for index in 0..<3 {
                context.insert(SyncProject(title: "p\(index)"))
                try context.save()
            }
            clock.advance(-3600)  // the wall clock jumps back an hour
            context.insert(SyncProject(title: "late"))
            try context.save()
            stamps = try container.syncLogEntries().map(\.stamp)
        }
        #expect(stamps.count == 4)
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
        #expect(HLCTimestamp(rawValue: stamps[1]).counter == 1)
        // Reopened, the clock still behind: the next stamp is above every earlier one.
        let container = try syncedContainer(at: url, clock: clock)
        let context = ModelContext(container)
        context.insert(SyncProject(title: "after restart"))
        try context.save()
        let afterRestart = try #require(try container.syncLogEntries(after: 4).first?.stamp)
        #expect(afterRestart > stamps[3])
        // A stamp from a server far ahead: every later save is stamped above it.
        let remote = HLCTimestamp(milliseconds: HLCTimestamp(rawValue: afterRestart).milliseconds + 60_000, counter: 9).rawValue
        #expect(try container.advanceSyncClock(receivedStamp: remote) == remote)
        context.insert(SyncProject(title: "after remote"))
        try context.save()
        #expect(try container.syncLogEntries(after: 5).first?.stamp == remote + 1)
        var fresh = HybridLogicalClock(last: HLCTimestamp(rawValue: 5))
        #expect(
            fresh.now(wallMilliseconds: HLCTimestamp.milliseconds(of: Date(timeIntervalSince1970: 1))) == HLCTimestamp(milliseconds: 1000, counter: 0)
        )
    }

    @Test("saves under the sync engine's author are not logged (no echo), yet their rows get records")
    func noEcho() throws {
        let container = try syncedContainer()
        let engine = ModelContext(container)
        engine.author = SyncCaptureConfiguration.defaultEngineAuthor
        let project = SyncProject(title: "from server")
        engine.insert(project)
        try engine.save()
        #expect(try container.syncLogCount() == 0)
        #expect(try container.syncRecordID(for: project.persistentModelID) != nil)
        let app = ModelContext(container)
        app.insert(SyncProject(title: "local"))
        try app.save()
        #expect(try container.syncLogEntries().map { $0.changes.count } == [1])
    }

    @Test("the store remembers that capture is on: a reopened container captures from its first save, with scope nil until the rules come back")
    func captureSurvivesReopen() throws {
        let url = syncStoreURL()
        let clock = ManualClock()
        do {
            let container = try syncedContainer(at: url, clock: clock, scopes: true)
            let context = ModelContext(container)
            context.insert(SyncProject(title: "A"))
            try context.save()
        }
        let reopened = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
        #expect(reopened.isSyncCaptureEnabled)
        let context = ModelContext(reopened)
        context.insert(SyncProject(title: "B"))
        try context.save()
        try reopened.enableSyncCapture(configuration(clock: clock, scopes: true))
        context.insert(SyncProject(title: "C"))
        try context.save()
        let scopes = try reopened.syncLogEntries().map { $0.changes.first?.scope }
        #expect(scopes == ["project:A", nil, "project:C"])
    }

    @Test("a container that never enables capture creates no sync table and logs nothing")
    func offCostsNothing() throws {
        let url = syncStoreURL()
        let container = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        context.insert(SyncTask(title: "t", project: SyncProject(title: "p")))
        try context.save()
        #expect(!container.isSyncCaptureEnabled)
        #expect(try container.syncLogCount() == 0)
        #expect(try sqliteTables(url).filter { $0.hasPrefix("osd_sync") }.isEmpty)
    }

    @Test("pruning never passes a registered consumer's cursor, and the app's deleteHistory never touches the sync log")
    func consumersAndPruning() throws {
        let container = try syncedContainer()
        let context = ModelContext(container)
        for index in 0..<5 {
            context.insert(SyncProject(title: "p\(index)"))
            try context.save()
        }
        #expect(try container.registerSyncConsumer("engine") == 0)
        try container.advanceSyncConsumer("engine", to: 2)
        #expect(try container.syncConsumerCursor("engine") == 2)
        #expect(try container.pruneSyncLog(through: 5) == 2)
        #expect(try container.syncLogEntries().map(\.sequence) == [3, 4, 5])
        // The app removes all of its history: the sync log keeps what the consumer has not read.
        try context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).isEmpty)
        #expect(try container.syncLogEntries().map(\.sequence) == [3, 4, 5])
        try container.advanceSyncConsumer("engine", to: 1)  // never moves back
        #expect(try container.syncConsumerCursor("engine") == 2)
        #expect(throws: SyncCaptureError.self) { try container.advanceSyncConsumer("nobody", to: 1) }
        try container.unregisterSyncConsumer("engine")
        #expect(try container.pruneSyncLog(through: 5) == 3)
        context.insert(SyncProject(title: "after prune"))
        try context.save()
        #expect(try container.syncLogEntries().map(\.sequence) == [6])  // sequences are not reused
        #expect(try container.lastSyncLogSequence() == 6)
    }

    @Test("rows of entities that do not sync are not captured, nor references to them")
    func unsyncedEntities() throws {
        let container = try syncedContainer()
        let context = ModelContext(container)
        context.insert(SyncLocalNote(text: "private"))
        try context.save()
        #expect(try container.syncLogCount() == 0)
    }
}

/// The tables of a store file, read through GRDB directly.
func sqliteTables(_ url: URL) throws -> Set<String> {
    let queue = try GRDBProbe.open(url)
    return queue
}
