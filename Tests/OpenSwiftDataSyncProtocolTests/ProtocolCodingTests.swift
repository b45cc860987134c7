import Foundation
import OpenSwiftDataSyncProtocol
import Testing

@Suite("Wire protocol coding")
struct ProtocolCodingTests {
    private func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder.syncProtocol().encode(value))
    }

    @Test("a blob reference reads only as 64 lowercase hexadecimal digits, a colon and a size")
    func blobReferences() {
        let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        #expect(BlobReference("\(digest):4")?.size == 4)
        for text in [digest, "\(digest):", "\(digest):-1", "\(digest):04", "\(digest.uppercased()):4", "\(digest.dropLast()):4", "\(digest):4:5"] {
            #expect(BlobReference(text) == nil, "\(text) read as a reference")
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(SyncValue.self, from: Data(#"{"t":"blob","v":"abc:1"}"#.utf8))
        }
    }

    @Test("every value kind round-trips exactly, including extreme numbers")
    func valuesRoundTrip() throws {
        let values: [SyncValue] = [
            .null, .bool(true), .int(.max), .int(.min), .double(0.1), .double(-0.0), .double(.greatestFiniteMagnitude),
            .double(.infinity), .double(-.infinity), .string("Café 🚀"), .date(786_297_600.123_456_7), .data(Data([0, 1, 255])),
            .uuid(UUID()), .decimal("12.50"), .url("https://example.com/a?b=c"), .json("{\"a\":[1,2]}"), .reference("note-17"),
            .blob(try #require(BlobReference("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08:4"))),
        ]
        for value in values {
            let decoded = try roundTrip(value)
            #expect(decoded == value, "\(value) came back as \(decoded)")
        }
        let nan = try roundTrip(SyncValue.double(.nan))
        guard case .double(let decoded) = nan else {
            Issue.record("nan decoded as \(nan)")
            return
        }
        #expect(decoded.isNaN)
        if case .double(let zero) = try roundTrip(SyncValue.double(-0.0)) { #expect(zero.sign == .minus) }
    }

    @Test("values have the documented wire form")
    func wireForm() throws {
        let encoded = try String(
            decoding: JSONEncoder.syncProtocol().encode(["a": SyncValue.int(42), "b": .null, "c": .double(.nan)]), as: UTF8.self)
        #expect(encoded == #"{"a":{"t":"int","v":42},"b":null,"c":{"t":"double","v":"nan"}}"#)
    }

    @Test("a value of an unknown kind or a malformed payload is a decoding error naming it")
    func badValues() {
        for json in [
            #"{"t":"money","v":1}"#, #"{"t":"uuid","v":"nope"}"#, #"{"t":"int","v":"1"}"#, #"{"t":"data","v":"!!"}"#, #"{"t":"double","v":"NaN?"}"#,
            #"{"t":"decimal","v":"1,5"}"#,
        ] {
            #expect(throws: DecodingError.self, "\(json)") { try JSONDecoder().decode(SyncValue.self, from: Data(json.utf8)) }
        }
    }

    @Test("HLC timestamps travel as decimal strings and keep order")
    func hlcCoding() throws {
        let stamp = HLCTimestamp(milliseconds: 1_732_456_789_123, counter: 7)
        #expect(try String(decoding: JSONEncoder.syncProtocol().encode([stamp]), as: UTF8.self) == "[\"\(stamp.rawValue)\"]")
        #expect(try roundTrip(stamp) == stamp)
        #expect(stamp.milliseconds == 1_732_456_789_123 && stamp.counter == 7)
        #expect(HLCTimestamp(milliseconds: 1, counter: .max) < HLCTimestamp(milliseconds: 2, counter: 0))
    }

    @Test("the clock never goes backwards or repeats, and clamps a remote stamp far in the future")
    func hybridLogicalClock() {
        var clock = HybridLogicalClock()
        let a = clock.now(wallMilliseconds: 1_000)
        let b = clock.now(wallMilliseconds: 1_000)
        let c = clock.now(wallMilliseconds: 999)  // the wall clock stepped back
        #expect(a < b && b < c)
        let accepted = clock.observe(HLCTimestamp(milliseconds: 5_000, counter: 3), wallMilliseconds: 1_000)
        #expect(accepted == HLCTimestamp(milliseconds: 5_000, counter: 3))
        #expect(clock.now(wallMilliseconds: 1_000) > accepted)
        let future = HLCTimestamp(milliseconds: 4_000_000_000_000, counter: 0)  // year 2096
        let clamped = clock.observe(future, wallMilliseconds: 1_000)
        #expect(clamped < future)
        #expect(clamped.milliseconds == 1_000 + clock.maximumDrift)
    }

    @Test("push and pull messages round-trip, and empty collections are left out of changes")
    func messages() throws {
        let change = RecordChange(
            op: .update, entity: "Note", recordID: "n1", scope: .user("alice"), baseVersion: 41, fields: ["title": .string("Groceries")],
            links: ["tags": LinkChange(added: ["work"])])
        let push = PushRequest(clientID: "c1", mutations: [Mutation(id: 1, stamp: HLCTimestamp(milliseconds: 9, counter: 0), changes: [change])])
        #expect(try roundTrip(push) == push)
        let delete = RecordChange(op: .delete, entity: "Note", recordID: "n1", scope: "conversation:c17")
        #expect(
            try String(decoding: JSONEncoder.syncProtocol().encode(delete), as: UTF8.self)
                == #"{"entity":"Note","op":"delete","recordID":"n1","scope":"conversation:c17"}"#)
        let pull = PullResponse(
            changes: [PulledChange(version: 3, op: .insert, entity: "Note", recordID: "n1", scope: "user:alice", fields: ["title": .string("x")])],
            cursor: "abc", hasMore: false, lastMutationID: 1, serverStamp: .zero)
        #expect(try roundTrip(pull) == pull)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(RecordChange.self, from: Data(#"{"op":"upsert","entity":"Note","recordID":"n1","scope":"user:a"}"#.utf8))
        }
    }

    @Test("pull parameters are read from the query string with errors naming the parameter")
    func pullQuery() throws {
        let request = PullRequest(clientID: "c1", cursor: "k", limit: 50)
        #expect(try PullRequest(queryItems: request.queryItems) == request)
        #expect(throws: SyncError.self) { try PullRequest(queryItems: [URLQueryItem(name: "clientID", value: "c1")]) }
        do {
            _ = try PullRequest(queryItems: request.queryItems + [URLQueryItem(name: "limit", value: "-3")])
            Issue.record("a negative limit was accepted")
        } catch let error as SyncError {
            #expect(error.code == .malformedRequest && error.message.contains("limit"))
        }
    }

    @Test("scope ids are checked for shape")
    func scopes() {
        #expect(ScopeID.user("alice").isWellFormed)
        #expect(ScopeID.user("alice").privateOwner == "alice")
        #expect(ScopeID("conversation:c17").isWellFormed)
        #expect(ScopeID("conversation:c17").privateOwner == nil)
        for bad: ScopeID in ["", "nocolon", ":x", "a b:x", "kind:", "kind:\u{0}", ScopeID(rawValue: "k:" + String(repeating: "x", count: 300))] {
            #expect(!bad.isWellFormed, "\(bad.rawValue.debugDescription)")
        }
    }

    @Test("the schema hash is stable and changes with the schema")
    func schemaHash() {
        let a = SchemaDescriptor(entities: [EntityDescriptor(name: "Note", fields: [FieldDescriptor(name: "title", kind: .string, optional: false)])])
        let b = SchemaDescriptor(entities: [EntityDescriptor(name: "Note", fields: [FieldDescriptor(name: "title", kind: .string, optional: true)])])
        #expect(a.hash == a.hash && a.hash.count == 16)
        #expect(a.hash != b.hash)
    }
}
