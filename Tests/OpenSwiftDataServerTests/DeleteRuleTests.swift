import Foundation
import GRDB
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import PostgresNIO
import Testing

/// The schema of these tests: items belong to a list (cascade), parts to an item (cascade,
/// so a list's delete reaches them through two steps), cards to a list (nullify), locks to a
/// list (deny), and nodes to a parent node (cascade, and cycles are possible).
private let schema = SchemaDescriptor(entities: [
    EntityDescriptor(name: "List", fields: [FieldDescriptor(name: "name", kind: .string, optional: true)]),
    EntityDescriptor(
        name: "Item",
        fields: [
            FieldDescriptor(name: "title", kind: .string, optional: true),
            FieldDescriptor(name: "list", kind: .reference, optional: true, destination: "List", deleteRule: .cascade),
        ]),
    EntityDescriptor(
        name: "Part", fields: [FieldDescriptor(name: "item", kind: .reference, optional: true, destination: "Item", deleteRule: .cascade)]),
    EntityDescriptor(
        name: "Card", fields: [FieldDescriptor(name: "list", kind: .reference, optional: true, destination: "List", deleteRule: .nullify)]),
    EntityDescriptor(name: "Lock", fields: [FieldDescriptor(name: "list", kind: .reference, optional: true, destination: "List", deleteRule: .deny)]),
    EntityDescriptor(
        name: "Node", fields: [FieldDescriptor(name: "parent", kind: .reference, optional: true, destination: "Node", deleteRule: .cascade)]),
])

private func change(
    _ op: RecordOperation, _ entity: SyncName, _ id: RecordID, scope: ScopeID = .user("alice"), _ fields: [SyncName: SyncValue] = [:]
) -> RecordChange {
    RecordChange(op: op, entity: entity, recordID: id, scope: scope, fields: fields)
}

/// Pushes one mutation per element of `mutations` (ids from `first`), with the schema when
/// `sendSchema` (later pushes of a client use the one the server stored).
@discardableResult
private func push(
    _ h: CoreHarness, _ user: String = "alice", client: ClientID, first: MutationID, sendSchema: Bool = true, _ mutations: [[RecordChange]]
) async throws -> PushResponse {
    let batch = mutations.enumerated().map { offset, changes in
        Mutation(id: first + MutationID(offset), stamp: stamp(1_790_000_000_000 + UInt64(first) * 10 + UInt64(offset)), changes: changes)
    }
    return try await h.service.push(user: user, request: PushRequest(clientID: client, mutations: batch, schema: sendSchema ? schema : nil))
}

@Suite("Sync core: the schema's delete rules")
struct DeleteRuleTests {
    @Test("a delete cascades to the records referring to it, with tombstones other clients pull", arguments: Backend.all)
    func cascade(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        try await push(
            h, client: "c1", first: 1,
            [
                [
                    change(.insert, "List", "l1", ["name": .string("groceries")]),
                    change(.insert, "Item", "i1", ["list": .reference("l1")]),
                    change(.insert, "Item", "i2", ["list": .reference("l1")]),
                    change(.insert, "Item", "i3", ["title": .string("loose")]),
                ]
            ])
        let cursor = try await h.pullAll("alice", client: "c2").last.cursor
        // The delete comes without a schema: the server uses the one the client sent before.
        let response = try await push(h, client: "c1", first: 2, sendSchema: false, [[change(.delete, "List", "l1")]])
        #expect(response.results.map(\.status) == [.applied])
        let state = try await h.state("alice")
        #expect(Set(state.keys) == ["Item/i3"])
        let later = try await h.pullAll("alice", client: "c2", cursor: cursor).changes
        #expect(Set(later.filter { $0.op == .delete }.map(\.recordID)) == ["l1", "i1", "i2"])
        #expect(Set(later.map(\.mutationID)) == [2])
    }

