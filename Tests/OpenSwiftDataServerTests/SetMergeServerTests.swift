import Foundation
import OpenSwiftDataMerge
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

/// A schema whose `Message.readBy` is a set; `merging: false` is an older app's, which writes it
/// whole.
private func schema(merging: Bool = true) -> SchemaDescriptor {
    SchemaDescriptor(entities: [
        EntityDescriptor(
            name: "Message",
            fields: [
                FieldDescriptor(name: "body", kind: .string, optional: false),
                FieldDescriptor(name: "readBy", kind: .json, optional: false, merge: merging ? .set : nil),
            ])
    ])
}

private func change(
    _ op: RecordOperation, base: ServerVersion? = nil, fields: [SyncName: SyncValue] = [:], merge: [SyncName: FieldMerge] = [:]
) -> RecordChange {
    RecordChange(op: op, entity: "Message", recordID: "m1", scope: .user("alice"), baseVersion: base, fields: fields, merge: merge)
}

private func set(add: [String] = [], remove: [String] = []) -> [SyncName: FieldMerge] {
    ["readBy": .set(SetChange(add: add.map { "\"\($0)\"" }, remove: remove.map { "\"\($0)\"" }))]
}

private func push(
    _ h: CoreHarness, client: ClientID, _ id: MutationID, _ change: RecordChange, merging: Bool = true, version: ProtocolVersion = .fieldMerges
) async throws -> MutationResult? {
    let request = PushRequest(
        protocolVersion: version, clientID: client, mutations: [Mutation(id: id, stamp: stamp(1_790_000_000_000 + UInt64(id)), changes: [change])],
        schema: schema(merging: merging))
    return try await h.service.push(user: "alice", request: request).results.first
}

@Suite("Server: sets' adds and removes applied inside the push")
struct SetMergeServerTests {
    @Test("adds from two clients are both kept in the order the server took them; an unobserved add wins over a remove", arguments: Backend.all)
    func addsAndRemoves(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(
            try await push(h, client: "phone", 1, change(.insert, fields: ["body": .string("hi"), "readBy": .json("[\"ann\",\"ann\"]")]))?.status
                == .applied)
        #expect(try await push(h, client: "phone", 2, change(.update, base: 1, merge: set(add: ["bob"])))?.status == .applied)
        #expect(try await push(h, client: "laptop", 1, change(.update, base: 1, merge: set(add: ["carol"])))?.status == .applied)
        #expect(try await h.state("alice")["Message/m1"]?["readBy"] == .json("[\"ann\",\"bob\",\"carol\"]"))
        // The tablet saw version 3 (ann, bob) and removes bob and ann; the laptop, based on 1,
        // adds bob: its add was not observed, bob stays.
        #expect(try await push(h, client: "laptop", 2, change(.update, base: 1, merge: set(add: ["bob"])))?.status == .applied)
        #expect(try await push(h, client: "tablet", 1, change(.update, base: 3, merge: set(remove: ["bob", "ann"])))?.status == .applied)
        #expect(try await h.state("alice")["Message/m1"]?["readBy"] == .json("[\"carol\",\"bob\"]"))
        let pulled = try await h.pullAll("alice", client: "reader").changes
        #expect(pulled.last?.fields["readBy"] == .json("[\"carol\",\"bob\"]"))
    }

    @Test(
        "an element written another way (escapes, spacing, key order) is the same element: added once, removed by any of its forms",
        arguments: Backend.all)
    func elementsAreCanonical(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(try await push(h, client: "c", 1, change(.insert, fields: ["body": .string("a"), "readBy": .json("[\"bob\"]")]))?.status == .applied)
        let adds = ["\"\\u0062ob\"", "{ \"emoji\": \"👍\", \"by\": \"ann\" }"]
        #expect(try await push(h, client: "d", 1, change(.update, base: 1, merge: ["readBy": .set(SetChange(add: adds))]))?.status == .applied)
        #expect(try await h.state("alice")["Message/m1"]?["readBy"] == .json("[\"bob\",{\"by\":\"ann\",\"emoji\":\"👍\"}]"))
        let removes = ["{\"by\":\"ann\",\n \"emoji\":\"\\ud83d\\udc4d\"}"]
        #expect(try await push(h, client: "c", 2, change(.update, base: 2, merge: ["readBy": .set(SetChange(remove: removes))]))?.status == .applied)
        #expect(try await h.state("alice")["Message/m1"]?["readBy"] == .json("[\"bob\"]"))
    }

