import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

@Suite("Sync engine: push, pull and convergence against the real server core")
struct ConvergenceTests {
    @Test("two clients converge: inserts, updates and to-one relationships travel both ways, nothing echoes back")
    func twoClientsConverge() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")

        let folder = Folder(name: "Home")
        a.context.insert(folder)
        a.context.insert(Note(title: "Milk", body: "2 litres", folder: folder))
        try a.context.save()
        #expect(try await a.engine.pendingChangeCount() == 1)
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)

        try await b.engine.syncNow()
        #expect(try b.noteState() == ["Milk|2 litres|false|Home|"])

        let note = try #require(try b.context.fetch(FetchDescriptor<Note>()).first)
        note.body = "3 litres"
        note.pinned = true
        try b.context.save()
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["Milk|3 litres|true|Home|"])
        #expect(try a.noteState() == b.noteState())
        // Pulled changes are applied under the engine's author: nothing to push back.
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try await b.engine.pendingChangeCount() == 0)
        #expect(try a.container.syncLogCount(after: try a.container.syncConsumerCursor("OpenSwiftDataSync.outbox") ?? 0) == 0)
        let pushesBefore = a.transport.sentPushes.count
        try await a.engine.syncNow()
        #expect(a.transport.sentPushes.count == pushesBefore)
    }

    @Test("offline saves are pushed later, each exactly once, with ids growing by one")
    func offlineThenOnline() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        a.transport.online = false
        for index in 1...3 {
            a.context.insert(Note(title: "offline \(index)"))
            try a.context.save()
        }
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        #expect(try await a.engine.pendingChangeCount() == 3)
        a.transport.online = true
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["offline 1||false|-|", "offline 2||false|-|", "offline 3||false|-|"])
        let ids = a.transport.sentPushes.flatMap { $0.mutations.map(\.id) }
        #expect(ids == [1, 2, 3])
    }

    @Test("an answer lost after the server applied the batch: the same batch is resent, applied once")
    func lostAnswerResentExactlyOnce() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        a.context.insert(Note(title: "once"))
        try a.context.save()
        a.transport.onPush { _, _ in throw SyncTransportError.unreachable("answer lost") }
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        a.context.insert(Note(title: "twice?"))
        try a.context.save()
        a.transport.onPush(nil)
        try await a.engine.syncNow()
        let pushes = a.transport.sentPushes
        // The first request's mutations are resent byte for byte (the request also carries
        // the pull cursor, which the pull in between moved); the new save goes in a batch after it.
        #expect(pushes.count == 3)
        #expect(pushes[0].clientID == pushes[1].clientID && pushes[0].mutations == pushes[1].mutations)
        #expect(pushes[2].mutations.map(\.id) == [2])
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["once||false|-|", "twice?||false|-|"])
    }

    @Test(
        "a field with an unpushed local edit keeps its local value while pulled changes apply to the others; the server's decision lands after the push"
    )
    func rebaseUnderPendingEdit() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        a.context.insert(Note(title: "Plan", body: "v1"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()

        // A edits the title offline (pushes fail, pulls work).
        let aNote = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        aNote.title = "Plan (A)"
        try a.context.save()
        server.clock.advance(1)
        // B edits the title and the body later, and pushes.
        let bNote = try #require(try b.context.fetch(FetchDescriptor<Note>()).first)
        bNote.title = "Plan (B)"
        bNote.body = "v2"
        try b.context.save()
        try await b.engine.syncNow()

        a.transport.blockPushes = true
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        // Read-your-writes: A still sees its own title, and B's body.
        #expect(try a.noteState() == ["Plan (A)|v2|false|-|"])
        #expect(try await a.engine.hasPendingChanges(for: aNote.persistentModelID))

        // A's edit is older than B's (by the clock): the server keeps B's title, and A shows it
        // once its mutation is settled.
        a.transport.blockPushes = false
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try a.noteState() == ["Plan (B)|v2|false|-|"])
        #expect(try a.noteState() == b.noteState())
        #expect(try await !a.engine.hasPendingChanges(for: aNote.persistentModelID))

        // A later local edit wins.
        server.clock.advance(1)
        aNote.title = "Plan (A2)"
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["Plan (A2)|v2|false|-|"])
        #expect(try a.noteState() == b.noteState())
    }

    @Test("deletes travel with local delete rules: a cascade removes the children on the other device; a delete under a pending edit wins")
    func deletesWithRules() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let folder = Folder(name: "Trip")
        a.context.insert(folder)
        a.context.insert(Note(title: "Tickets", folder: folder))
        a.context.insert(Note(title: "Hotel", folder: folder))
        a.context.insert(Note(title: "Loose"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try b.fetch(Note.self).count == 3)

        a.context.delete(folder)
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try b.fetch(Folder.self).isEmpty)
        #expect(try b.noteState() == ["Loose||false|-|"])
        #expect(try a.noteState() == b.noteState())

        // B edits the loose note while A deletes it: the delete is not lost.
        let loose = try #require(try b.context.fetch(FetchDescriptor<Note>()).first)
        loose.body = "edited"
        try b.context.save()
        let aLoose = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        a.context.delete(aLoose)
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try b.fetch(Note.self).isEmpty)
        #expect(try a.fetch(Note.self).isEmpty)
    }

    @Test("a record deleted and inserted again on the server while this device has an unpushed edit of it arrives whole (simulator seed 58)")
    func reinsertUnderPendingEdit() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        a.context.insert(Reading(key: "r", value: 1))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()

        // B edits the record but cannot push; A deletes it and inserts it again (same key).
        b.transport.blockPushes = true
        let mine = try #require(try b.context.fetch(FetchDescriptor<Reading>()).first)
        mine.value = 5
        try b.context.save()
        let theirs = try #require(try a.context.fetch(FetchDescriptor<Reading>()).first)
        a.context.delete(theirs)
        try a.context.save()
        try await a.engine.syncNow()
        a.context.insert(Reading(key: "r", value: 2))
        try a.context.save()
        try await a.engine.syncNow()

        // B's pull holds the delete and the insert while its edit masks `value`: the insert
        // makes a new row, so it is applied whole (a row without `value` wedged every pull),
        // with the pending edit's value on top: B keeps seeing its edit until the server
        // decides (seed 420: showing the insert's value instead, B ended with it although the
        // server applied the edit).
        await #expect(throws: SyncEngineError.self) { try await b.engine.syncNow() }
        #expect(try b.fetch(Reading.self).map(\.value) == [5])
        b.transport.blockPushes = false
        try await b.engine.syncNow()
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await b.engine.pendingChangeCount() == 0)
        #expect(try b.fetch(Reading.self).map(\.value) == (try a.fetch(Reading.self).map(\.value)))
    }

    @Test(
        "an edit made after the server deleted and inserted a record again, pulled before it is pushed, is what both devices end with (simulator seed 420)"
    )
    func reinsertBeforeLaterPendingEdit() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        func note(_ title: String) -> RecordChange {
            RecordChange(
                op: .insert, entity: "Note", recordID: "n1", scope: .user("alice"),
                fields: ["title": .string(title), "body": .string(""), "pinned": .bool(false), "folder": .null, "space": .null])
        }
        func push(_ id: MutationID, _ changes: [RecordChange]) async throws {
            _ = try await server.service.push(
                user: "alice",
                request: PushRequest(
                    clientID: "other",
                    mutations: [
                        Mutation(id: id, stamp: HLCTimestamp(milliseconds: 1_700_000_000_000 + UInt64(id), counter: 0), changes: changes)
                    ]))
        }
        try await push(1, [note("first")])
        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()

        // Another client deletes the note and inserts it again (same id); B, which has not
        // pulled that, edits it later and cannot push.
        try await push(2, [RecordChange(op: .delete, entity: "Note", recordID: "n1", scope: .user("alice"))])
        try await push(3, [note("again")])
        b.transport.blockPushes = true
        let mine = try #require(try b.context.fetch(FetchDescriptor<Note>()).first)
        mine.title = "mine"
        try b.context.save()

        // B pulls the delete and the insert: its pending edit stays what it shows.
        await #expect(throws: SyncEngineError.self) { try await b.engine.syncNow() }
        #expect(try b.noteState() == ["mine||false|-|"])
        // The server applies the later edit; settling it leaves B showing it.
        b.transport.blockPushes = false
        try await b.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try await b.engine.pendingChangeCount() == 0)
        let a = try Device.open(server, directory: directory, name: "a")
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["mine||false|-|"])
        #expect(try b.noteState() == ["mine||false|-|"])
    }

    @Test(
        "a record moved into a folder that another device deletes (cascade) survives on this device, its move rolled back (simulator seeds 1286, 1912)"
    )
    func moveIntoFolderDeletedElsewhere() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let folder = Folder(name: "Trip")
        a.context.insert(folder)
        a.context.insert(Note(title: "Loose"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()

        // B moves the note into the folder but cannot push; A deletes the folder (its notes
        // cascade; the note is not among them on the server).
        b.transport.blockPushes = true
        let note = try #require(try b.context.fetch(FetchDescriptor<Note>()).first)
        let folderOnB: Folder = try #require(try b.context.fetch(FetchDescriptor<Folder>()).first)
        note.folder = folderOnB
        try b.context.save()
        let aFolder = try #require(try a.context.fetch(FetchDescriptor<Folder>()).first)
        a.context.delete(aFolder)
        try a.context.save()
        try await a.engine.syncNow()

        // B pulls the folder's delete: its local cascade must not reach the note the server
        // keeps (deleted, the rejected move's rollback wrote `folder` alone into a new row and
        // every later pull failed).
        await #expect(throws: SyncEngineError.self) { try await b.engine.syncNow() }
        #expect(try b.noteState() == ["Loose||false|-|"])
        b.transport.blockPushes = false
        try await b.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try await b.engine.pendingChangeCount() == 0)
        #expect(try b.fetch(Folder.self).isEmpty)
        #expect(try b.noteState() == ["Loose||false|-|"])
        #expect(try a.noteState() == b.noteState())
    }

    @Test(
        "a pending note whose folder a pull deleted, then inserted again: once the note's insert is accepted, the device shows the folder the server gave it (simulator seed 3617)"
    )
    func referenceClearedByPulledDeleteThenSettled() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        func push(_ id: MutationID, _ changes: [RecordChange]) async throws {
            _ = try await server.service.push(
                user: "alice",
                request: PushRequest(
                    clientID: "other",
                    mutations: [
                        Mutation(id: id, stamp: HLCTimestamp(milliseconds: 1_700_000_000_000 + UInt64(id), counter: 0), changes: changes)
                    ]))
        }
        let folder = RecordChange(op: .insert, entity: "Folder", recordID: "f1", scope: .user("alice"), fields: ["name": .string("Trip")])
        try await push(1, [folder])
        let a = try Device.open(server, directory: directory, name: "a")
        try await a.engine.syncNow()

        // A files a new note in the folder but cannot push; another client deletes the folder.
        a.transport.blockPushes = true
        let folderOnA: Folder = try #require(try a.context.fetch(FetchDescriptor<Folder>()).first)
        a.context.insert(Note(title: "Packing", folder: folderOnA))
        try a.context.save()
        try await push(2, [RecordChange(op: .delete, entity: "Folder", recordID: "f1", scope: .user("alice"))])

        // A pulls the delete: it does not cascade to the pending note, whose folder is cleared
        // locally, without a local change of its own.
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        #expect(try a.noteState() == ["Packing||false|-|"])

        // The folder is inserted again under its id; A's insert (folder f1) is then accepted as
        // pushed, and settling it must leave A showing the folder the server holds.
        try await push(3, [folder])
        a.transport.blockPushes = false
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["Packing||false|Trip|"])
        #expect(try a.noteState() == b.noteState())
    }

    @Test(
        "a device that saves without pause still syncs: its first download and the pages that settle its own saves do not wait for the saves to stop")
    func syncsWhileSavingWithoutPause() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let container = a.container
        let saving = Task.detached {
            let context = ModelContext(container)
            for index in 0..<400 {
                context.insert(Note(title: "burst \(index)"))
                try context.save()
            }
        }
        // Saves land while each page is applied: the first download (empty) and the pulls
        // that only settle this device's echoed saves write no model, so they do not race.
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        try await saving.value
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()
        #expect(try b.fetch(Note.self).count == 400)
    }

    @Test("a child that arrives before its parent is kept and linked when the parent arrives")
    func childBeforeParent() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        // Another client pushes the note first and its folder in a later mutation.
        let note = RecordChange(
            op: .insert, entity: "Note", recordID: "n1", scope: .user("alice"),
            fields: ["title": .string("Orphan"), "body": .string(""), "pinned": .bool(false), "folder": .reference("f1"), "space": .null])
        let folder = RecordChange(op: .insert, entity: "Folder", recordID: "f1", scope: .user("alice"), fields: ["name": .string("Later")])
        _ = try await server.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "other",
                mutations: [
                    Mutation(id: 1, stamp: HLCTimestamp(milliseconds: 1_800_000_000_000, counter: 0), changes: [note])
                ]))
        let b = try Device.open(server, directory: directory, name: "b", pageSize: 1)
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["Orphan||false|-|"])
        #expect(try b.container.pendingSyncReferenceCount() == 1)
        _ = try await server.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "other",
                mutations: [
                    Mutation(id: 2, stamp: HLCTimestamp(milliseconds: 1_800_000_000_001, counter: 0), changes: [folder])
                ]))
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["Orphan||false|Later|"])
        #expect(try b.container.pendingSyncReferenceCount() == 0)
    }

    @Test("many-to-many links merge: one device adds a tag while the other removes another")
    func manyToMany() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let work = Tag(name: "work")
        let home = Tag(name: "home")
        let urgent = Tag(name: "urgent")
        let note = Note(title: "Taxes")
        a.context.insert(note)
        a.context.insert(urgent)
        note.tags = [work, home]
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["Taxes||false|-|home,work"])

        note.tags.append(urgent)
        try a.context.save()
        let bNote = try #require(try b.context.fetch(FetchDescriptor<Note>()).first)
        bNote.tags.removeAll { $0.name == "home" }
        try b.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["Taxes||false|-|urgent,work"])
        #expect(try a.noteState() == b.noteState())
    }

    @Test("a first download in pages reports its progress (records received of total) on the events and on downloadProgress")
    func initialDownloadProgress() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        for index in 0..<25 { a.context.insert(Note(title: "n\(index)")) }
        try a.context.save()
        try await a.engine.syncNow()

        let b = try Device.open(server, directory: directory, name: "b", pageSize: 10)
        let events = EventLog(b.engine)
        try await b.engine.syncNow()
        #expect(try b.fetch(Note.self).count == 25)
        let progress = events.all.compactMap { event -> PullProgress? in
            if case let .progress(value) = event { return value }
            return nil
        }
        #expect(progress.map(\.received) == [10, 20, 25])
        #expect(progress.allSatisfy { $0.total == 25 })
        var latest: PullProgress?
        for await value in b.engine.downloadProgress {
            latest = value
            break
        }
        #expect(latest == PullProgress(received: 25, total: 25))
    }

    @Test("local saves racing with pulls of many pages: every local edit is kept or pushed, and both devices converge")
    func savesDuringPulls() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b", pageSize: 5)
        for index in 0..<60 { a.context.insert(Note(title: "remote \(index)")) }
        try a.context.save()
        try await a.engine.syncNow()
        let container = b.container
        let writer = Task.detached {
            let context = ModelContext(container)
            for index in 0..<40 {
                context.insert(Note(title: "local \(index)"))
                try context.save()
                await Task.yield()
            }
        }
        try await b.engine.syncNow()
        try await writer.value
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try b.fetch(Note.self).count == 100)
        #expect(try a.noteState() == b.noteState())
        #expect(try await b.engine.pendingChangeCount() == 0)
    }

    @Test(
        "an edit that loses to a later write of the value the field already held shows the server's value once pushed (simulator seeds 3111, 9896)"
    )
    func editLosingToSameValueWrite() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let c = try Device.open(server, directory: directory, name: "c")
        a.context.insert(Note(title: "t0"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        try await c.engine.syncNow()

        // A sets t3; B pulls it and sets t2 without pushing; C, which has not pulled A's edit,
        // sets t3 (and the body) later than B: the server already holds t3, so C's write logs
        // the body alone.
        server.clock.advance(1)
        try #require(try a.context.fetch(FetchDescriptor<Note>()).first).title = "t3"
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        server.clock.advance(1)
        try #require(try b.context.fetch(FetchDescriptor<Note>()).first).title = "t2"
        try b.context.save()
        server.clock.advance(1)
        let cNote = try #require(try c.context.fetch(FetchDescriptor<Note>()).first)
        cNote.title = "t3"
        cNote.body = "c"
        try c.context.save()
        try await c.engine.syncNow()

        // B's edit is older than C's: the server keeps t3, and B shows it once its edit settles.
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        try await c.engine.syncNow()
        #expect(try await b.engine.pendingChangeCount() == 0)
        #expect(try b.noteState() == ["t3|c|false|-|"])
        #expect(try a.noteState() == b.noteState())
        #expect(try c.noteState() == b.noteState())
    }

    @Test(
        "an edit refused as recordDeleted, of a record this device inserted and another deleted, leaves no row of its fields behind (simulator seed 3500)"
    )
    func refusedEditOfRecordDeletedElsewhere() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        // One mutation per push, so that one answer can be lost while the other arrives.
        var configuration = Device.configuration()
        configuration.maxMutationsPerPush = 1
        let url = directory.file("a.sqlite")
        let container = try ModelContainer(for: Schema(engineTestTypes + [Unsynced.self]), configurations: ModelConfiguration(url: url))
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        let engine = try SyncEngine(
            container: container, transport: transport, user: "alice", configuration: configuration, clock: server.clock, seed: seed(of: "a"))
        let a = Device(url: url, container: container, engine: engine, inMemory: transport, context: ModelContext(container))
        let events = EventLog(a.engine)
        let b = try Device.open(server, directory: directory, name: "b")

        // A's insert is applied, its answer lost: A pulls its own insert while it is unanswered.
        a.context.insert(Note(title: "draft"))
        try a.context.save()
        a.transport.onPush { _, result in
            _ = try result.get()
            throw SyncTransportError.unreachable("the answer was lost")
        }
        _ = try? await a.engine.syncNow()
        // B deletes the note; A edits it.
        try await b.engine.syncNow()
        b.context.delete(try #require(try b.context.fetch(FetchDescriptor<Note>()).first))
        try b.context.save()
        try await b.engine.syncNow()
        try #require(try a.context.fetch(FetchDescriptor<Note>()).first).body = "edit"
        try a.context.save()

        // The insert's answer arrives, the edit's is lost (refused: recordDeleted): the pull
        // applies B's delete while the edit is still pending.
        a.transport.onPush { request, result in
            let response = try result.get()
            if request.mutations.first?.id == 2 { throw SyncTransportError.unreachable("the answer was lost") }
            return response
        }
        _ = try? await a.engine.syncNow()
        a.transport.onPush(nil)
        // The edit's refusal settles: nothing of the deleted note comes back, and syncing goes on.
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try a.fetch(Note.self).isEmpty)
        let rejected = await events.waitFor {
            if case let .rejected(rejection) = $0 { return rejection.reason == .recordDeleted } else { return false }
        }
        #expect(rejected != nil)
    }

}
