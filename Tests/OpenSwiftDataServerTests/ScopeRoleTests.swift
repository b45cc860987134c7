import Foundation
import GRDB
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import PostgresNIO
import Testing

/// `Item.count` merges as a counter: a version 2 push may contribute to it.
private let mergingSchema = SchemaDescriptor(entities: [
    EntityDescriptor(
        name: "Item",
        fields: [
            FieldDescriptor(name: "title", kind: .string, optional: false),
            FieldDescriptor(name: "count", kind: .int, optional: false, merge: .counter),
        ])
])

private let board: ScopeID = "board:b1"
private let other: ScopeID = "board:b2"

/// One change of an `Item`, in a mutation of its own.
private func itemMutation(
    _ id: MutationID, _ op: RecordOperation, _ recordID: RecordID, scope: ScopeID = board, fields: [SyncName: SyncValue] = [:],
    merge: [SyncName: FieldMerge] = [:]
) -> Mutation {
    Mutation(
        id: id, stamp: stamp(1_790_000_000_000 + UInt64(id)),
        changes: [RecordChange(op: op, entity: "Item", recordID: recordID, scope: scope, fields: fields, merge: merge)])
}

/// Pushes one mutation as `user` and returns its result.
private func push(
    _ h: CoreHarness, _ user: String, client: ClientID, _ mutation: Mutation, version: ProtocolVersion = .fieldMerges
) async throws -> MutationResult? {
    try await h.service.push(
        user: user, request: PushRequest(protocolVersion: version, clientID: client, mutations: [mutation], schema: mergingSchema)
    ).results.first
}

@Suite("Sync core: readers and writers of a scope")
struct ScopeRoleTests {
    /// Alice owns `board:b1` (with item `i1`) and `board:b2`; carol is a writer of b1, and bob
    /// a reader.
    private func sharedBoard(_ backend: Backend) async throws -> CoreHarness {
        let h = try await CoreHarness(backend)
        let created = try await push(h, "alice", client: "a", itemMutation(1, .insert, "i1", fields: ["title": .string("plan"), "count": .int(0)]))
        #expect(created?.status == .applied)
        _ = try await push(h, "alice", client: "a", itemMutation(2, .insert, "i2", scope: other, fields: ["title": .string("b2"), "count": .int(0)]))
        let readers = try await h.service.grant(user: "alice", scope: board, request: GrantRequest(user: "bob", role: .reader))
        #expect(readers == ScopeMembersResponse(scope: board, owner: "alice", members: [], readers: ["bob"]))
        let both = try await h.service.grant(user: "alice", scope: board, request: GrantRequest(user: "carol", role: .writer))
        #expect(both == ScopeMembersResponse(scope: board, owner: "alice", members: ["carol"], readers: ["bob"]))
        _ = try await h.service.grant(user: "alice", scope: other, request: GrantRequest(user: "bob"))
        return h
    }

