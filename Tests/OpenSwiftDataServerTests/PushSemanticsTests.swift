import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

@Suite("Sync core: exactly-once, order, gaps and forks")
struct PushSemanticsTests {
    @Test("a replayed batch gets the same answers and is not applied again", arguments: Backend.all)
    func replay(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        let batch = PushRequest(
            clientID: "c1",
            mutations: [
                mutation(1, .insert, "n1", fields: ["title": .string("a")]),
                mutation(2, .update, "n1", at: 1_790_000_000_001, fields: ["title": .string("b")]),
            ])
        let first = try await h.service.push(user: "alice", request: batch)
        #expect(first.lastMutationID == 2 && first.results.map(\.status) == [.applied, .applied])
        let before = try await h.footprint()
        let again = try await h.service.push(user: "alice", request: batch)
        #expect(again.results == first.results && again.lastMutationID == 2)
        #expect(try await h.footprint() == before)
        // A resend that overlaps: 1–2 acknowledged, 3 applied.
        let overlap = PushRequest(
            clientID: "c1", mutations: batch.mutations + [mutation(3, .update, "n1", at: 1_790_000_000_002, fields: ["title": .string("c")])])
        let third = try await h.service.push(user: "alice", request: overlap)
        #expect(third.lastMutationID == 3 && third.results.count == 3)
        #expect(try await h.count("osd_changes") == before["osd_changes"]! + 1)
        #expect(try await h.state("alice")["Note/n1"]?["title"] == .string("c"))
    }

