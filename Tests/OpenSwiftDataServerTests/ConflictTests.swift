import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

@Suite("Sync core: conflicts, policies, deletes")
struct ConflictTests {
    /// Two clients' concurrent edits of one record, delivered in both orders to fresh servers.
    /// Under `recordLastWriterWins` a writer sends every field it knows (`wholeRecords`).
    private func converge(_ backend: Backend, policy: ConflictPolicy, wholeRecords: Bool = false) async throws -> [[SyncName: SyncValue]?] {
        var outcomes: [[SyncName: SyncValue]?] = []
        for order in [["a", "b"], ["b", "a"]] {
            let h = try await CoreHarness(backend, configuration: SyncServiceConfiguration(policies: ["Note": policy]))
            _ = try await h.service.push(
                user: "alice",
                request: PushRequest(
                    clientID: "seed",
                    mutations: [
                        mutation(1, .insert, "n1", fields: ["title": .string("t0"), "body": .string("b0"), "pinned": .bool(false)])
                    ]))
            let edits: [String: PushRequest] = [
                // a: newer title, older body
                "a": PushRequest(
                    clientID: "a",
                    mutations: [
                        Mutation(
                            id: 1, stamp: stamp(1_790_000_000_500),
                            changes: [
                                RecordChange(
                                    op: .update, entity: "Note", recordID: "n1", scope: .user("alice"), baseVersion: 1,
                                    fields: wholeRecords
                                        ? ["title": .string("ta"), "body": .string("b0"), "pinned": .bool(false)] : ["title": .string("ta")])
                            ]),
                        Mutation(
                            id: 2, stamp: stamp(1_790_000_000_100),
                            changes: [
                                RecordChange(
                                    op: .update, entity: "Note", recordID: "n1", scope: .user("alice"), baseVersion: 1,
                                    fields: wholeRecords
                                        ? ["title": .string("t0"), "body": .string("ba"), "pinned": .bool(false)] : ["body": .string("ba")])
                            ]),
                    ]),
                "b": PushRequest(
                    clientID: "b",
                    mutations: [
                        Mutation(
                            id: 1, stamp: stamp(1_790_000_000_300),
                            changes: [
                                RecordChange(
                                    op: .update, entity: "Note", recordID: "n1", scope: .user("alice"), baseVersion: 1,
                                    fields: ["title": .string("tb"), "body": .string("bb"), "pinned": .bool(true)])
                            ])
                    ]),
            ]
            for client in order {
                let response = try await h.service.push(user: "alice", request: edits[client]!)
                #expect(response.results.allSatisfy { $0.status == .applied })
            }
            outcomes.append(try await h.state("alice")["Note/n1"])
        }
        return outcomes
    }

    @Test("per-field last-writer-wins: the result does not depend on arrival order", arguments: Backend.all)
    func fieldLWW(_ backend: Backend) async throws {
        let outcomes = try await converge(backend, policy: .fieldLastWriterWins)
        #expect(outcomes[0] == outcomes[1])
        #expect(outcomes[0] == ["title": .string("ta"), "body": .string("bb"), "pinned": .bool(true)])
    }

    @Test("record-level last-writer-wins: the latest write decides every field, whatever the order", arguments: Backend.all)
    func recordLWW(_ backend: Backend) async throws {
        let outcomes = try await converge(backend, policy: .recordLastWriterWins, wholeRecords: true)
        #expect(outcomes[0] == outcomes[1])
        #expect(outcomes[0] == ["title": .string("ta"), "body": .string("b0"), "pinned": .bool(false)])
    }

    @Test("equal stamps are ordered by client id", arguments: Backend.all)
    func tieBreak(_ backend: Backend) async throws {
        var outcomes: [SyncValue?] = []
        for order in [["x", "y"], ["y", "x"]] {
            let h = try await CoreHarness(backend)
            _ = try await h.service.push(
                user: "alice",
                request: PushRequest(clientID: "seed", mutations: [mutation(1, .insert, "n1", at: 1_000, fields: ["title": .string("t0")])]))
            for client in order {
                _ = try await h.service.push(
                    user: "alice",
                    request: PushRequest(
                        clientID: client, mutations: [mutation(1, .update, "n1", at: 1_790_000_000_000, fields: ["title": .string(client)])]))
            }
            outcomes.append(try await h.state("alice")["Note/n1"]?["title"])
        }
        #expect(outcomes == [.string("y"), .string("y")])
    }