    @Test("a reader pulls the scope, and every write of theirs into it is refused per mutation: readOnly in version 2", arguments: Backend.all)
    func readerWritesRefused(_ backend: Backend) async throws {
        let h = try await sharedBoard(backend)
        let pulled = try await h.pullAll("bob", client: "b")
        #expect(Set(pulled.changes.map(\.recordID)) == ["i1", "i2"])
        #expect(try await h.service.members(user: "bob", scope: board).readers == ["bob"])
        #expect(try await h.service.scopes(user: "bob").scopes.contains(ScopeAccess(scope: board, role: .member, grant: .reader)))
        // One push: an insert, an update, a merge, a delete, a move out and a move in, each
        // refused on its own; the write into a scope bob writes is applied between them.
        let request = PushRequest(
            protocolVersion: .fieldMerges, clientID: "b",
            mutations: [
                itemMutation(1, .insert, "mine", fields: ["title": .string("x"), "count": .int(0)]),
                itemMutation(2, .update, "i1", fields: ["title": .string("bob's")]),
                itemMutation(3, .update, "i1", merge: ["count": .counter(.int(5))]),
                itemMutation(4, .delete, "i1"),
                itemMutation(5, .update, "i1", scope: other),
                itemMutation(6, .update, "i2", scope: board),
                itemMutation(7, .insert, "ok", scope: other, fields: ["title": .string("fine"), "count": .int(0)]),
            ], schema: mergingSchema)
        let response = try await h.service.push(user: "bob", request: request)
        #expect(response.results.map(\.status) == [.rejected, .rejected, .rejected, .rejected, .rejected, .rejected, .applied])
        for result in response.results.prefix(6) {
            #expect(result.reason == .readOnly)
            #expect(result.message?.contains("board:b1") == true, "\(result.message ?? "")")
        }
        // The reader is shown the server's state of the records refused (he may read them).
        #expect(response.results[1].serverRecords?.first?.fields["title"] == .string("plan"))
        let state = try await h.state("alice")
        #expect(state["Item/i1"]?["title"] == .string("plan"))
        #expect(state["Item/i1"]?["count"] == .int(0))
        #expect(state["Item/mine"] == nil)
        #expect(state["Item/ok"] != nil)
        // The writer writes.
        #expect(try await push(h, "carol", client: "c", itemMutation(1, .update, "i1", fields: ["title": .string("carol's")]))?.status == .applied)
        #expect(try await h.state("alice")["Item/i1"]?["title"] == .string("carol's"))
    }

    @Test("a version 1 client is refused with scopeNotGranted, the reason it knows, also when it replays", arguments: Backend.all)
    func versionOneGetsScopeNotGranted(_ backend: Backend) async throws {
        let h = try await sharedBoard(backend)
        let mutation = itemMutation(1, .update, "i1", fields: ["title": .string("bob's")])
        let v1 = PushRequest(protocolVersion: .plainFields, clientID: "b", mutations: [mutation])
        let first = try await h.service.push(user: "bob", request: v1)
        #expect(first.results.first?.reason == .scopeNotGranted)
        #expect(first.results.first?.message?.contains("read-only") == true)
        #expect(first.results.first?.serverRecords?.count == 1)
        let replay = try await h.service.push(user: "bob", request: v1)
        #expect(replay.results.first?.reason == .scopeNotGranted)
        // The answer a version 1 client decodes holds no reason it does not know.
        let bytes = try JSONEncoder.syncProtocol().encode(first)
        #expect(!String(decoding: bytes, as: UTF8.self).contains("readOnly"))
    }