    @Test(
        "refusals: an element that is not one JSON value, one too large, a set change to a counter's field, a set past 1 MiB", arguments: Backend.all)
    func refusals(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(try await push(h, client: "c", 1, change(.insert, fields: ["body": .string("a"), "readBy": .json("[]")]))?.status == .applied)
        let notJSON = try await push(h, client: "c", 2, change(.update, base: 1, merge: ["readBy": .set(SetChange(add: ["bob"]))]))
        #expect(notJSON?.reason == .validation && notJSON?.message?.contains("readBy") == true)
        let twoValues = try await push(h, client: "c", 3, change(.update, base: 1, merge: ["readBy": .set(SetChange(add: ["1,2"]))]))
        #expect(twoValues?.reason == .validation)
        let large = "\"" + String(repeating: "x", count: SetElements.maximumElementBytes) + "\""
        let tooLarge = try await push(h, client: "c", 4, change(.update, base: 1, merge: ["readBy": .set(SetChange(add: [large]))]))
        #expect(tooLarge?.reason == .validation && tooLarge?.message?.contains("bytes") == true)
        let undeclared = try await push(h, client: "c", 5, change(.update, base: 1, merge: ["body": .set(SetChange(add: ["\"x\""]))]))
        #expect(undeclared?.reason == .validation)
        // Every change logs the whole value: a set stays within 1 MiB of JSON.
        let big = (0..<270).map { "\"" + String(repeating: "x", count: 3_990) + "\($0)\"" }
        let overBytes = try await push(h, client: "c", 6, change(.update, base: 1, merge: ["readBy": .set(SetChange(add: big))]))
        #expect(overBytes?.reason == .validation && overBytes?.message?.contains("more than \(SetElements.maximumBytes)") == true)
        #expect(
            try await push(h, client: "c", 7, change(.update, base: 1, merge: ["readBy": .set(SetChange(add: Array(big.prefix(200))))]))?.status
                == .applied)
        #expect(try await h.state("alice")["Message/m1"]?["readBy"] == .json(SetElements.json(Array(big.prefix(200)))))
    }

    @Test(
        "an older app's whole write of a set is merged when nobody else changed the record, and refused, naming the field, otherwise",
        arguments: Backend.all)
    func olderAppWrites(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(
            try await push(h, client: "new", 1, change(.insert, fields: ["body": .string("a"), "readBy": .json("[\"ann\",\"bob\"]")]))?.status
                == .applied)
        let whole = try await push(
            h, client: "old", 1, change(.update, base: 1, fields: ["readBy": .json("[\"bob\",\"carol\"]")]), merging: false, version: .plainFields)
        #expect(whole?.status == .applied)
        #expect(try await h.state("alice")["Message/m1"]?["readBy"] == .json("[\"bob\",\"carol\"]"))
        #expect(try await push(h, client: "new", 2, change(.update, base: 2, merge: set(add: ["dave"])))?.status == .applied)
        let stale = try await push(
            h, client: "old", 2, change(.update, base: 2, fields: ["readBy": .json("[\"carol\"]")]), merging: false, version: .plainFields)
        #expect(stale?.status == .rejected && stale?.reason == .validation)
        #expect(stale?.message?.contains("\"readBy\"") == true)
        #expect(try await h.state("alice")["Message/m1"]?["readBy"] == .json("[\"bob\",\"carol\",\"dave\"]"))
    }

    @Test(
        "two devices that insert the same record both keep their elements; a value written before the field merged is taken over",
        arguments: Backend.all)
    func insertsOfOneRecordUnite(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        let first = change(.insert, fields: ["body": .string("a"), "readBy": .json("[\"ann\",\"bob\"]")])
        #expect(try await push(h, client: "phone", 1, first)?.status == .applied)
        let second = change(.insert, fields: ["body": .string("a"), "readBy": .json("[\"carol\",\"ann\"]")])
        #expect(try await push(h, client: "laptop", 1, second)?.status == .applied)
        #expect(try await h.state("alice")["Message/m1"]?["readBy"] == .json("[\"ann\",\"bob\",\"carol\"]"))
        // An older app created the record: its value becomes adds every device has seen.
        let h2 = try await CoreHarness(backend)
        let old = change(.insert, fields: ["body": .string("a"), "readBy": .json("[\"ann\"]")])
        #expect(try await push(h2, client: "old", 1, old, merging: false, version: .plainFields)?.status == .applied)
        #expect(try await push(h2, client: "new", 1, change(.update, base: 1, merge: set(add: ["bob"], remove: ["ann"])))?.status == .applied)
        #expect(try await h2.state("alice")["Message/m1"]?["readBy"] == .json("[\"bob\"]"))
    }

    @Test("a resolver that writes a set's field whole does not overwrite it: the set merges whatever the resolver says", arguments: Backend.all)
    func resolverWritesDoNotOverwriteSets(_ backend: Backend) async throws {
        var configuration = SyncServiceConfiguration()
        configuration.resolvers["Message"] = { input in
            input.change.op == .update ? .apply(fields: input.change.fields.merging(["readBy": .json("[]")]) { $1 }, links: [:]) : .usePolicy
        }
        let h = try await CoreHarness(backend, configuration: configuration)
        #expect(
            try await push(h, client: "phone", 1, change(.insert, fields: ["body": .string("hi"), "readBy": .json("[\"ann\"]")]))?.status == .applied)
        // A change of the body alone: the resolver's whole readBy is not taken.
        #expect(try await push(h, client: "phone", 2, change(.update, base: 1, fields: ["body": .string("hi!")]))?.status == .applied)
        var state = try await h.state("alice")["Message/m1"]
        #expect(state?["readBy"] == .json("[\"ann\"]"))
        #expect(state?["body"] == .string("hi!"))
        // Nor beside the set's own change.
        #expect(
            try await push(h, client: "laptop", 1, change(.update, base: 2, fields: ["body": .string("hey")], merge: set(add: ["bob"])))?.status
                == .applied)
        state = try await h.state("alice")["Message/m1"]
        #expect(state?["readBy"] == .json("[\"ann\",\"bob\"]"))
    }

    @Test("a set's stored form (\"t\") reads back by hand and through JSONDecoder, byte for byte as JSONEncoder writes it")
    func storedSetRoundTrips() throws {
        var state = SetState()
        state.apply(adds: ["\"bob\"", "{\"by\":\"ann\",\"emoji\":\"👍\"}", "\"a b\""], removes: [], client: "c", version: 4, seen: nil)
        state.apply(adds: ["\"bob\""], removes: [], client: "d", version: 7, seen: 4, mutation: 12)
        let fields: [SyncName: StoredField] = [
            "readBy": StoredField(
                value: .json(SetElements.json(state.elements)), kind: .json, stamp: stamp(1_790_000_000_000), client: "c", merge: .set, set: state),
            "body": StoredField(value: .string("a"), kind: .string, stamp: stamp(1_790_000_000_000), client: "c"),
        ]
        let bytes = Data(try StoredColumns.encodeFields(fields))
        #expect(try StoredColumns.decodeFields(bytes) == fields)
        #expect(try JSONDecoder().decode([SyncName: StoredField].self, from: bytes) == fields)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(try encoder.encode(fields) == bytes)
    }
}
