import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

@Suite("Sync engine: a server or a device restored from an older backup (properties 10 and 13)")
struct ServerRestoreTests {
    /// Copies the server's database as it is now (a consistent backup, WAL included).
    static func backup(_ server: TestServer, to name: String) throws {
        let live = try DatabaseQueue(path: server.directory.path("server.sqlite"))
        try live.writeWithoutTransaction { db in
            try db.execute(sql: "VACUUM INTO ?", arguments: [server.directory.path(name)])
        }
    }

    /// The server brought back from `name`: the restore gives it a new epoch, as an operator's
    /// restore must, so that clients learn their cursors are from another history.
    static func restore(_ server: TestServer, from name: String) async throws -> SyncService {
        let metadata = try await server.storage.metadata()
        let copy = try DatabaseQueue(path: server.directory.path(name))
        try await copy.write { db in
            try db.execute(sql: "UPDATE osd_metadata SET value = ? WHERE key = 'epoch'", arguments: [UUID().uuidString])
        }
        try copy.close()
        let storage = try SQLiteSyncStorage(path: server.directory.path(name), cursorKey: metadata.cursorKey)
        return try await SyncService(storage: storage, now: { [clock = server.clock] in clock.now() })
    }

    /// What the seed 161 and 680 tests start from: B's note, pulled by A, is not in the backup
    /// the server is restored from; A edits it and learns of the restore while its pushes fail
    /// (a push made against the old epoch would be refused; the reset keeps the note A's
    /// pending edit masks). `directory` keeps the files for the test's duration.
    static func editOfNoteTheRestoreLost() async throws -> (TemporaryDirectory, Device, Device) {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        a.context.insert(Note(title: "in the backup"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        try Self.backup(server, to: "backup.sqlite")
        b.context.insert(Note(title: "b's note"))
        try b.context.save()
        try await b.engine.syncNow()
        try await a.engine.syncNow()

        let restored = try await Self.restore(server, from: "backup.sqlite")
        a.transport.service = restored
        b.transport.service = restored
        let note = try #require(try a.context.fetch(FetchDescriptor<Note>()).first { $0.title == "b's note" })
        note.body = "a's edit"
        try a.context.save()
        a.transport.blockPushes = true
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        a.transport.blockPushes = false
        return (directory, a, b)
    }

    static func titles(_ service: SyncService) async throws -> [String] {
        let pulled = try await service.pull(user: "alice", request: PullRequest(clientID: "probe", limit: 10_000))
        return pulled.changes.compactMap { change -> String? in
            guard change.entity == "Note", case let .string(title)? = change.fields["title"] else { return nil }
            return title
        }.sorted()
    }

    @Test(
        "a push held by the network past a restore from a plain copy (same epoch) is not decided there: the answer the device holds stands (simulator seeds 5203, 7916, 8451)"
    )
    func pushHeldPastPlainCopyRestore() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let aEvents = EventLog(a.engine)
        a.context.insert(Reading(key: "r", value: 1))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        try Self.backup(server, to: "copy.sqlite")

        // B changes the reading; A's change, based on the version before B's, is rejected as
        // stale, and A is told so. The network keeps a copy of A's push.
        try #require(try b.context.fetch(FetchDescriptor<Reading>()).first).value = 2
        try b.context.save()
        try await b.engine.syncNow()
        try #require(try a.context.fetch(FetchDescriptor<Reading>()).first).value = 3
        try a.context.save()
        try await a.engine.syncNow()
        let late = try #require(a.transport.sentPushes.last)
        #expect(await aEvents.waitFor { if case .rejected = $0 { return true } else { return false } } != nil)

        // The database is put back from the copy without a new epoch; the held push arrives
        // there first. Decided, it would apply the save A was told was rejected.
        let metadata = try await server.storage.metadata()
        let storage = try SQLiteSyncStorage(path: directory.path("copy.sqlite"), cursorKey: metadata.cursorKey)
        let restored = try await SyncService(storage: storage, now: { [clock = server.clock] in clock.now() })
        do {
            _ = try await restored.push(user: "alice", request: late)
            Issue.record("the held push was decided by the restored server")
        } catch let error as SyncServiceError {
            #expect(error.error.code == .staleEpoch)
        }
        a.transport.service = restored
        b.transport.service = restored
        for device in [b, a, b, a] { try await device.engine.syncNow() }
        #expect(try a.fetch(Reading.self).map(\.value) == [2])
        #expect(try b.fetch(Reading.self).map(\.value) == [2])
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try await b.engine.pendingChangeCount() == 0)
        try await storage.close()
    }

