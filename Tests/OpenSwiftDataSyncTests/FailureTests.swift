import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

@Suite("Sync engine: failures, bad answers, reset, revoke, sign-out")
struct FailureTests {
    @Test("backoff is capped, exponential and jittered from the seed: the same seed gives the same delays")
    func backoff() {
        let backoff = SyncBackoff(base: .milliseconds(500), cap: .seconds(8))
        var first = SyncRandom(seed: 7)
        var second = SyncRandom(seed: 7)
        let delays = (1...12).map { backoff.delay(attempt: $0, using: &first) }
        #expect(delays == (1...12).map { backoff.delay(attempt: $0, using: &second) })
        for (index, delay) in delays.enumerated() {
            #expect(delay >= 0)
            #expect(delay <= min(8, 0.5 * Double(1 << index)))
        }
        #expect(Set(delays).count > 1)
    }

    @Test(
        "a page of another protocol version, or malformed: a typed error event, nothing applied, the queue intact (records of entities the app does not sync are skipped: see MixedVersionTests)"
    )
    func badAnswers() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let events = EventLog(b.engine)
        a.context.insert(Note(title: "from A"))
        try a.context.save()
        try await a.engine.syncNow()
        b.context.insert(Note(title: "pending on B"))
        try b.context.save()
        b.transport.blockPushes = true

        b.transport.onPull { page in
            var page = page
            page.protocolVersion = ProtocolVersion(rawValue: 99)
            return page
        }
        await #expect(throws: SyncEngineError.unsupportedProtocolVersion(server: 99)) { try await b.engine.syncNow() }
        b.transport.onPull { _ in throw SyncTransportError.malformedResponse("not JSON") }
        await #expect(throws: SyncEngineError.transport(.malformedResponse("not JSON"))) { try await b.engine.syncNow() }
        b.transport.onPull { page in
            var page = page
            for index in page.changes.indices { page.changes[index].fields["title"] = .int(5) }
            return page
        }
        await #expect(throws: SyncEngineError.self) { try await b.engine.syncNow() }
        #expect(try b.noteState() == ["pending on B||false|-|"])
        #expect(try await b.engine.pendingChangeCount() == 1)
        #expect(events.all.contains(.error(.unsupportedProtocolVersion(server: 99))))