    @Test(
        "a push made against another epoch (sent before a restore, delivered after it) is refused with staleEpoch and nothing is stored; with a cursor of this epoch it is processed (simulator seeds 153, 603, 1955)",
        arguments: Backend.all)
    func pushFromAnotherEpoch(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(1, .insert, "n1")]))
        let old = try await h.pullAll("alice", client: "c1").last.cursor
        let late = PushRequest(clientID: "c1", mutations: [mutation(1, .insert, "n1"), mutation(2, .insert, "n2")], cursor: old)

        // The database restored from a copy that predates both, with a new epoch.
        let other = try await CoreHarness(backend)
        let metadata = try await h.storage.metadata()
        let restored = try await SyncService(storage: try await other.restoredStorage(cursorKey: metadata.cursorKey), now: h.clock.clock)
        let error = await expectError(.staleEpoch) { _ = try await restored.push(user: "alice", request: late) }
        #expect(error?.statusCode == 409)
        let reset = try await restored.pull(user: "alice", request: PullRequest(clientID: "c1", cursor: old))
        #expect(reset.reset == .epochChanged && reset.lastMutationID == 0 && reset.changes.isEmpty)
        // Sent again with the cursor of the restored epoch, it is decided there.
        var resent = late
        resent.cursor = reset.cursor
        let answer = try await restored.push(user: "alice", request: resent)
        #expect(answer.lastMutationID == 2 && answer.results.map(\.status) == [.applied, .applied])
        // The live server takes a cursor of its own epoch (and none) as before.
        let live = try await h.service.push(user: "alice", request: late)
        #expect(live.lastMutationID == 2 && live.results.map(\.status) == [.applied, .applied])
    }

    @Test("a gap is refused with the last id, and nothing is stored", arguments: Backend.all)
    func gap(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(1, .insert, "n1")]))
        let before = try await h.footprint()
        let error = await expectError(.mutationGap) {
            _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(3, .insert, "n2")]))
        }
        #expect(error?.error.lastMutationID == 1 && error?.statusCode == 409)
        #expect(try await h.footprint() == before)
        await expectError(.mutationGap) {
            _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "new", mutations: [mutation(2, .insert, "n2")]))
        }
    }

    @Test("an id already processed with other content is a fork", arguments: Backend.all)
    func fork(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(1, .insert, "n1"), mutation(2, .insert, "n2")]))
        let before = try await h.footprint()
        for id: MutationID in [1, 2] {
            let error = await expectError(.clientForked) {
                _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(id, .insert, "other")]))
            }
            #expect(error?.error.lastMutationID == 2)
        }
        #expect(try await h.footprint() == before)
    }

    @Test("a client id belongs to the user who first pushed with it", arguments: Backend.all)
    func clientOwnership(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(1, .insert, "n1")]))
        let before = try await h.footprint()
        await expectError(.clientIDOwnedByAnotherUser) {
            _ = try await h.service.push(
                user: "bob", request: PushRequest(clientID: "c1", mutations: [mutation(2, .insert, "n2", scope: .user("bob"))]))
        }
        await expectError(.clientIDOwnedByAnotherUser) {
            _ = try await h.service.pull(user: "bob", request: PullRequest(clientID: "c1"))
        }
        #expect(try await h.footprint() == before)
    }

    @Test("a rejected mutation uses up its id; the ones behind it apply, in order", arguments: Backend.all)
    func rejectionKeepsQueueFlowing(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        let response = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "c1",
                mutations: [
                    mutation(1, .insert, "n1", fields: ["title": .string("a")]),
                    Mutation(
                        id: 2, stamp: stamp(1_790_000_000_001),
                        changes: [
                            RecordChange(op: .insert, entity: "Note", recordID: "n2", scope: .user("alice"), fields: ["title": .string("x")]),
                            RecordChange(op: .update, entity: "Note", recordID: "n1", scope: .user("alice"), fields: ["title": .int(5)]),
                        ]),
                    mutation(3, .update, "n1", at: 1_790_000_000_002, fields: ["title": .string("c")]),
                ]))
        #expect(response.lastMutationID == 3)
        #expect(response.results.map(\.status) == [.applied, .rejected, .applied])
        #expect(response.results[1].reason == .wrongValueType)
        #expect(response.results[1].message?.contains("title") == true)
        #expect(response.results[1].serverRecords?.first?.fields["title"] == .string("a"))
        let state = try await h.state("alice")
        #expect(state["Note/n2"] == nil, "nothing of the rejected mutation is applied")
        #expect(state["Note/n1"]?["title"] == .string("c"))
        // A later push continues after the rejected id.
        let next = try await h.service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(4, .insert, "n4")]))
        #expect(next.results.first?.status == .applied)
    }

    @Test("a client's mutations apply in order: an update before its insert is refused", arguments: Backend.all)
    func order(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        let response = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "c1",
                mutations: [
                    mutation(1, .update, "n1", fields: ["title": .string("early")]),
                    mutation(2, .insert, "n1", at: 1_790_000_000_001, fields: ["title": .string("a")]),
                    mutation(3, .update, "n1", at: 1_790_000_000_002, fields: ["title": .string("b")]),
                ]))
        #expect(response.results.map(\.reason) == [.recordNotFound, nil, nil])
        #expect(try await h.state("alice")["Note/n1"]?["title"] == .string("b"))
    }

    @Test("bad batches are request errors: ids not growing by one, too many, malformed scope, unsupported version", arguments: Backend.all)
    func badBatches(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend, configuration: SyncServiceConfiguration(maxMutationsPerPush: 3))
        let before = try await h.footprint()
        await expectError(.malformedRequest) {
            _ = try await h.service.push(
                user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(1, .insert, "a"), mutation(3, .insert, "b")]))
        }
        await expectError(.batchTooLarge) {
            _ = try await h.service.push(
                user: "alice", request: PushRequest(clientID: "c1", mutations: (1...4).map { mutation(MutationID($0), .insert, "r\($0)") }))
        }
        await expectError(.malformedRequest) {
            _ = try await h.service.push(
                user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(1, .insert, "a", scope: "no scope")]))
        }
        await expectError(.unsupportedProtocolVersion) {
            _ = try await h.service.push(
                user: "alice",
                request: PushRequest(protocolVersion: ProtocolVersion(rawValue: 99), clientID: "c1", mutations: [mutation(1, .insert, "a")]))
        }
        #expect(try await h.footprint() == before)
    }
}