    @Test("granting a member again changes their role; a grant without a role makes a writer; a revoke ends both", arguments: Backend.all)
    func roleChanges(_ backend: Backend) async throws {
        let h = try await sharedBoard(backend)
        // Bob becomes a writer: his write is applied.
        let promoted = try await h.service.grant(user: "alice", scope: board, request: GrantRequest(user: "bob", role: .writer))
        #expect(promoted == ScopeMembersResponse(scope: board, owner: "alice", members: ["bob", "carol"], readers: []))
        #expect(try await push(h, "bob", client: "b", itemMutation(1, .update, "i1", fields: ["title": .string("bob's")]))?.status == .applied)
        // Carol becomes a reader: hers is refused.
        _ = try await h.service.grant(user: "alice", scope: board, request: GrantRequest(user: "carol", role: .reader))
        #expect(try await push(h, "carol", client: "c", itemMutation(1, .update, "i1", fields: ["title": .string("c")]))?.reason == .readOnly)
        // An old-style request, without a role, makes a new member a writer, and leaves an
        // existing member's role as it is.
        let old = try JSONDecoder().decode(GrantRequest.self, from: Data(#"{"protocolVersion": 1, "user": "dave"}"#.utf8))
        #expect(old.role == nil)
        let withDave = try await h.service.grant(user: "alice", scope: board, request: old)
        #expect(withDave.members == ["bob", "dave"] && withDave.readers == ["carol"])
        let carolAgain = try await h.service.grant(user: "alice", scope: board, request: GrantRequest(user: "carol"))
        #expect(carolAgain.members == ["bob", "dave"] && carolAgain.readers == ["carol"])
        #expect(try await push(h, "dave", client: "d", itemMutation(1, .update, "i1", fields: ["title": .string("dave's")]))?.status == .applied)
        // Revoked: carol neither reads nor writes.
        let revoked = try await h.service.revoke(user: "alice", scope: board, member: "carol")
        #expect(revoked.readers == [])
        await expectError(.forbidden) { _ = try await h.service.members(user: "carol", scope: board) }
        #expect(try await push(h, "carol", client: "c", itemMutation(2, .update, "i1", fields: ["title": .string("c")]))?.reason == .scopeNotGranted)
        // A reader may not grant.
        _ = try await h.service.grant(user: "alice", scope: board, request: GrantRequest(user: "erin", role: .reader))
        await expectError(.forbidden) {
            _ = try await h.service.grant(user: "erin", scope: board, request: GrantRequest(user: "frank", role: .reader))
        }
    }

    @Test("membership answers decode without readers, as servers before roles sent them")
    func membersWithoutReaders() throws {
        let decoded = try JSONDecoder().decode(
            ScopeMembersResponse.self, from: Data(#"{"scope": "board:b1", "owner": "alice", "members": ["bob"]}"#.utf8))
        #expect(decoded == ScopeMembersResponse(scope: board, owner: "alice", members: ["bob"], readers: []))
        let access = try JSONDecoder().decode(ScopeAccess.self, from: Data(#"{"scope": "board:b1", "role": "member"}"#.utf8))
        #expect(access.grant == nil && access.canWrite)
    }

    @Test("a database whose grants predate roles keeps them, as writers", arguments: Backend.all)
    func migrationKeepsGrantsAsWriters(_ backend: Backend) async throws {
        let directory = try TemporaryDirectory()
        let first = try await TestStorage.make(backend, directory: directory)
        let service = try await SyncService(storage: first.storage, now: ManualClock().clock)
        let created = try await service.push(
            user: "alice",
            request: PushRequest(
                protocolVersion: .fieldMerges, clientID: "a",
                mutations: [itemMutation(1, .insert, "i1", fields: ["title": .string("plan"), "count": .int(0)])], schema: mergingSchema))
        #expect(created.results.first?.status == .applied)
        _ = try await service.grant(user: "alice", scope: board, request: GrantRequest(user: "bob"))
        _ = try await service.grant(user: "alice", scope: board, request: GrantRequest(user: "carol"))
        try await first.storage.close()
        // Back to the schema before roles: the column and its migration's record gone.
        let reopened: any SyncStorageBackend
        switch first {
        case .sqlite(_, let path):
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(
                    sql: "ALTER TABLE osd_grants DROP COLUMN role; DELETE FROM grdb_migrations WHERE identifier = 'osd-server v4 grant roles'")
            }
            try queue.close()
            reopened = try SQLiteSyncStorage(path: path)
        case .postgres(let storage):
            let configuration = storage.configuration
            try await PostgresTestDatabase.withProbe(configuration) { connection in
                try await connection.query(
                    PostgresQuery(unsafeSQL: "ALTER TABLE \(configuration.schema).osd_grants DROP COLUMN role"),
                    logger: PostgresTestDatabase.quietLogger)
                try await connection.query(
                    PostgresQuery(unsafeSQL: "DELETE FROM \(configuration.schema).osd_migrations WHERE version = 4"),
                    logger: PostgresTestDatabase.quietLogger)
            }
            reopened = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        }
        let again = try await SyncService(storage: reopened, now: ManualClock().clock)
        #expect(
            try await again.members(user: "alice", scope: board) == ScopeMembersResponse(scope: board, owner: "alice", members: ["bob", "carol"]))
        let write = try await again.push(
            user: "bob",
            request: PushRequest(
                protocolVersion: .fieldMerges, clientID: "b", mutations: [itemMutation(1, .update, "i1", fields: ["title": .string("bob's")])],
                schema: mergingSchema))
        #expect(write.results.first?.status == .applied)
        // Roles given after the migration are kept.
        _ = try await again.grant(user: "alice", scope: board, request: GrantRequest(user: "carol", role: .reader))
        #expect(try await again.members(user: "bob", scope: board).readers == ["carol"])
        try await reopened.close()
    }
}