        b.transport.onPull(nil)
        b.transport.blockPushes = false
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try b.noteState() == ["from A||false|-|", "pending on B||false|-|"])
        #expect(try a.noteState() == b.noteState())
    }

    @Test("a page that fails to apply ends the download: the request for the next page, already sent, has ended when syncNow returns")
    func failedPageWaitsForPrefetchedPage() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let log = RequestLog()
        let inner = InMemorySyncTransport(service: server.service, user: "alice")
        let transport = SlowSecondPull(inner: inner, log: log)
        let b = try Device.open(server, directory: directory, name: "b", pageSize: 2, transport: inner)
        let engine = try SyncEngine(
            container: b.container, transport: transport, user: "alice", configuration: Device.configuration(pageSize: 2), clock: server.clock,
            seed: 7)
        try await engine.syncNow()
        for index in 0..<6 {
            a.context.insert(Note(title: "n\(index)"))
            try a.context.save()
        }
        try await a.engine.syncNow()
        inner.onPull { page in
            var page = page
            for index in page.changes.indices { page.changes[index].fields["title"] = .int(5) }
            return page
        }
        log.reset()
        await #expect(throws: SyncEngineError.self) { try await engine.syncNow() }
        log.add("returned")
        try await Task.sleep(for: .milliseconds(600))
        #expect(log.entries.filter { $0 == "start" }.count == 2, "the next page was not asked for before the first was applied: \(log.entries)")
        #expect(log.entries.last == "returned", "a pull request ran on after syncNow returned: \(log.entries)")
        inner.onPull(nil)
        try await engine.syncNow()
        #expect(try b.noteState().count == 6)
    }

    @Test("history compacted past an offline client's cursor: it downloads again, keeps its unpushed edit, and learns of deletes")
    func resetAfterCompaction() async throws {
        let directory = try TemporaryDirectory()
        var settings = SyncServiceConfiguration()
        settings.retention = 3600
        let server = try await TestServer(configuration: settings, directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let bEvents = EventLog(b.engine)
        a.context.insert(Note(title: "keep"))
        a.context.insert(Note(title: "doomed"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try b.fetch(Note.self).count == 2)

        b.transport.online = false
        let bKeep = try #require(try b.context.fetch(FetchDescriptor<Note>()).first { $0.title == "keep" })
        bKeep.body = "offline edit on B"
        try b.context.save()
        let doomed = try #require(try a.context.fetch(FetchDescriptor<Note>()).first { $0.title == "doomed" })
        a.context.delete(doomed)
        a.context.insert(Note(title: "new on A"))
        try a.context.save()
        try await a.engine.syncNow()
        server.clock.advance(7200)
        _ = try await server.service.compact()

        b.transport.online = true
        try await b.engine.syncNow()
        try await a.engine.syncNow()
        #expect(bEvents.all.contains(.reset(.historyCompacted)), "\(bEvents.all)")
        let bState = try b.noteState()
        #expect(bState == ["keep|offline edit on B|false|-|", "new on A||false|-|"], "\(bState) \(bEvents.all)")
        #expect(try a.noteState() == b.noteState())
    }

    @Test("a reset's download replaces a record's links: a tag removed while the client was offline goes (simulator seed 170)")
    func resetRemovesUnlinkedTag() async throws {
        let directory = try TemporaryDirectory()
        var settings = SyncServiceConfiguration()
        settings.retention = 3600
        let server = try await TestServer(configuration: settings, directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let bEvents = EventLog(b.engine)
        let note = Note(title: "Taxes")
        a.context.insert(note)
        note.tags = [Tag(name: "work"), Tag(name: "home")]
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["Taxes||false|-|home,work"])

        // A unlinks "home" while B is offline; the history is compacted past B's cursor.
        b.transport.online = false
        note.tags.removeAll { $0.name == "home" }
        try a.context.save()
        try await a.engine.syncNow()
        server.clock.advance(7200)
        _ = try await server.service.compact()

        b.transport.online = true
        try await b.engine.syncNow()
        #expect(bEvents.all.contains(.reset(.historyCompacted)), "\(bEvents.all)")
        #expect(try b.noteState() == ["Taxes||false|-|work"])
        #expect(try a.noteState() == b.noteState())
    }

    @Test("a revoked scope's records leave the device; a newly granted scope arrives whole")
    func revokedScope() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        _ = try await Device.bobSharingPlan(server, directory: directory, alsoInserting: [Note(title: "bob private")])

        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        a.context.insert(Note(title: "alice private"))
        try a.context.save()
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["alice private||false|-|", "team plan||false|-|"])

        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["alice private||false|-|"])
        #expect(events.all.contains(.revoked(["team:t1"])))
    }

    @Test(
        "a revoke while saves in the scope are pending: those records stay until the server answers; re-granted, the saves apply; still revoked, they are rejected and leave"
    )
    func revokeWithPendingSaves() async throws {
        let setup = try await Self.sharedPlan()
        defer { withExtendedLifetime(setup) {} }
        let (server, bob, a) = (setup.server, setup.bob, setup.a)
        let transport = try #require(a.inMemory)

        // Re-granted before the pending save is pushed: it applies, nothing wedges.
        let plan = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        plan.body = "alice's edit"
        let added = Note(title: "alice's idea")
        added.space = "team:t1"
        a.context.insert(added)
        try a.context.save()
        transport.blockPushes = true
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        _ = try? await a.engine.syncNow()
        _ = try await server.service.grant(user: "bob", scope: "team:t1", request: GrantRequest(user: "alice"))
        transport.blockPushes = false
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        try await bob.engine.syncNow()
        #expect(try bob.noteState() == ["alice's idea||false|-|", "team plan|alice's edit|false|-|"])
        #expect(try a.noteState() == (try bob.noteState()))

        // Still revoked when it is pushed: rejected, and the scope's records leave.
        added.body = "second edit"
        try a.context.save()
        transport.blockPushes = true
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        _ = try? await a.engine.syncNow()
        transport.blockPushes = false
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try a.fetch(Note.self).isEmpty)
    }

    @Test(
        "an edit refused while its scope was revoked, settled after a re-grant this client never saw revoked: the record stays, at the server's values (simulator seed 694)"
    )
    func rejectedWhileRevokedThenGrantedAgain() async throws {
        let setup = try await Self.sharedPlan()
        defer { withExtendedLifetime(setup) {} }
        let (server, bob, a) = (setup.server, setup.bob, setup.a)

        // Alice's edit is pushed while her grant is revoked (refused: scopeNotGranted, without
        // the record's state); her pull fails, and she is granted the scope again before her
        // next pull, which therefore tells her of no revoke.
        let plan = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        plan.body = "alice's edit"
        try a.context.save()
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        a.transport.onPull { _ in throw SyncTransportError.unreachable("pull lost") }
        _ = try? await a.engine.syncNow()
        a.transport.onPull(nil)
        _ = try await server.service.grant(user: "bob", scope: "team:t1", request: GrantRequest(user: "alice"))
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try a.noteState() == ["team plan||false|-|"])
        #expect(try a.noteState() == (try bob.noteState()))
    }

    @Test(
        "a delete refused while its scope was revoked, settled after a re-grant with another's edit of the record: the record comes back whole, the rejection is reported (simulator seed 3375)"
    )
    func rejectedDeleteWhileRevokedThenEditedElsewhere() async throws {
        let setup = try await Self.sharedPlan()
        defer { withExtendedLifetime(setup) {} }
        let (server, bob, shared, a) = (setup.server, setup.bob, setup.shared, setup.a)
        let events = EventLog(a.engine)

        // Alice's delete is pushed while her grant is revoked (refused: scopeNotGranted, without
        // the record's state); her pull fails, and she is granted the scope again before her
        // next pull. Bob edits the record meanwhile: that pull brings his edit (the body alone)
        // of a record alice has no row of.
        let plan = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        a.context.delete(plan)
        try a.context.save()
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        a.transport.onPull { _ in throw SyncTransportError.unreachable("pull lost") }
        _ = try? await a.engine.syncNow()
        a.transport.onPull(nil)
        _ = try await server.service.grant(user: "bob", scope: "team:t1", request: GrantRequest(user: "alice"))
        shared.body = "bob's edit"
        try bob.context.save()
        try await bob.engine.syncNow()

        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try a.noteState() == ["team plan|bob's edit|false|-|"])
        #expect(try a.noteState() == (try bob.noteState()))
        let rejected = await events.waitFor {
            if case let .rejected(rejection) = $0 { return rejection.reason == .scopeNotGranted } else { return false }
        }
        #expect(rejected != nil)
    }

    @Test(
        "an edit refused while its scope was granted, settled after a revoke and a reset that removed the record, does not bring the record back (simulator seed 3032)"
    )
    func refusedEditSettledAfterRevokeAndReset() async throws {
        let directory = try TemporaryDirectory()
        var settings = SyncServiceConfiguration()
        settings.retention = 3600
        settings.resolvers["Note"] = { input in input.change.fields["title"] == .string("spam") ? .refuse("no spam") : .usePolicy }
        let server = try await TestServer(configuration: settings, directory: directory)
        let (bob, _) = try await Device.bobSharingPlan(server, directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        try await a.engine.syncNow()

        // Alice's edit is refused while she is granted the scope (the answer holds the note's
        // state), and the answer is lost.
        try #require(try a.context.fetch(FetchDescriptor<Note>()).first).title = "spam"
        try a.context.save()
        a.transport.onPush { _, result in
            _ = try result.get()
            throw SyncTransportError.unreachable("the answer was lost")
        }
        _ = try? await a.engine.syncNow()
        a.transport.onPush(nil)
        // Her grant is revoked and the history compacted past her cursor: her next download is
        // a reset without the note, while her edit is still unanswered.
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        bob.context.insert(Note(title: "bob private"))
        try bob.context.save()
        try await bob.engine.syncNow()
        server.clock.advance(7200)
        _ = try await server.service.compact()
        a.transport.blockPushes = true
        _ = try? await a.engine.syncNow()
        #expect(events.all.contains(.reset(.historyCompacted)), "\(events.all)")
        #expect(try a.fetch(Note.self).isEmpty)

        // The refusal arrives and settles: the note stays gone, and the refusal is reported.
        a.transport.blockPushes = false
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try a.fetch(Note.self).isEmpty)
        let rejected = await events.waitFor {
            if case let .rejected(rejection) = $0 { return rejection.reason == .resolverRefused } else { return false }
        }
        #expect(rejected != nil)
    }

    @Test(
        "a record this client created in a scope granted again, pushed, then deleted by another before the scope's snapshot was read, leaves the client (simulator seed 2538)"
    )
    func grantedAgainSnapshotDropsDeletedOwnRecord() async throws {
        let setup = try await Self.sharedPlan()
        defer { withExtendedLifetime(setup) {} }
        let (server, bob, a) = (setup.server, setup.bob, setup.a)
        let transport = try #require(a.inMemory)
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        try await a.engine.syncNow()
        #expect(try a.noteState().isEmpty)

        // Created while the client still thinks the scope revoked; granted again; pushed (and
        // applied), but the pull that would start the scope's snapshot fails.
        try await Self.grantAndPushIdeaWhilePullsFail(a, transport, server: server)
        try await bob.engine.syncNow()
        let bobsCopy = try #require(try bob.context.fetch(FetchDescriptor<Note>()).first { $0.title == "alice's idea" })
        bob.context.delete(bobsCopy)
        try bob.context.save()
        try await bob.engine.syncNow()

        // The snapshot, read after the delete, does not hold the record: it goes.
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try a.noteState() == ["team plan||false|-|"])
        #expect(try a.noteState() == (try bob.noteState()))
    }

    @Test(
        "a record this client created in a scope granted after its last pull, pushed, then revoked before the scope's download: it leaves the client, the server keeps it (simulator seed 9243)"
    )
    func revokedBeforeDownloadDropsOwnRecord() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let (bob, _) = try await Device.bobSharingPlan(server, directory: directory, grantingAlice: false)
        let a = try Device.open(server, directory: directory, name: "a")
        let transport = try #require(a.inMemory)
        let events = EventLog(a.engine)
        try await a.engine.syncNow()

        // Created before alice holds the scope; granted; pushed (and applied), but the pull
        // that would download the scope fails.
        try await Self.grantAndPushIdeaWhilePullsFail(a, transport, server: server)

        // Revoked: her cursor never held the scope, so no revoke names it; the record is
        // still not hers to hold.
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(try a.noteState().isEmpty)
        #expect(events.all.contains(.revoked(["team:t1"])))
        try await bob.engine.syncNow()
        #expect(try bob.noteState() == ["alice's idea||false|-|", "team plan||false|-|"])
    }

    @Test(
        "a record edited and deleted here while its scope was revoked, its edit pulled over first: when the scope is granted again the settled edit writes nothing back (simulator seed 2401)"
    )
    func grantedAgainSnapshotForgetsShadowsOfDeletedRecord() async throws {
        let setup = try await Self.sharedPlan()
        defer { withExtendedLifetime(setup) {} }
        let (server, bob, shared, a) = (setup.server, setup.bob, setup.shared, setup.a)
        let transport = try #require(a.inMemory)

        // A pending edit that bob's pulled edit of the same field is shadowed under.
        let plan = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        plan.body = "alice's edit"
        try a.context.save()
        transport.blockPushes = true
        shared.body = "bob's edit"
        try bob.context.save()
        try await bob.engine.syncNow()
        _ = try? await a.engine.syncNow()
        // Revoked (the record stays: a pending edit masks it), then deleted here.
        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        _ = try? await a.engine.syncNow()
        let kept = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        a.context.delete(kept)
        try a.context.save()
        // Granted again: the edit and the delete apply, the snapshot no longer holds the record.
        _ = try await server.service.grant(user: "bob", scope: "team:t1", request: GrantRequest(user: "alice"))
        transport.blockPushes = false
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        try await bob.engine.syncNow()
        #expect(try bob.noteState().isEmpty)
        #expect(try a.noteState().isEmpty)
    }

    @Test("sign-out removing local data deletes the synced records (not on the server) and the engine's state")
    func signOut() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        a.context.insert(Note(title: "mine"))
        a.context.insert(Unsynced(text: "local only"))
        try a.context.save()
        try await a.engine.syncNow()
        try await a.engine.signOut(removingLocalData: true)
        #expect(try a.fetch(Note.self).isEmpty)
        #expect(try a.fetch(Unsynced.self).count == 1)
        await #expect(throws: SyncEngineError.signedOut) { try await a.engine.syncNow() }
        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["mine||false|-|"])
    }

    @Test(
        "a client killed mid-push (its engine and container dropped after the server applied the batch) resumes from its file and pushes each change exactly once"
    )
    func crashMidPush() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let url = directory.file("crash.sqlite")
        do {
            let a = try Device.open(server, url: url, directory: directory)
            a.context.insert(Note(title: "before crash"))
            try a.context.save()
            a.transport.onPush { _, _ in throw SyncTransportError.unreachable("killed") }
            await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        }
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        let reopened = try Device.open(server, url: url, directory: directory, transport: transport)
        try await reopened.engine.syncNow()
        #expect(transport.sentPushes.first?.mutations.map(\.id) == [1])
        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["before crash||false|-|"])
        #expect(try reopened.noteState() == ["before crash||false|-|"])
    }

    @Test(
        "a save the server refuses as a request (a malformed scope) does not wedge the queue: it is rejected locally, reported, and the saves behind it are pushed"
    )
    func noHeadOfLineWedge() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        a.context.insert(Note(title: "first"))
        try a.context.save()
        let bad = Note(title: "bad scope")
        bad.space = "no colon here"
        a.context.insert(bad)
        try a.context.save()
        a.context.insert(Note(title: "after"))
        try a.context.save()
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["after||false|-|", "first||false|-|"])
        #expect(events.all.contains { if case let .rejected(rejection) = $0 { return rejection.reason == .validation } else { return false } })
        #expect(try await a.engine.pendingChangeCount() == 0)
        let b = try Device.open(server, directory: directory, name: "b")
        try await b.engine.syncNow()
        #expect(try b.noteState() == ["after||false|-|", "first||false|-|"])
        // The ids the server saw still grow by one.
        let ids = a.transport.sentPushes.filter { $0.mutations.count == 1 }.map { $0.mutations[0].id }
        #expect(ids.contains(2) && !ids.contains(4))
    }

    @Test(
        "a server restored empty (another epoch): the client resets, sends again what the server lost (its acknowledged save too) and its unpushed save, without looping"
    )
    func resetAfterEpochChange() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let events = EventLog(a.engine)
        a.context.insert(Note(title: "lost with the server"))
        try a.context.save()
        try await a.engine.syncNow()
        a.context.insert(Note(title: "unpushed"))
        try a.context.save()

        let metadata = try await server.storage.metadata()
        let restoredStorage = try SQLiteSyncStorage(path: directory.path("restored.sqlite"), cursorKey: metadata.cursorKey)
        let restored = try await SyncService(storage: restoredStorage, now: { [clock = server.clock] in clock.now() })
        a.transport.service = restored
        try await a.engine.syncNow()
        try await a.engine.syncNow()
        #expect(events.all.contains(.reset(.epochChanged)))
        #expect(try a.noteState() == ["lost with the server||false|-|", "unpushed||false|-|"])
        #expect(try await a.engine.pendingChangeCount() == 0)
        #expect(!events.all.contains { if case .lostInServerRestore = $0 { return true } else { return false } })
        let pulled = try await restored.pull(user: "alice", request: PullRequest(clientID: "probe"))
        #expect(Set(pulled.changes.compactMap { $0.fields["title"] }) == [.string("lost with the server"), .string("unpushed")])
        #expect(pulled.changes.count == 2)
    }

    @Test("a record whose pending edit lost to another writer keeps its scope, so a later revoke still removes it")
    func scopeKeptThroughRebase() async throws {
        let setup = try await Self.sharedPlan()
        defer { withExtendedLifetime(setup) {} }
        let (server, bob, shared, a) = (setup.server, setup.bob, setup.shared, setup.a)

        let aNote = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        aNote.body = "alice's body"
        try a.context.save()
        server.clock.advance(1)
        shared.body = "bob's body"
        try bob.context.save()
        try await bob.engine.syncNow()
        try await a.engine.syncNow()
        #expect(try a.noteState() == ["team plan|bob's body|false|-|"])

        _ = try await server.service.revoke(user: "bob", scope: "team:t1", member: "alice")
        try await a.engine.syncNow()
        #expect(try a.fetch(Note.self).isEmpty)
    }

    @Test("another user signing in on a store with unpushed saves is refused at setup; after sign-out removing local data, they start clean")
    func userSwitch() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let url = directory.file("shared-device.sqlite")
        do {
            let alice = try Device.open(server, url: url, directory: directory)
            alice.context.insert(Note(title: "alice offline"))
            try alice.context.save()
        }
        #expect(throws: SyncEngineError.pendingChangesOfAnotherUser("alice")) {
            _ = try Device.open(server, user: "bob", url: url, directory: directory)
        }
        let alice = try Device.open(server, url: url, directory: directory)
        try await alice.engine.signOut(removingLocalData: true)
        let bob = try Device.open(server, user: "bob", url: url, directory: directory)
        bob.context.insert(Note(title: "bob's"))
        try bob.context.save()
        try await bob.engine.syncNow()
        #expect(try bob.noteState() == ["bob's||false|-|"])
        let probe = try Device.open(server, directory: directory, name: "alice-probe")
        try await probe.engine.syncNow()
        #expect(try probe.fetch(Note.self).isEmpty)
    }

    @Test("the run loop: a permanent error waits for the next trigger (the poll), a transient one backs off with growing jittered delays")
    func runLoopRetries() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let clock = GatedClock()
        let a = try Device.open(server, directory: directory, name: "a", clock: clock)
        let pulls = TokenCounter()
        a.transport.onPull { page in
            _ = pulls.next()
            var page = page
            page.protocolVersion = ProtocolVersion(rawValue: 99)
            return page
        }
        a.transport.sendsHello = false  // only the start and the poll trigger cycles here
        await a.engine.start()
        func waitForSleeps(_ count: Int) async throws {
            for _ in 0..<20_000 where clock.sleeps.count < count { try await Task.sleep(for: .milliseconds(2)) }
        }
        try await waitForSleeps(1)
        // The first cycle (on start) failed permanently: the loop waits a poll, not a backoff.
        #expect(clock.sleeps == [30])
        #expect(pulls.calls == 1)
        clock.release()
        try await waitForSleeps(2)
        #expect(clock.sleeps == [30, 30])
        #expect(pulls.calls == 2)

        // Transient: the network is down; each retry waits a jittered delay under the cap.
        a.transport.onPull(nil)
        a.transport.online = false
        for round in 3...6 {
            clock.release()
            try await waitForSleeps(round)
        }
        let backoffs = Array(clock.sleeps.dropFirst(2))
        #expect(backoffs.count >= 3)
        #expect(backoffs.allSatisfy { $0 >= 0 && $0 < 30 })
        await a.engine.stop()
    }

    /// What five tests start from: bob's "team plan" note in `team:t1`, shared with alice,
    /// whose device `a` has pulled it. `directory` keeps the files for the test's duration.
    struct SharedPlan {
        let directory: TemporaryDirectory
        let server: TestServer
        let bob: Device
        let shared: Note
        let a: Device
    }

    /// Alice saves "alice's idea" in `team:t1`; bob grants her the scope; her sync pushes it
    /// (the server applies it) while every pull of it fails.
    static func grantAndPushIdeaWhilePullsFail(_ a: Device, _ transport: InMemorySyncTransport, server: TestServer) async throws {
        let idea = Note(title: "alice's idea")
        idea.space = "team:t1"
        a.context.insert(idea)
        try a.context.save()
        _ = try await server.service.grant(user: "bob", scope: "team:t1", request: GrantRequest(user: "alice"))
        transport.onPull { _ in throw SyncTransportError.unreachable("answer lost") }
        _ = try? await a.engine.syncNow()
        transport.onPull(nil)
    }

    static func sharedPlan() async throws -> SharedPlan {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let (bob, shared) = try await Device.bobSharingPlan(server, directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        try await a.engine.syncNow()
        return SharedPlan(directory: directory, server: server, bob: bob, shared: shared, a: a)
    }
}