    @Test("a cascade goes on through chains and stops at cycles", arguments: Backend.all)
    func chainAndCycle(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        try await push(
            h, client: "c1", first: 1,
            [
                [
                    change(.insert, "List", "l1"),
                    change(.insert, "Item", "i1", ["list": .reference("l1")]),
                    change(.insert, "Part", "p1", ["item": .reference("i1")]),
                    change(.insert, "Node", "n1"),
                    change(.insert, "Node", "n2", ["parent": .reference("n1")]),
                    change(.insert, "Node", "n3", ["parent": .reference("n2")]),
                    change(.insert, "Node", "n9"),
                ],
                [
                    change(.update, "Node", "n1", ["parent": .reference("n3")])
                ],
            ])
        let response = try await push(h, client: "c2", first: 1, [[change(.delete, "List", "l1")], [change(.delete, "Node", "n2")]])
        #expect(response.results.map(\.status) == [.applied, .applied])
        #expect(Set(try await h.state("alice").keys) == ["Node/n9"])
    }

    @Test("a delete sets nullify references nil, and clients pull the update", arguments: Backend.all)
    func nullify(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        try await push(
            h, client: "c1", first: 1,
            [
                [
                    change(.insert, "List", "l1"),
                    change(.insert, "Card", "k1", ["list": .reference("l1")]),
                ]
            ])
        let cursor = try await h.pullAll("alice", client: "c1").last.cursor
        try await push(h, client: "c2", first: 1, [[change(.delete, "List", "l1")]])
        let state = try await h.state("alice")
        #expect(Set(state.keys) == ["Card/k1"])
        #expect(state["Card/k1"]?["list"] == .null)
        let later = try await h.pullAll("alice", client: "c1", cursor: cursor).changes
        #expect(later.contains { $0.op == .update && $0.recordID == "k1" && $0.fields["list"] == .null })
    }

    @Test("a delete of a record a deny reference points at is rejected, unless the save deletes the referrer too", arguments: Backend.all)
    func deny(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        try await push(
            h, client: "c1", first: 1,
            [
                [
                    change(.insert, "List", "l1"),
                    change(.insert, "Lock", "x1", ["list": .reference("l1")]),
                ]
            ])
        let before = try await h.footprint()
        let refused = try await push(h, client: "c2", first: 1, [[change(.delete, "List", "l1")]])
        #expect(refused.results.first?.status == .rejected)
        #expect(refused.results.first?.reason == .validation)
        #expect(refused.results.first?.message?.contains("deny") == true)
        #expect(refused.results.first?.serverRecords?.map(\.recordID) == ["l1"])
        #expect(try await h.state("alice").keys.contains("List/l1"))
        #expect(try await h.footprint()["osd_changes"] == before["osd_changes"])
        let both = try await push(h, client: "c2", first: 2, [[change(.delete, "List", "l1"), change(.delete, "Lock", "x1")]])
        #expect(both.results.map(\.status) == [.applied])
        #expect(try await h.state("alice").isEmpty)
    }

    @Test("an insert or update pointing at a deleted cascade target is rejected naming it; a nullify reference becomes nil", arguments: Backend.all)
    func pointingAtDeleted(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        try await push(
            h, client: "c1", first: 1,
            [
                [
                    change(.insert, "List", "l1"),
                    change(.insert, "List", "l2"),
                    change(.insert, "Item", "i3", ["list": .reference("l2")]),
                ]
            ])
        try await push(h, client: "c2", first: 1, [[change(.delete, "List", "l1")]])
        let response = try await push(
            h, client: "c1", first: 2, sendSchema: false,
            [
                [change(.insert, "Item", "i9", ["list": .reference("l1")])],
                [change(.update, "Item", "i3", ["list": .reference("l1")])],
                [change(.insert, "Card", "k9", ["list": .reference("l1")])],
            ])
        #expect(response.results.map(\.status) == [.rejected, .rejected, .applied])
        for result in response.results.prefix(2) {
            #expect(result.reason == .recordDeleted)
            #expect(result.message?.contains("\"l1\"") == true, "\(result.message ?? "")")
        }
        #expect(response.results[1].serverRecords?.first?.fields["list"] == .reference("l2"))
        let state = try await h.state("alice")
        #expect(state["Item/i9"] == nil)
        #expect(state["Item/i3"]?["list"] == .reference("l2"))
        #expect(state["Card/k9"] != nil && state["Card/k9"]?["list"] == .null)
    }