    @Test(
        "a write that loses is logged with the value that won, and a later write of the value already there keeps its stamp (simulator seeds 3111, 9896)",
        arguments: Backend.all)
    func losingWriteIsLoggedWithWinner(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        func push(_ client: ClientID, _ op: RecordOperation, at milliseconds: UInt64, title: String) async throws -> PushResponse {
            try await h.service.push(
                user: "alice",
                request: PushRequest(clientID: client, mutations: [mutation(1, op, "n1", at: milliseconds, fields: ["title": .string(title)])]))
        }
        _ = try await push("seed", .insert, at: 1_000, title: "t3")
        // C writes t3 again, last of all: no value changes, nothing is logged.
        _ = try await push("c", .update, at: 3_000, title: "t3")
        // B's older write arrives after it: it loses to C's, and B's change in the log carries t3.
        let before = try await h.pullAll("alice", client: "b").last.cursor
        let answer = try await push("b", .update, at: 2_000, title: "t2")
        #expect(answer.results.map(\.status) == [.applied])
        #expect(try await h.state("alice")["Note/n1"]?["title"] == .string("t3"))
        let pulled = try await h.pullAll("alice", client: "b", cursor: before).changes
        #expect(pulled.map(\.clientID) == ["b"])
        #expect(pulled.map(\.fields) == [["title": .string("t3")]])
    }