/// Events of a test's requests, in order, from any thread.
///
/// `@unchecked Sendable`: `events` is only read and written while holding `lock`.
final class RequestLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [String] = []

    /// Appends an event; returns how many "start" events there are now.
    @discardableResult
    func add(_ event: String) -> Int {
        lock.withLock {
            events.append(event)
            return events.filter { $0 == "start" }.count
        }
    }

    func reset() { lock.withLock { events = [] } }

    var entries: [String] { lock.withLock { events } }
}

/// A transport whose second pull (after ``RequestLog/reset()``) takes 0.3 s before it reaches
/// the server, whether or not its task was cancelled: a request in flight that outlives its
/// caller shows in the log.
struct SlowSecondPull: SyncTransport {
    let inner: InMemorySyncTransport
    let log: RequestLog

    func push(_ request: PushRequest) async throws -> PushResponse { try await inner.push(request) }

    func pull(_ request: PullRequest) async throws -> PullResponse {
        let number = log.add("start")
        defer { log.add("end") }
        if number == 2 { Self.block(seconds: 0.3) }
        return try await inner.pull(request)
    }

    /// Blocks the calling thread (not a cancellable wait).
    private static func block(seconds: Double) { Thread.sleep(forTimeInterval: seconds) }

    func live(clientID: ClientID) -> AsyncThrowingStream<LiveMessage, any Error> { inner.live(clientID: clientID) }

    func members(of scope: ScopeID) async throws -> ScopeMembersResponse { try await inner.members(of: scope) }

    func grant(_ request: GrantRequest, in scope: ScopeID) async throws -> ScopeMembersResponse { try await inner.grant(request, in: scope) }

    func revoke(_ user: String, in scope: ScopeID) async throws -> ScopeMembersResponse { try await inner.revoke(user, in: scope) }
}
