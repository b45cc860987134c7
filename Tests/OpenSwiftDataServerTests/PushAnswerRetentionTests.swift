import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

@Suite("Sync core: push answers are kept until the client acknowledges them")
struct PushAnswerRetentionTests {
    /// A batch of alice's: 1 applied, 2 refused (bob's private scope is not granted to her).
    private func batch() -> PushRequest {
        PushRequest(
            clientID: "c1",
            mutations: [
                mutation(1, .insert, "n1", fields: ["title": .string("a")]),
                mutation(2, .insert, "n2", scope: .user("bob"), at: 1_790_000_000_001, fields: ["title": .string("b")]),
            ])
    }

    @Test(
        "a rejected answer survives compaction past its age: the resent batch gets the same rejection, not a claimed success", arguments: Backend.all)
    func rejectionSurvivesCompaction(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend, configuration: SyncServiceConfiguration(retention: 3600))
        let first = try await h.service.push(user: "alice", request: batch())
        #expect(first.results.map(\.status) == [.applied, .rejected])
        #expect(first.results[1].reason == .scopeNotGranted)
        // The answer is lost (or the client is killed before it records it); meanwhile the
        // server compacts everything older than the retention window.
        h.clock.advance(7200)
        try await h.service.compact()
        #expect(try await h.count("osd_results") == 2)
        let again = try await h.service.push(user: "alice", request: batch())
        #expect(again.results == first.results)
        #expect(again.results[1].status == .rejected && again.results[1].reason == .scopeNotGranted)
        #expect(try await h.state("alice")["Note/n2"] == nil)
    }

    @Test("a push from id F deletes that client's answers below F and no other client's", arguments: Backend.all)
    func pushAcknowledgesAnswersBelowItsFirstID(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(user: "alice", request: batch())
        _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "c2", mutations: [mutation(1, .insert, "other")]))
        #expect(try await h.count("osd_results") == 3)
        // A resend of the same batch acknowledges nothing new.
        _ = try await h.service.push(user: "alice", request: batch())
        #expect(try await h.count("osd_results") == 3)
        // Resent from 2 (1's answer recorded): 1's answer goes.
        _ = try await h.service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: Array(batch().mutations.dropFirst())))
        #expect(try await h.count("osd_results") == 2)
        _ = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(3, .insert, "n3", at: 1_790_000_000_002)]))
        // c1 keeps only 3's answer; c2's is untouched.
        #expect(try await h.count("osd_results") == 2)
        let c2Again = try await h.service.push(user: "alice", request: PushRequest(clientID: "c2", mutations: [mutation(1, .insert, "other")]))
        #expect(c2Again.results.map(\.status) == [.applied])
    }

    @Test("an id whose answer was acknowledged and dropped is a fork, never an answer that may be wrong", arguments: Backend.all)
    func droppedAnswerIsAFork(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(user: "alice", request: batch())
        _ = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "c1", mutations: [mutation(3, .insert, "n3", at: 1_790_000_000_002)]))
        let before = try await h.footprint()
        // A copy of the client from before it acknowledged 1 and 2 (a restored device).
        let error = await expectError(.clientForked) {
            _ = try await h.service.push(user: "alice", request: batch())
        }
        #expect(error?.error.lastMutationID == 3 && error?.statusCode == 409)
        #expect(try await h.footprint() == before)
    }
}
