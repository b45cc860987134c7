import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

/// A schema whose `Item.count` (int) and `Item.score` (double) are counters; `merging: false`
/// is an older app's, which writes them whole.
private func schema(merging: Bool = true) -> SchemaDescriptor {
    SchemaDescriptor(entities: [
        EntityDescriptor(
            name: "Item",
            fields: [
                FieldDescriptor(name: "title", kind: .string, optional: false),
                FieldDescriptor(name: "count", kind: .int, optional: false, merge: merging ? .counter : nil),
                FieldDescriptor(name: "score", kind: .double, optional: false, merge: merging ? .counter : nil),
            ])
    ])
}

private func change(
    _ op: RecordOperation, base: ServerVersion? = nil, fields: [SyncName: SyncValue] = [:], merge: [SyncName: FieldMerge] = [:]
) -> RecordChange {
    RecordChange(op: op, entity: "Item", recordID: "i1", scope: .user("alice"), baseVersion: base, fields: fields, merge: merge)
}

private func push(
    _ h: CoreHarness, client: ClientID, _ id: MutationID, _ change: RecordChange, merging: Bool = true, version: ProtocolVersion = .fieldMerges
) async throws -> MutationResult? {
    let request = PushRequest(
        protocolVersion: version, clientID: client, mutations: [Mutation(id: id, stamp: stamp(1_790_000_000_000 + UInt64(id)), changes: [change])],
        schema: schema(merging: merging))
    return try await h.service.push(user: "alice", request: request).results.first
}

@Suite("Server: counters' contributions applied inside the push")
struct CounterMergeServerTests {
    @Test("contributions from two clients add up, whatever their stamps; pulls carry the total in fields", arguments: Backend.all)
    func contributionsAddUp(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        let insert = change(.insert, fields: ["title": .string("a"), "count": .int(2), "score": .double(0.5)])
        #expect(try await push(h, client: "phone", 1, insert)?.status == .applied)
        #expect(try await push(h, client: "phone", 2, change(.update, base: 1, merge: ["count": .counter(.int(1))]))?.status == .applied)
        // The laptop's contribution carries an older stamp and base: it still counts.
        #expect(try await push(h, client: "laptop", 1, change(.update, base: 1, merge: ["count": .counter(.int(3))]))?.status == .applied)
        #expect(
            try await push(h, client: "laptop", 2, change(.update, base: 1, merge: ["score": .counter(.double(-0.25))]))?.status == .applied)
        let state = try await h.state("alice")["Item/i1"]
        #expect(state?["count"] == .int(6))
        #expect(state?["score"] == .double(0.25))
        let pulled = try await h.pullAll("alice", client: "reader").changes
        #expect(pulled.last?.fields["score"] == .double(0.25))
        // A pull in version 2 answers in version 2, one in version 1 in version 1, with the same totals.
        let v2 = try await h.service.pull(user: "alice", request: PullRequest(protocolVersion: .fieldMerges, clientID: "r2"))
        let v1 = try await h.service.pull(user: "alice", request: PullRequest(protocolVersion: .plainFields, clientID: "r1"))
        #expect(v2.protocolVersion == .fieldMerges && v1.protocolVersion == .plainFields)
        #expect(v1.changes.last?.fields["count"] == .int(6))
    }

    @Test("refusals: a contribution in version 1, of the wrong kind, to an undeclared field, or that overflows", arguments: Backend.all)
    func refusals(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(try await push(h, client: "c", 1, change(.insert, fields: ["title": .string("a"), "count": .int(.max - 1)]))?.status == .applied)
        await expectError(.malformedRequest) {
            _ = try await push(h, client: "c", 2, change(.update, base: 1, merge: ["count": .counter(.int(1))]), version: .plainFields)
        }
        let wrongKind = try await push(h, client: "c", 2, change(.update, base: 1, merge: ["count": .counter(.double(1))]))
        #expect(wrongKind?.reason == .wrongValueType)
        let undeclared = try await push(h, client: "c", 3, change(.update, base: 1, merge: ["title": .counter(.int(1))]))
        #expect(undeclared?.reason == .validation)
        let overflow = try await push(h, client: "c", 4, change(.update, base: 1, merge: ["count": .counter(.int(2))]))
        #expect(overflow?.reason == .validation && overflow?.message?.contains("overflows") == true)
        #expect(try await h.state("alice")["Item/i1"]?["count"] == .int(.max - 1))
    }

    @Test(
        "an older app's whole write of a counter is its difference when nobody else changed the record, and is refused, naming the field, when it would lose others' contributions",
        arguments: Backend.all)
    func olderAppWrites(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(
            try await push(h, client: "new", 1, change(.insert, fields: ["title": .string("a"), "count": .int(0), "score": .double(0)]))?.status
                == .applied)
        let whole = try await push(h, client: "old", 1, change(.update, base: 1, fields: ["count": .int(3)]), merging: false, version: .plainFields)
        #expect(whole?.status == .applied)
        #expect(try await push(h, client: "new", 2, change(.update, base: 1, merge: ["count": .counter(.int(1))]))?.status == .applied)
        let stale = try await push(h, client: "old", 2, change(.update, base: 2, fields: ["count": .int(4)]), merging: false, version: .plainFields)
        #expect(stale?.status == .rejected && stale?.reason == .validation)
        #expect(stale?.message?.contains("\"count\"") == true)
        #expect(try await h.state("alice")["Item/i1"]?["count"] == .int(4))
        // Under rejectStale, contributions alone are never stale.
        let h2 = try await CoreHarness(backend, configuration: SyncServiceConfiguration(policies: ["Item": .rejectStale]))
        #expect(
            try await push(h2, client: "a", 1, change(.insert, fields: ["title": .string("a"), "count": .int(0), "score": .double(0)]))?.status
                == .applied)
        #expect(try await push(h2, client: "b", 1, change(.update, base: 1, fields: ["title": .string("b")]))?.status == .applied)
        #expect(try await push(h2, client: "a", 2, change(.update, base: 1, merge: ["count": .counter(.int(5))]))?.status == .applied)
        #expect(try await push(h2, client: "a", 3, change(.update, base: 1, fields: ["title": .string("c")]))?.reason == .stale)
        #expect(try await h2.state("alice")["Item/i1"]?["count"] == .int(5))
    }

    @Test("a merged field's stored form (\"m\") reads back by hand and through JSONDecoder")
    func storedMergeRoundTrips() throws {
        let fields: [SyncName: StoredField] = [
            "count": StoredField(value: .int(3), kind: .int, stamp: stamp(1_790_000_000_000), client: "c", merge: .counter),
            "title": StoredField(value: .string("a"), kind: .string, stamp: stamp(1_790_000_000_000), client: "c"),
        ]
        let bytes = Data(try StoredColumns.encodeFields(fields))
        #expect(try StoredColumns.decodeFields(bytes) == fields)
        #expect(try JSONDecoder().decode([SyncName: StoredField].self, from: bytes) == fields)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(try encoder.encode(fields) == bytes)
    }
}