    @Test("a stamp from the future is limited to the server's clock", arguments: Backend.all)
    func futureStamp(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(clientID: "liar", mutations: [mutation(1, .insert, "n1", at: 4_000_000_000_000, fields: ["title": .string("2096")])])
        )
        h.clock.advance(10)
        let response = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "honest",
                mutations: [mutation(1, .update, "n1", at: UInt64(h.clock.date.timeIntervalSince1970 * 1000), fields: ["title": .string("now")])]))
        #expect(response.serverStamp.milliseconds < 4_000_000_000_000)
        #expect(try await h.state("alice")["Note/n1"]?["title"] == .string("now"))
    }

    @Test("rejectStale: stale only after another client's change, with the server's record returned", arguments: Backend.all)
    func rejectStale(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend, configuration: SyncServiceConfiguration(policies: ["Note": .rejectStale]))
        _ = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("t0")])]))
        // The same client updating on its own old base is never stale.
        let own = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "a",
                mutations: [
                    mutation(2, .update, "n1", base: 1, at: 1_790_000_000_001, fields: ["title": .string("t1")]),
                    mutation(3, .update, "n1", base: 1, at: 1_790_000_000_002, fields: ["title": .string("t2")]),
                ]))
        #expect(own.results.map(\.status) == [.applied, .applied])
        let stale = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "b", mutations: [mutation(1, .update, "n1", base: 1, at: 1_790_000_000_009, fields: ["title": .string("tb")])]))
        #expect(stale.results.first?.reason == .stale)
        #expect(stale.results.first?.serverRecords?.first?.fields["title"] == .string("t2"))
        let version = try #require(stale.results.first?.serverRecords?.first?.version)
        let fresh = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "b", mutations: [mutation(2, .update, "n1", base: version, at: 1_790_000_000_010, fields: ["title": .string("tb")])]))
        #expect(fresh.results.first?.status == .applied)
    }

    @Test("a resolver decides, as a pure function of the server record and the change", arguments: Backend.all)
    func resolver(_ backend: Backend) async throws {
        let resolver: ConflictResolver = { input in
            if case .int(let count) = input.change.fields["count"], case .int(let current)? = input.serverRecord?.fields["count"] {
                return count < current ? .refuse("count may only grow") : .usePolicy
            }
            return .usePolicy
        }
        let h = try await CoreHarness(backend, configuration: SyncServiceConfiguration(resolvers: ["Counter": resolver]))
        let response = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "a",
                mutations: [
                    mutation(1, .insert, "k", entity: "Counter", fields: ["count": .int(5)]),
                    mutation(2, .update, "k", entity: "Counter", at: 1_790_000_000_001, fields: ["count": .int(3)]),
                    mutation(3, .update, "k", entity: "Counter", at: 1_790_000_000_002, fields: ["count": .int(7)]),
                ]))
        #expect(response.results.map(\.reason) == [nil, .resolverRefused, nil])
        #expect(try await h.state("alice")["Counter/k"]?["count"] == .int(7))
    }

    @Test("deletes win over concurrent updates; an insert of a deleted id starts a new life", arguments: Backend.all)
    func deletes(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("t0"), "body": .string("b0")])]))
        _ = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(2, .delete, "n1", base: 1, at: 1_790_000_000_001)]))
        // An update stamped later than the delete, based on the version before it, is dropped.
        let update = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "b", mutations: [mutation(1, .update, "n1", base: 1, at: 1_790_000_009_000, fields: ["title": .string("late")])]))
        #expect(update.results.first?.reason == .recordDeleted)
        #expect(update.results.first?.serverRecords?.first?.deleted == true)
        #expect(try await h.state("alice")["Note/n1"] == nil)
        // A second delete is harmless.
        let again = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "b", mutations: [mutation(2, .delete, "n1", at: 1_790_000_009_001)]))
        #expect(again.results.first?.status == .applied)
        // New life: only the insert's fields.
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(clientID: "b", mutations: [mutation(3, .insert, "n1", at: 1_000, fields: ["title": .string("reborn")])]))
        #expect(try await h.state("alice")["Note/n1"] == ["title": .string("reborn")])
    }

    @Test("a value of another kind than the field holds is rejected wrongValueType", arguments: Backend.all)
    func wrongValueType(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("t0"), "due": .null])]))
        let before = try await h.footprint()
        let response = try await h.service.push(
            user: "alice",
            request: PushRequest(clientID: "a", mutations: [mutation(2, .update, "n1", at: 1_790_000_000_001, fields: ["title": .date(3)])]))
        #expect(response.results.first?.reason == .wrongValueType)
        #expect(response.results.first?.message?.contains("\"title\" holds string values, not date") == true)
        #expect(try await h.count("osd_changes") == before["osd_changes"])
        // nil is accepted for any kind; a schema's kind is enforced for a field never set.
        let schema = SchemaDescriptor(entities: [
            EntityDescriptor(
                name: "Note",
                fields: [
                    FieldDescriptor(name: "title", kind: .string, optional: false), FieldDescriptor(name: "due", kind: .date, optional: true),
                ])
        ])
        let typed = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "a",
                mutations: [
                    mutation(3, .update, "n1", at: 1_790_000_000_002, fields: ["due": .int(1)]),
                    mutation(4, .update, "n1", at: 1_790_000_000_003, fields: ["due": .date(1)]),
                    mutation(5, .update, "n1", at: 1_790_000_000_004, fields: ["title": .null]),
                    mutation(6, .update, "n1", at: 1_790_000_000_005, fields: ["color": .string("red")]),
                ], schema: schema))
        #expect(typed.results.map(\.reason) == [.wrongValueType, nil, .validation, .validation])
    }

    @Test("links merge element by element: two devices' additions both stay", arguments: Backend.all)
    func links(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        _ = try await h.service.push(
            user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1", links: ["tags": LinkChange(added: ["t1"])])]))
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "a",
                mutations: [mutation(2, .update, "n1", at: 1_790_000_000_002, links: ["tags": LinkChange(added: ["t2"], removed: ["t1"])])]))
        _ = try await h.service.push(
            user: "alice",
            request: PushRequest(
                clientID: "b", mutations: [mutation(1, .update, "n1", at: 1_790_000_000_001, links: ["tags": LinkChange(added: ["t3", "t1"])])]))
        let snapshot = try await h.pullAll("alice", client: "fresh").changes
        #expect(snapshot.first?.links["tags"]?.added == ["t2", "t3"], "t1's removal is later than b's re-add")
    }
}