    @Test("a cascade reaches records pointed at the target earlier in the same batch", arguments: Backend.all)
    func sameBatch(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        try await push(h, client: "c1", first: 1, [[change(.insert, "List", "l1"), change(.insert, "Item", "i1")]])
        let response = try await push(
            h, client: "c1", first: 2,
            [
                [change(.update, "Item", "i1", ["list": .reference("l1")])],
                [change(.insert, "Item", "i2", ["list": .reference("l1")])],
                [change(.delete, "List", "l1")],
            ])
        #expect(response.results.map(\.status) == [.applied, .applied, .applied])
        #expect(try await h.state("alice").isEmpty)
    }

    @Test("a cascade follows the rule into records of scopes the deleting user cannot write", arguments: Backend.all)
    func otherScopes(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        try await push(h, client: "c1", first: 1, [[change(.insert, "List", "l1", scope: .user("alice"))]])
        try await push(h, "bob", client: "b1", first: 1, [[change(.insert, "Item", "b-i1", scope: .user("bob"), ["list": .reference("l1")])]])
        try await push(h, client: "c1", first: 2, [[change(.delete, "List", "l1")]])
        #expect(try await h.state("bob").isEmpty)
    }

    @Test("a database made before the reference index gets it filled by the migration", arguments: Backend.all)
    func migrationFillsIndex(_ backend: Backend) async throws {
        let directory = try TemporaryDirectory()
        let first = try await TestStorage.make(backend, directory: directory)
        let service = try await SyncService(storage: first.storage, now: ManualClock().clock)
        _ = try await service.push(
            user: "alice",
            request: PushRequest(
                clientID: "c1",
                mutations: [
                    Mutation(
                        id: 1, stamp: stamp(1_790_000_000_000),
                        changes: [
                            change(.insert, "List", "l1"),
                            change(.insert, "Item", "i1", ["list": .reference("l1")]),
                            change(.insert, "Card", "k1", ["list": .reference("l1")]),
                        ])
                ], schema: schema))
        try await first.storage.close()
        // Back to the schema before the index: the table and its migration's record gone.
        let reopened: any SyncStorageBackend
        switch first {
        case .sqlite(_, let path):
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(sql: "DROP TABLE osd_refs; DELETE FROM grdb_migrations WHERE identifier = 'osd-server v2 references'")
            }
            try queue.close()
            reopened = try SQLiteSyncStorage(path: path)
        case .postgres(let storage):
            let configuration = storage.configuration
            try await PostgresTestDatabase.withProbe(configuration) { connection in
                try await connection.query(
                    PostgresQuery(unsafeSQL: "DROP TABLE \(configuration.schema).osd_refs"), logger: PostgresTestDatabase.quietLogger)
                try await connection.query(
                    PostgresQuery(unsafeSQL: "DELETE FROM \(configuration.schema).osd_migrations WHERE version = 2"),
                    logger: PostgresTestDatabase.quietLogger)
            }
            reopened = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        }
        let again = try await SyncService(storage: reopened, now: ManualClock().clock)
        let response = try await again.push(
            user: "alice",
            request: PushRequest(
                clientID: "c1", mutations: [Mutation(id: 2, stamp: stamp(1_790_000_000_100), changes: [change(.delete, "List", "l1")])]))
        #expect(response.results.map(\.status) == [.applied])
        // A first download holds the live records: the item went by cascade, the card stays
        // with its list nil.
        let page = try await again.pull(user: "alice", request: PullRequest(clientID: "c2"))
        #expect(page.changes.map(\.recordID) == ["k1"])
        #expect(page.changes.first?.fields["list"] == .null)
        try await reopened.close()
    }
}