    @Test("saves the server acknowledged and then lost in a restore are resent from the engine's log, each once; nothing local is deleted")
    func acknowledgedSavesResent() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        a.context.insert(Note(title: "in the backup"))
        try a.context.save()
        try await a.engine.syncNow()
        try Self.backup(server, to: "backup.sqlite")

        a.context.insert(Note(title: "acknowledged, then lost"))
        try a.context.save()
        try await a.engine.syncNow()
        a.context.insert(Note(title: "also lost"))
        try a.context.save()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)

        let restored = try await Self.restore(server, from: "backup.sqlite")
        a.transport.service = restored
        a.context.insert(Note(title: "after the restore"))
        try a.context.save()
        try await a.engine.syncNow()
        try await a.engine.syncNow()

        let all = ["acknowledged, then lost", "after the restore", "also lost", "in the backup"]
        #expect(try a.fetch(Note.self).map(\.title).sorted() == all)
        #expect(try await Self.titles(restored) == all)
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(!events.all.contains { if case .lostInServerRestore = $0 { return true } else { return false } })
        // Another device sees each save once.
        let b = try Device.open(server, directory: directory, name: "b", transport: InMemorySyncTransport(service: restored, user: "alice"))
        try await b.engine.syncNow()
        #expect(try b.fetch(Note.self).map(\.title).sorted() == all)
    }

    @Test(
        "a backup taken with SQLiteMaintenance (osd-server backup) while three devices push, restored with a new epoch (osd-server restore): every acknowledged save is on the restored server exactly once, held by the copy or resent, and the devices converge"
    )
    func onlineBackupRestoredUnderLoad() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let devices = try ["a", "b", "c"].map { try Device.open(server, directory: directory, name: $0) }
        let databasePath = directory.path("server.sqlite")
        let backupPath = directory.path("backup.sqlite")
        var titles: [String] = []
        var backup: Task<SQLiteMaintenance.BackupSummary, any Error>?
        for round in 0..<30 {
            if round == 10 {
                // Taken on another thread while the devices go on saving and pushing.
                backup = Task.detached { try SQLiteMaintenance.backup(databasePath: databasePath, to: backupPath) }
            }
            for (index, device) in devices.enumerated() {
                let title = "\(["a", "b", "c"][index])-\(round)"
                device.context.insert(Note(title: title))
                try device.context.save()
                titles.append(title)
                try await device.engine.syncNow()
            }
        }
        let summary = try #require(try await backup?.value)
        for device in devices { #expect(try await device.engine.pendingChangeCount() == 0, "every save acknowledged") }
        let held = try await DatabaseQueue(path: backupPath).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records WHERE entity = 'Note'") ?? 0
        }
        #expect(held >= 30 && held < 90, "the backup holds the saves made before it (\(held) of 90)")

        try await server.storage.close()
        let change = try SQLiteMaintenance.restore(backup: backupPath, to: databasePath)
        #expect(change.previous == summary.epoch && change.current != summary.epoch)
        let restored = try await SyncService(storage: try SQLiteSyncStorage(path: databasePath), now: { [clock = server.clock] in clock.now() })
        for device in devices { device.transport.service = restored }
        for _ in 0..<2 {
            for device in devices { try await device.engine.syncNow() }
        }
        let all = titles.sorted()
        #expect(try await Self.titles(restored) == all, "each acknowledged save once on the restored server")
        for device in devices {
            #expect(try device.fetch(Note.self).map(\.title).sorted() == all)
            #expect(try await device.engine.pendingChangeCount() == 0)
        }
    }

    @Test("a pull that meets the restore first (nothing to push) also resends the lost saves before the snapshot could delete them")
    func resentOnResetPage() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        a.context.insert(Note(title: "in the backup"))
        try a.context.save()
        try await a.engine.syncNow()
        try Self.backup(server, to: "backup.sqlite")
        a.context.insert(Note(title: "acknowledged, then lost"))
        try a.context.save()
        try await a.engine.syncNow()

        a.transport.service = try await Self.restore(server, from: "backup.sqlite")
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(events.all.contains(.reset(.epochChanged)))
        let all = ["acknowledged, then lost", "in the backup"]
        #expect(try a.fetch(Note.self).map(\.title).sorted() == all)
        #expect(try await Self.titles(a.transport.service) == all)
        #expect(try await a.engine.pendingChangeCount() == 0)
    }

    @Test(
        "a push delayed past a restore is not decided by the restored server: the device resends it and learns the restored server's answer (simulator seeds 153, 603, 1955)"
    )
    func pushDelayedPastRestore() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let aEvents = EventLog(a.engine)
        a.context.insert(Reading(key: "weight", value: 70))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        try Self.backup(server, to: "backup.sqlite")

        // Applied and acknowledged; a copy of the request is held by the network (a proxy's retry).
        let aReading = try #require(try a.context.fetch(FetchDescriptor<Reading>()).first)
        aReading.value = 71
        try a.context.save()
        try await a.engine.syncNow()
        let late = try #require(a.transport.sentPushes.last { !$0.mutations.isEmpty })

        // Restored; another device's edit of the reading lands first, then the held copy
        // arrives: deciding it now would reject it (stale), an answer the device never asks for.
        let restored = try await Self.restore(server, from: "backup.sqlite")
        a.transport.service = restored
        b.transport.service = restored
        let bReading = try #require(try b.context.fetch(FetchDescriptor<Reading>()).first)
        bReading.value = 72
        try b.context.save()
        try await b.engine.syncNow()
        try await b.engine.syncNow()
        await #expect(throws: SyncServiceError.self) { _ = try await restored.push(user: "alice", request: late) }

        // The device learns of the restore, resends its save, and is told it lost.
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        let event = await aEvents.waitFor { if case .rejected = $0 { return true } else { return false } }
        guard case let .rejected(rejection)? = event else {
            Issue.record("the save the restored server does not hold was never reported: \(aEvents.all)")
            return
        }
        #expect(rejection.reason == .stale && rejection.records.map(\.recordID) == ["weight"])
        #expect(try a.fetch(Reading.self).map(\.value) == [72])
        #expect(try b.fetch(Reading.self).map(\.value) == [72])
        #expect(try await a.engine.pendingChangeCount() == 0)
    }

    @Test(
        "a device that has not finished a download pushes nothing until it has: a copy of its push held past a restore carries a cursor, so the restored server does not apply a save the device was told was rejected (simulator seed 6203)"
    )
    func pushBeforeFirstDownloadHeldPastRestore() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        _ = try await Device.bobSharingPlan(server, directory: directory)
        try Self.backup(server, to: "backup.sqlite")
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")

        // A new device of alice saves into the scope she lost; its first download fails.
        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        let idea = Note(title: "alice's idea")
        idea.space = "team:t1"
        a.context.insert(idea)
        try a.context.save()
        a.transport.onPull { _ in throw SyncTransportError.unreachable("answer lost") }
        _ = try? await a.engine.syncNow()
        a.transport.onPull(nil)
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        let rejected = await events.waitFor {
            if case let .rejected(rejection) = $0 { return rejection.reason == .scopeNotGranted } else { return false }
        }
        #expect(rejected != nil)
        #expect(try a.noteState().isEmpty)

        // A copy of the push, held by the network, reaches the server restored from the backup
        // (where alice still holds the grant): it must not be decided there.
        let late = try #require(a.transport.sentPushes.first { !$0.mutations.isEmpty })
        #expect(late.cursor != nil)
        let restored = try await Self.restore(server, from: "backup.sqlite")
        _ = try? await restored.push(user: "alice", request: late)
        let page = try await restored.pull(user: "alice", request: PullRequest(clientID: "probe", cursor: nil, limit: 1000))
        #expect(!page.changes.contains { $0.fields["title"] == .string("alice's idea") })
    }

    @Test(
        "a restore from a plain copy (same epoch) that the cursor does not pass: saves acknowledged after the copy are resent when a page's last id is below them (simulator seed 953)"
    )
    func plainCopyLostAcknowledgedSaves() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        a.context.insert(Note(title: "in the backup"))
        try a.context.save()
        try await a.engine.syncNow()
        try Self.backup(server, to: "backup.sqlite")

        // Pushed and acknowledged, but the pull after it fails: the cursor stays at the copy's head.
        a.transport.onPull { _ in throw SyncTransportError.unreachable("answer lost") }
        a.context.insert(Note(title: "acknowledged, then lost"))
        try a.context.save()
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        a.transport.onPull(nil)

        // The copy keeps its epoch: the cursor is valid there, so no reset says what was lost.
        let metadata = try await server.storage.metadata()
        let storage = try SQLiteSyncStorage(path: server.directory.path("backup.sqlite"), cursorKey: metadata.cursorKey)
        a.transport.service = try await SyncService(storage: storage, now: { [clock = server.clock] in clock.now() })
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        let all = ["acknowledged, then lost", "in the backup"]
        #expect(try await Self.titles(a.transport.service) == all)
        #expect(try a.fetch(Note.self).map(\.title).sorted() == all)
        #expect(try await a.engine.pendingChangeCount() == 0)
    }

    @Test(
        "a resent save whose values another device's later edit had replaced locally: the device shows the server's values after the resend (simulator seed 181)"
    )
    func resentSaveShowsServerValues() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        a.context.insert(Note(title: "in the backup"))
        try a.context.save()
        try await a.engine.syncNow()
        try Self.backup(server, to: "backup.sqlite")

        a.context.insert(Note(title: "mine"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        let theirs = try #require(try b.context.fetch(FetchDescriptor<Note>()).first { $0.title == "mine" })
        theirs.body = "b's edit"
        try b.context.save()
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["in the backup||false|-|", "mine|b's edit|false|-|"])

        // The restore lost both saves; only A syncs again: its insert is resent as it was.
        a.transport.service = try await Self.restore(server, from: "backup.sqlite")
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        let c = try Device.open(
            server, directory: directory, name: "c", transport: InMemorySyncTransport(service: a.transport.service, user: "alice"))
        try await c.engine.syncNow()
        #expect(try c.noteState() == ["in the backup||false|-|", "mine||false|-|"])
        #expect(try a.noteState() == (try c.noteState()))
        #expect(try await a.engine.pendingChangeCount() == 0)
    }

    @Test(
        "an edit rejected as recordNotFound by a restored server, then the record resent by its creator: the rollback keeps the record (simulator seed 161)"
    )
    func rejectedEditOfRecordResentLater() async throws {
        let (directory, a, b) = try await Self.editOfNoteTheRestoreLost()
        defer { withExtendedLifetime(directory) {} }
        // A's edit reaches the restored server before B resends the note: rejected, but the
        // pull that would settle it fails.
        a.transport.onPull { _ in throw SyncTransportError.unreachable("answer lost") }
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        a.transport.onPull(nil)
        try await b.engine.syncNow()
        try await b.engine.syncNow()

        // A's next download holds the note again: the rejection rolls the edit back, it does
        // not delete the note.
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try b.noteState() == ["b's note||false|-|", "in the backup||false|-|"])
        #expect(try a.noteState() == (try b.noteState()))
        #expect(try await a.engine.pendingChangeCount() == 0)
    }

    @Test(
        "an edit rejected as recordNotFound by a restored server, answered only after the record, resent by its creator, was pulled in an earlier download: the rollback keeps the record (simulator seed 680)"
    )
    func rejectedEditAnsweredAfterRecordPulled() async throws {
        let (directory, a, b) = try await Self.editOfNoteTheRestoreLost()
        defer { withExtendedLifetime(directory) {} }
        // A's edit reaches the restored server before B resends the note: rejected, but the
        // answer is lost and so is the pull.
        a.transport.onPush { _, _ in throw SyncTransportError.unreachable("answer lost") }
        a.transport.onPull { _ in throw SyncTransportError.unreachable("answer lost") }
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        a.transport.onPush(nil)
        a.transport.onPull(nil)
        try await b.engine.syncNow()
        try await b.engine.syncNow()
        // A downloads the note B resent while its edit is still unanswered (pushes fail)...
        a.transport.blockPushes = true
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        a.transport.blockPushes = false
        // ...then the server answers the edit again from its stored results: rejected, "no
        // such record", older than the note A pulled. The rollback keeps the note.
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try b.noteState() == ["b's note||false|-|", "in the backup||false|-|"])
        #expect(try a.noteState() == (try b.noteState()))
        #expect(try await a.engine.pendingChangeCount() == 0)
    }

    @Test("acknowledged saves older than the engine's retention window are reported as lostInServerRestore, not resent, and the queue keeps flowing")
    func lostBeyondRetention() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let url = directory.file("a.sqlite")
        let container = try ModelContainer(for: Schema(engineTestTypes + [Unsynced.self]), configurations: ModelConfiguration(url: url))
        var configuration = Device.configuration()
        configuration.acknowledgedMutationRetention = 1
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        let engine = try SyncEngine(
            container: container, transport: transport, user: "alice", configuration: configuration, clock: server.clock, seed: 7)
        let events = EventLog(engine)
        let context = ModelContext(container)
        context.insert(Note(title: "in the backup"))
        try context.save()
        try await engine.syncNow()
        try Self.backup(server, to: "backup.sqlite")
        for title in ["lost for good", "resent"] {
            context.insert(Note(title: title))
            try context.save()
            try await engine.syncNow()
        }

        let restored = try await Self.restore(server, from: "backup.sqlite")
        transport.service = restored
        context.insert(Note(title: "after the restore"))
        try context.save()
        try await engine.syncNow()
        try await engine.syncNow()

        let lost = events.all.compactMap { event -> [MutationID]? in
            if case let .lostInServerRestore(ids) = event { return ids } else { return nil }
        }
        #expect(lost == [[2]])
        #expect(try await Self.titles(restored) == ["after the restore", "in the backup", "resent"])
        #expect(try ModelContext(container).fetch(FetchDescriptor<Note>()).map(\.title).sorted() == ["after the restore", "in the backup", "resent"])
        #expect(try await engine.pendingChangeCount() == 0)
    }

    @Test(
        "a device restored from a backup of its store takes a new client id: its new save and the saves made after the backup all stay, nothing doubled or deleted"
    )
    func deviceRestoredFromBackup() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        do {
            let a = try Device.open(server, directory: directory, name: "a")
            a.context.insert(Note(title: "before the backup"))
            try a.context.save()
            try await a.engine.syncNow()
            let live = try DatabaseQueue(path: directory.path("a.sqlite"))
            try await live.writeWithoutTransaction { db in
                try db.execute(sql: "VACUUM INTO ?", arguments: [directory.path("a-backup.sqlite")])
            }
            try live.close()
            a.context.insert(Note(title: "after the backup"))
            try a.context.save()
            try await a.engine.syncNow()
        }

        let restored = try Device.open(server, url: directory.file("a-backup.sqlite"), directory: directory)
        let clientBefore = await restored.engine.currentClientID
        restored.context.insert(Note(title: "on the restored device"))
        try restored.context.save()
        try await restored.engine.syncNow()
        try await restored.engine.syncNow()
        #expect(await restored.engine.currentClientID != clientBefore)
        let all = ["after the backup||false|-|", "before the backup||false|-|", "on the restored device||false|-|"]
        #expect(try restored.noteState() == all)
        #expect(try await restored.engine.pendingChangeCount() == 0)
        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()
        #expect(try b.noteState() == all)
    }
}
