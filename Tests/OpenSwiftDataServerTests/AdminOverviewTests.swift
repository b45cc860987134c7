import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

@Suite("Admin console: bounded reads of the storage and of the server's activity")
struct AdminOverviewTests {
    @Test("the storage's overview lists the first scopes and the latest clients within its limits, and counts the rest", arguments: Backend.all)
    func overviewIsBounded(_ backend: Backend) async throws {
        let core = try await CoreHarness(backend)
        let scopes: [ScopeID] = ["team:a", "team:b", "team:c", .user("alice")]
        for (index, scope) in scopes.enumerated() {
            _ = try await core.service.push(
                user: "alice",
                request: PushRequest(
                    clientID: "alice-phone", mutations: [mutation(MutationID(index + 1), .insert, "r\(index)", scope: scope)]))
        }
        _ = try await core.service.push(
            user: "alice", request: PushRequest(clientID: "alice-phone", mutations: [mutation(5, .insert, "r4", scope: "team:a")]))
        core.clock.advance(5)
        _ = try await core.service.push(
            user: "bob", request: PushRequest(clientID: "bob-laptop", mutations: [mutation(1, .insert, "b", scope: .user("bob"))]))
        for member in ["m1", "m2", "m3"] {
            _ = try await core.service.administerGrant(scope: "team:a", member: member, owner: nil)
        }
        // A private scope granted before anything was written into it is listed too.
        _ = try await core.service.administerGrant(scope: .user("dora"), member: "m1", owner: nil)

        let small = try await core.service.overview(OverviewLimits(scopes: 2, members: 2, clients: 1, countCap: 3, recordCountCap: 1))
        #expect(small.epoch == core.service.epoch && small.head == 6 && small.horizon == 0)
        #expect(small.scopes.map(\.scope) == ["team:a", "team:b"])
        #expect(small.scopeCount.capped && small.scopeCount.value >= 4)
        let teamA = try #require(small.scopes.first)
        #expect(teamA.owner == "alice" && teamA.members == ["m1", "m2"])
        #expect(teamA.memberCount == BoundedCount(value: 3), "three members, the cap: counted exactly")
        #expect(teamA.records == BoundedCount(value: 1, capped: true), "two records read as at least one")
        #expect(small.clients.map(\.clientID) == ["bob-laptop"], "the most recently seen")
        #expect(small.clientCount == BoundedCount(value: 2))

        let all = try await core.service.overview()
        #expect(all.scopes.map(\.scope) == ["team:a", "team:b", "team:c", "user:alice", "user:bob", "user:dora"])
        #expect(all.scopeCount == BoundedCount(value: 6))
        let dora = try #require(all.scopes.last)
        #expect(dora.owner == "dora" && dora.members == ["m1"] && dora.records == BoundedCount(value: 0))
        let phone = try #require(all.clients.first { $0.clientID == "alice-phone" })
        #expect(phone.user == "alice" && phone.lastMutationID == 5 && phone.lastPushAt > 0)
        #expect(all.clients.map(\.clientID) == ["bob-laptop", "alice-phone"])
    }

    @Test("the activity keeps the latest rejections, newest first, and does not count a replayed one twice")
    func rejectionsAreBounded() {
        let activity = ServerActivity(windowSeconds: 10, rejectionCapacity: 3, clientCapacity: 2)
        let now = Date()
        for id in 1...5 {
            let response = PushResponse(
                lastMutationID: MutationID(id), results: [MutationResult(id: MutationID(id), status: .rejected, reason: .stale, message: "m\(id)")],
                serverStamp: HLCTimestamp(rawValue: 0))
            activity.pushed(user: "u", clientID: "c", response: response, at: now)
            // The same answer again (a replay) adds nothing.
            activity.pushed(user: "u", clientID: "c", response: response, at: now)
        }
        activity.pulled(user: "v", clientID: "d", at: now.addingTimeInterval(1))
        activity.pulled(user: "w", clientID: "e", at: now.addingTimeInterval(2))
        let snapshot = activity.snapshot(clients: 10)
        #expect(snapshot.rejections.map(\.mutationID) == [5, 4, 3])
        #expect(snapshot.pushes.total == 10 && snapshot.pulls.total == 2)
        #expect(snapshot.pushes.perSecond == 1.0, "ten pushes over a window of ten seconds")
        #expect(snapshot.clients.count <= 2 && snapshot.clients.first?.clientID == "e")
    }

    @Test("refusals without an accepted token are counted, not listed, and what a refused request names is cut to a few hundred bytes")
    func refusalsAreBoundedInSize() {
        let activity = ServerActivity(windowSeconds: 10, rejectionCapacity: 3, clientCapacity: 2)
        let now = Date()
        let unauthorized = SyncServiceError(401, .unauthorized, "no token")
        for _ in 1...10 { activity.refused(route: "push", user: nil, clientID: "x", error: unauthorized, at: now) }
        let huge = String(repeating: "é", count: 1_000_000)
        activity.refused(route: "push", user: "alice", clientID: huge, error: SyncServiceError(400, .malformedRequest, huge), at: now)
        let snapshot = activity.snapshot(clients: 10)
        #expect(snapshot.refusedWithoutToken == 10)
        #expect(snapshot.rejections.count == 1)
        let listed = snapshot.rejections.first
        #expect((listed?.clientID?.utf8.count ?? .max) <= 256 && listed?.clientID?.hasSuffix("…") == true)
        #expect((listed?.message.utf8.count ?? .max) <= 512)
        #expect(listed?.clientID?.dropLast().allSatisfy { $0 == "é" } == true, "cut between characters")
    }
}
