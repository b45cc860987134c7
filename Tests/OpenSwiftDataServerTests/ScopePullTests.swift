import Foundation
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

@Suite("Sync core: scopes, grants, pulls, cursors")
struct ScopePullTests {
    @Test("a shared scope is owned by its first writer; grants let others read and write; a revoke stops both", arguments: Backend.all)
    func grantsAndRevoke(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        let room: ScopeID = "conversation:c1"
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "a", mutations: [mutation(1, .insert, "m1", scope: room, entity: "Message", fields: ["text": .string("hi")])]))
        #expect(try await h.service.members(user: "alice", scope: room) == ScopeMembersResponse(scope: room, owner: "alice", members: []))
        // Bob is not granted: his write is rejected and he sees nothing.
        let denied = try await h.service.push(
            user: "bob", request: PushRequest(clientID: "b", mutations: [mutation(1, .insert, "m2", scope: room, entity: "Message")]))
        #expect(denied.results.first?.reason == .scopeNotGranted)
        let denied2 = try await h.service.push(
            user: "bob",
            request: PushRequest(
                clientID: "b", mutations: [mutation(2, .update, "m1", scope: room, entity: "Message", fields: ["text": .string("pwned")])]))
        #expect(denied2.results.first?.reason == .scopeNotGranted)
        #expect(denied2.results.first?.serverRecords == [], "nothing of a scope not granted is revealed")
        let bobFirst = try await h.pullAll("bob", client: "b")
        #expect(bobFirst.changes.isEmpty)
        await expectError(.forbidden) { _ = try await h.service.grant(user: "bob", scope: room, request: GrantRequest(user: "bob")) }
        await expectError(.forbidden) { _ = try await h.service.members(user: "bob", scope: room) }
        // Granted: the next pull downloads the scope whole, and bob may write.
        _ = try await h.service.grant(user: "alice", scope: room, request: GrantRequest(user: "bob"))
        let granted = try await h.pullAll("bob", client: "b", cursor: bobFirst.last.cursor)
        #expect(granted.changes.map(\.recordID) == ["m1"])
        #expect(granted.last.consistent)
        #expect(granted.last.cursorScopes == [room, ScopeID.user("bob")], "a consistent page says which scopes its cursor holds")
        let write = try await h.service.push(
            user: "bob",
            request: PushRequest(
                clientID: "b", mutations: [mutation(3, .insert, "m2", scope: room, entity: "Message", fields: ["text": .string("yo")])]))
        #expect(write.results.first?.status == .applied)
        #expect(try await h.service.scopes(user: "bob").scopes.contains(ScopeAccess(scope: room, role: .member, grant: .writer)))
        // Revoked: the pull says so, and writes are rejected at once.
        _ = try await h.service.revoke(user: "alice", scope: room, member: "bob")
        let revoked = try await h.pullAll("bob", client: "b", cursor: granted.last.cursor)
        #expect(revoked.pages.first?.revokedScopes == [room])
        #expect(revoked.last.cursorScopes == [ScopeID.user("bob")])
        let after = try await h.service.push(
            user: "bob",
            request: PushRequest(
                clientID: "b", mutations: [mutation(4, .update, "m2", scope: room, entity: "Message", fields: ["text": .string("still?")])]))
        #expect(after.results.first?.reason == .scopeNotGranted)
        #expect(try await h.state("alice")["Message/m2"]?["text"] == .string("yo"))
    }

    @Test("an insert whose record id exists in a scope the caller may not read is recordIDTaken, revealing nothing", arguments: Backend.all)
    func recordIDTaken(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "u42", entity: "User", fields: ["name": .string("secret")])]))
        let response = try await h.service.push(
            user: "bob",
            request: PushRequest(
                clientID: "b", mutations: [mutation(1, .insert, "u42", scope: .user("bob"), entity: "User", fields: ["name": .string("bob")])]))
        #expect(response.results.first?.reason == .recordIDTaken)
        #expect(response.results.first?.serverRecords == [])
        #expect(response.results.first?.message?.contains("secret") == false)
        // Writing into another user's private scope is refused.
        let other = try await h.service.push(
            user: "bob", request: PushRequest(clientID: "b", mutations: [mutation(2, .insert, "x", scope: .user("alice"))]))
        #expect(other.results.first?.reason == .scopeNotGranted)
    }

    @Test("pull pages break only between mutations, carry lastMutationID, and never go back", arguments: Backend.all)
    func paging(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        let first = try await h.pullAll("alice", client: "a")
        let changes = (1...3).map { RecordChange(op: .insert, entity: "Note", recordID: "n\($0)", scope: .user("alice")) }
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "a",
                mutations: [
                    Mutation(id: 1, stamp: stamp(1_790_000_000_000), changes: changes),
                    mutation(2, .insert, "n4", at: 1_790_000_000_001),
                ]))
        let page = try await h.service.pull(user: "alice", request: PullRequest(clientID: "a", cursor: first.last.cursor, limit: 2))
        #expect(page.changes.map(\.recordID) == ["n1", "n2", "n3"])
        #expect(page.hasMore && page.consistent && page.lastMutationID == 2)
        let next = try await h.service.pull(user: "alice", request: PullRequest(clientID: "a", cursor: page.cursor, limit: 2))
        #expect(next.changes.map(\.recordID) == ["n4"])
        #expect(next.changes.allSatisfy { $0.version > page.changes.last!.version })
        #expect(!next.hasMore)
        let empty = try await h.service.pull(user: "alice", request: PullRequest(clientID: "a", cursor: next.cursor))
        #expect(empty.changes.isEmpty && !empty.hasMore)
    }

    @Test("a first sync is a snapshot in keyset pages, inconsistent until complete, then the log resumes", arguments: Backend.all)
    func snapshot(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "a",
                mutations: (1...25).map {
                    mutation(MutationID($0), .insert, String(format: "n%02d", $0), at: 1_790_000_000_000 + UInt64($0), fields: ["i": .int(Int64($0))])
                }))
        _ = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(26, .delete, "n05", at: 1_790_000_001_000)]))
        var page = try await h.service.pull(user: "alice", request: PullRequest(clientID: "d", limit: 10))
        #expect(page.changes.count == 10 && !page.consistent && page.hasMore)
        #expect(page.cursorScopes == nil, "an inconsistent page's cursor is not caught up on any scope it could name")
        #expect(page.progress == PullProgress(received: 10, total: 24))
        // A write between pages, behind the keyset position, reaches the client through the log.
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(clientID: "a", mutations: [mutation(27, .update, "n01", at: 1_790_000_002_000, fields: ["i": .int(100)])]))
        var all = page.changes
        while page.hasMore {
            page = try await h.service.pull(user: "alice", request: PullRequest(clientID: "d", cursor: page.cursor, limit: 10))
            all += page.changes
        }
        #expect(page.consistent)
        #expect(Set(all.filter { $0.op == .insert }.map(\.recordID)).count == 24)
        #expect(all.last { $0.recordID == "n01" }?.fields["i"] == .int(100))
    }

    @Test("a forged or altered cursor is invalidCursor; one from another epoch resets", arguments: Backend.all)
    func cursors(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        let good = try await h.pullAll("alice", client: "a").last.cursor
        await expectError(.invalidCursor) { _ = try await h.service.pull(user: "alice", request: PullRequest(clientID: "a", cursor: "garbage")) }
        var bytes = Array(good.utf8)
        bytes[3] = bytes[3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        await expectError(.invalidCursor) {
            _ = try await h.service.pull(user: "alice", request: PullRequest(clientID: "a", cursor: String(decoding: bytes, as: UTF8.self)))
        }
        // Another server (another epoch and key) refuses it as forged; the same database
        // reopened with the same key but a new epoch resets.
        let other = try await CoreHarness(backend)
        await expectError(.invalidCursor) { _ = try await other.service.pull(user: "alice", request: PullRequest(clientID: "a", cursor: good)) }
        let metadata = try await h.storage.metadata()
        let restored = try await other.restoredStorage(cursorKey: metadata.cursorKey)
        let service = try await SyncService(storage: restored, now: h.clock.clock)
        let reset = try await service.pull(user: "alice", request: PullRequest(clientID: "a", cursor: good))
        #expect(reset.reset == .epochChanged)
    }

    @Test("a database restored from a plain copy (same epoch) resets a cursor issued after the copy, even once its log is written past it")
    func plainCopyRestore() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("live.sqlite")
        let key = Data(repeating: 7, count: 32)
        let clock = ManualClock()
        var storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        var service = try await SyncService(storage: storage, now: clock.clock)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        try await storage.close()
        try FileManager.default.copyItem(atPath: path, toPath: path + ".copy")
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, now: clock.clock)
        clock.advance(1)
        // Written after the copy: the restore loses it.
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2", at: 1_790_000_000_001)]))
        var cursor: String?
        for _ in 0..<100 {
            let page = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
            cursor = page.cursor
            if !page.hasMore { break }
        }
        try await storage.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: path + ".copy", toPath: path)
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, now: clock.clock)
        clock.advance(1)
        // Another write takes the lost one's position in the log: the cursor is not past the
        // head, but what it has seen is not this log.
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "c", mutations: [mutation(1, .insert, "n3", at: 1_790_000_000_002)]))
        let page = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
        #expect(page.reset == .epochChanged)
        var seen = Set(page.changes.map(\.recordID))
        cursor = page.cursor
        var more = page.hasMore
        while more {
            let next = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
            seen.formUnion(next.changes.map(\.recordID))
            cursor = next.cursor
            more = next.hasMore
        }
        #expect(seen == ["n1", "n3"])
        try await storage.close()
    }

    @Test(
        "a push held past a restore from a plain copy (same epoch) is refused, past the head and once the log is written again at its cursor (seed 2458)"
    )
    func pushHeldPastPlainCopyRestore() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("live.sqlite")
        let key = Data(repeating: 7, count: 32)
        let clock = ManualClock()
        var storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        var service = try await SyncService(storage: storage, now: clock.clock)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        try await storage.close()
        try FileManager.default.copyItem(atPath: path, toPath: path + ".copy")
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, now: clock.clock)
        clock.advance(1)
        // Written after the copy: the restore loses it.
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2", at: 1_790_000_000_001)]))
        var cursor: String?
        for _ in 0..<100 {
            let page = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
            cursor = page.cursor
            if !page.hasMore { break }
        }
        // Sent with the lost history's cursor; the network holds it past the restore.
        let late = PushRequest(clientID: "b", mutations: [mutation(1, .insert, "nb", at: 1_790_000_000_001)], cursor: cursor)
        try await storage.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: path + ".copy", toPath: path)
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, now: clock.clock)
        clock.advance(1)
        // The cursor is past the restored head.
        let pastHead = await expectError(.staleEpoch) { _ = try await service.push(user: "alice", request: late) }
        #expect(pastHead?.statusCode == 409)
        // Another write takes the lost one's position: not past the head, another history.
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "c", mutations: [mutation(1, .insert, "n3", at: 1_790_000_000_002)]))
        await expectError(.staleEpoch) { _ = try await service.push(user: "alice", request: late) }
        // Nothing of it was stored: the pull resets, the server holding no id of this client;
        // sent again with the new cursor, the push is decided.
        let reset = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
        #expect(reset.reset == .epochChanged && reset.lastMutationID == 0)
        var resent = late
        resent.cursor = reset.cursor
        let answer = try await service.push(user: "alice", request: resent)
        #expect(answer.results.map(\.status) == [.applied])
        try await storage.close()
    }

    @Test(
        "a push held past a restore from a plain copy whose log reaches its cursor is refused: a push whose cursor predates the server's start is (seeds 5203, 7916, 8451)"
    )
    func pushHeldPastPlainCopyRestoreWithinItsHistory() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("live.sqlite")
        let key = Data(repeating: 7, count: 32)
        let clock = ManualClock()
        var storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        var service = try await SyncService(storage: storage, now: clock.clock)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        let cursor = try await service.pull(user: "alice", request: PullRequest(clientID: "b")).cursor
        // B's push, sent with that cursor and held by the network; the database is copied.
        let late = PushRequest(clientID: "b", mutations: [mutation(1, .insert, "nb", at: 1_790_000_000_001)], cursor: cursor)
        try await storage.close()
        try FileManager.default.copyItem(atPath: path, toPath: path + ".copy")
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, now: clock.clock)
        clock.advance(1)
        // The restarted server refuses it; B pulls (its cursor stands) and pushes again: applied.
        await expectError(.staleEpoch) { _ = try await service.push(user: "alice", request: late) }
        let page = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
        #expect(page.reset == nil && page.lastMutationID == 0)
        var resent = late
        resent.cursor = page.cursor
        #expect(try await service.push(user: "alice", request: resent).results.map(\.status) == [.applied])
        let after = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: resent.cursor)).cursor
        // The database is put back from the copy, which lacks B's save, without a new epoch.
        try await storage.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: path + ".copy", toPath: path)
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, now: clock.clock)
        clock.advance(1)
        // The held push arrives: its cursor stands in the copy's log, but it predates the
        // start, so it is not decided there (B holds the answer of the history the copy lost).
        await expectError(.staleEpoch) { _ = try await service.push(user: "alice", request: late) }
        let reset = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: after))
        #expect(reset.reset == .epochChanged && reset.lastMutationID == 0)
        try await storage.close()
    }

    @Test("a cursor issued at a fully compacted head (no log mark) resets once a plain-copy restore's log is written at its position")
    func plainCopyRestoreAfterCompaction() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("live.sqlite")
        let key = Data(repeating: 7, count: 32)
        let clock = ManualClock()
        let configuration = SyncServiceConfiguration(retention: 3600)
        var storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        var service = try await SyncService(storage: storage, configuration: configuration, now: clock.clock)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        try await storage.close()
        try FileManager.default.copyItem(atPath: path, toPath: path + ".copy")
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, configuration: configuration, now: clock.clock)
        // Written after the copy (the restore loses it), then the whole log is compacted: the
        // cursor handed out next sits at a position with no change, so it carries no mark.
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2", at: 1_790_000_000_001)]))
        clock.advance(7200)
        _ = try await service.compact()
        var cursor: String?
        for _ in 0..<100 {
            let page = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
            cursor = page.cursor
            if !page.hasMore { break }
        }
        try await storage.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: path + ".copy", toPath: path)
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, configuration: configuration, now: clock.clock)
        // Another write takes the lost one's position, which is the cursor's.
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "c", mutations: [mutation(1, .insert, "n3", at: 1_790_007_300_000)]))
        let page = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
        #expect(page.reset == .epochChanged)
        var seen = Set(page.changes.map(\.recordID))
        cursor = page.cursor
        var more = page.hasMore
        while more {
            let next = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
            seen.formUnion(next.changes.map(\.recordID))
            cursor = next.cursor
            more = next.hasMore
        }
        #expect(seen == ["n1", "n3"])
        try await storage.close()
    }

    @Test("a cursor at exactly the horizon of a plain-copy restore's log, written again and compacted, resets")
    func plainCopyRestoreCompactedToCursor() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("live.sqlite")
        let key = Data(repeating: 7, count: 32)
        let clock = ManualClock()
        let configuration = SyncServiceConfiguration(retention: 3600)
        var storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        var service = try await SyncService(storage: storage, configuration: configuration, now: clock.clock)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        try await storage.close()
        try FileManager.default.copyItem(atPath: path, toPath: path + ".copy")
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, configuration: configuration, now: clock.clock)
        // Written after the copy (the restore loses it); the cursor sits on it (position 2).
        clock.advance(1)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2", at: 1_790_000_000_001)]))
        var cursor: String?
        for _ in 0..<100 {
            let page = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
            cursor = page.cursor
            if !page.hasMore { break }
        }
        try await storage.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: path + ".copy", toPath: path)
        storage = try SQLiteSyncStorage(path: path, cursorKey: key)
        service = try await SyncService(storage: storage, configuration: configuration, now: clock.clock)
        // The restored log is written again at the cursor's position (n3) and past it (n4, two
        // hours later); compaction then removes the log up to n3: the horizon is the cursor's
        // position, whose change is not the one the cursor was issued on.
        clock.advance(1)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "c", mutations: [mutation(1, .insert, "n3", at: 1_790_000_000_002)]))
        clock.advance(7200)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "c", mutations: [mutation(2, .insert, "n4", at: 1_790_007_300_000)]))
        let compacted = try await service.compact()
        #expect(compacted.horizon == 2)
        let page = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
        #expect(page.reset == .epochChanged)
        var seen = Set(page.changes.map(\.recordID))
        cursor = page.cursor
        var more = page.hasMore
        while more {
            let next = try await service.pull(user: "alice", request: PullRequest(clientID: "b", cursor: cursor))
            seen.formUnion(next.changes.map(\.recordID))
            cursor = next.cursor
            more = next.hasMore
        }
        #expect(seen == ["n1", "n3", "n4"])
        try await storage.close()
    }

    @Test("past the retention window, tombstones and the log are compacted and old cursors reset", arguments: Backend.all)
    func compaction(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend, configuration: SyncServiceConfiguration(retention: 3600))
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1"), mutation(2, .insert, "n2", at: 1_790_000_000_001)]))
        let old = try await h.pullAll("alice", client: "a").last.cursor
        _ = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(3, .delete, "n1", at: 1_790_000_000_002)]))
        h.clock.advance(7200)
        let result = try await h.service.compact()
        // The change at the horizon (the delete, 3) stays to check cursors at the horizon.
        #expect(result.tombstonesRemoved == 1 && result.changesRemoved == 2 && result.horizon == 3)
        let page = try await h.service.pull(user: "alice", request: PullRequest(clientID: "a", cursor: old))
        #expect(page.reset == .historyCompacted)
        let restart = try await h.pullAll("alice", client: "a", cursor: old)
        #expect(restart.changes.map(\.recordID) == ["n2"])
        #expect(restart.last.lastMutationID == 3)
    }
}
