import Foundation
import OpenSwiftDataMerge
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

/// A schema whose `Note.body` is a text that merges; `merging: false` is an older app's, which
/// writes it whole.
private func schema(merging: Bool = true) -> SchemaDescriptor {
    SchemaDescriptor(entities: [
        EntityDescriptor(
            name: "Note",
            fields: [
                FieldDescriptor(name: "title", kind: .string, optional: false),
                FieldDescriptor(name: "body", kind: .string, optional: false, merge: merging ? .text : nil),
            ])
    ])
}

private func change(
    _ op: RecordOperation, base: ServerVersion? = nil, fields: [SyncName: SyncValue] = [:], merge: [SyncName: FieldMerge] = [:]
) -> RecordChange {
    RecordChange(op: op, entity: "Note", recordID: "n1", scope: .user("alice"), baseVersion: base, fields: fields, merge: merge)
}

/// An operation of the merge core in its wire form, as the body's contribution.
private func body(_ operation: TextOperation) -> [SyncName: FieldMerge] {
    [
        "body": .text(
            TextChange(
                insertions: operation.insertions.map {
                    TextChange.Insertion(
                        id: $0.id.description, left: $0.originLeft?.description, right: $0.originRight?.description,
                        content: String(String.UnicodeScalarView($0.content)))
                },
                deletions: operation.deletions.map { TextChange.Deletion(start: $0.start.description, count: $0.count) }))
    ]
}

/// The document every replica rebuilds from a text stored without a state: the value as one
/// run of replica 0.
private func document(_ text: String) -> TextDocument {
    var document = TextDocument()
    _ = document.insert(text, at: 0, replica: 0)
    return document
}

private func push(
    _ h: CoreHarness, client: ClientID, _ id: MutationID, _ change: RecordChange, merging: Bool = true, version: ProtocolVersion = .textMerges
) async throws -> MutationResult? {
    let request = PushRequest(
        protocolVersion: version, clientID: client, mutations: [Mutation(id: id, stamp: stamp(1_790_000_000_000 + UInt64(id)), changes: [change])],
        schema: schema(merging: merging))
    return try await h.service.push(user: "alice", request: request).results.first
}

@Suite("Server: texts' insertions and deletions applied inside the push")
struct TextMergeServerTests {
    @Test("an insertion and a deletion made concurrently on two devices are both kept", arguments: Backend.all)
    func concurrentEditsAreKept(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(
            try await push(h, client: "phone", 1, change(.insert, fields: ["title": .string("t"), "body": .string("Hello world")]))?.status
                == .applied)
        // Both saw version 1: the phone adds " there" after "Hello", the laptop deletes "world".
        var phone = document("Hello world")
        var laptop = document("Hello world")
        let there = phone.insert(" there", at: 5, replica: 0xA)
        let withoutWorld = laptop.delete(at: 6, count: 5)
        #expect(try await push(h, client: "phone", 2, change(.update, base: 1, merge: body(there)))?.status == .applied)
        #expect(try await push(h, client: "laptop", 1, change(.update, base: 1, merge: body(withoutWorld)))?.status == .applied)
        #expect(try await h.state("alice")["Note/n1"]?["body"] == .string("Hello there "))
        // Each device applying the other's operation by identity reaches the same text.
        try phone.apply(withoutWorld)
        try laptop.apply(there)
        #expect(phone.text == "Hello there " && laptop.text == "Hello there ")
        let pulled = try await h.pullAll("alice", client: "reader").changes
        #expect(pulled.last?.fields["body"] == .string("Hello there "))
    }

    @Test("two devices typing at the same place: both insertions kept whole, in the same order whichever arrives first", arguments: Backend.all)
    func concurrentInsertionsDoNotInterleave(_ backend: Backend) async throws {
        var results: [SyncValue?] = []
        for order in [["a", "b"], ["b", "a"]] {
            let h = try await CoreHarness(backend)
            #expect(
                try await push(h, client: "a", 1, change(.insert, fields: ["title": .string("t"), "body": .string("Note: ")]))?.status == .applied)
            var a = document("Note: ")
            var b = document("Note: ")
            var operations: [String: TextOperation] = [:]
            // Typed a character at a time, each a save of its own.
            var typedA = TextOperation()
            for (offset, character) in "milk 🥛".enumerated() { typedA.append(a.insert(String(character), at: 6 + offset, replica: 1)) }
            var typedB = TextOperation()
            for (offset, character) in "eggs é".enumerated() { typedB.append(b.insert(String(character), at: 6 + offset, replica: 2)) }
            operations["a"] = typedA
            operations["b"] = typedB
            var next: [String: MutationID] = ["a": 2, "b": 1]
            for client in order {
                let id = next[client] ?? 1
                next[client] = id + 1
                #expect(
                    try await push(h, client: client, id, change(.update, base: 1, merge: body(operations[client] ?? TextOperation())))?.status
                        == .applied)
            }
            results.append(try await h.state("alice")["Note/n1"]?["body"])
        }
        #expect(results[0] == results[1])
        #expect([.string("Note: milk 🥛eggs é"), .string("Note: eggs émilk 🥛")].contains(results[0]))
    }

    @Test("a change typed next to text the server does not hold is rejected, naming the field, and nothing of it applies", arguments: Backend.all)
    func missingOriginIsRejected(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(try await push(h, client: "phone", 1, change(.insert, fields: ["title": .string("t"), "body": .string("abc")]))?.status == .applied)
        var elsewhere = document("abc")
        _ = elsewhere.insert("X", at: 3, replica: 7)
        let afterX = elsewhere.insert("Y", at: 4, replica: 7)
        let result = try await push(h, client: "phone", 2, change(.update, base: 1, merge: body(afterX)))
        #expect(result?.status == .rejected && result?.reason == .validation && result?.message?.contains("body") == true)
        let malformed = try await push(
            h, client: "phone", 3,
            change(
                .update, base: 1,
                merge: ["body": .text(TextChange(insertions: [TextChange.Insertion(id: "7.0", left: nil, right: nil, content: "Z")]))]))
        #expect(malformed?.reason == .validation && malformed?.message?.contains("not an identity") == true)
        #expect(try await h.state("alice")["Note/n1"]?["body"] == .string("abc"))
    }

    @Test(
        "an older app's whole write of a text is merged when nobody else changed the record, and refused, naming the field, otherwise",
        arguments: Backend.all)
    func olderAppWholeWrites(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(
            try await push(h, client: "new", 1, change(.insert, fields: ["title": .string("t"), "body": .string("one two")]))?.status == .applied)
        // The old app saw version 1 and nobody changed the record since: its write is a diff.
        let fresh = try await push(h, client: "old", 1, change(.update, base: 1, fields: ["body": .string("one two three")]), merging: false)
        #expect(fresh?.status == .applied)
        #expect(try await h.state("alice")["Note/n1"]?["body"] == .string("one two three"))
        // The new app edits; an old write based on version 1 would delete what it did not see.
        var new = document("one two")
        let server = try #require(try await h.state("alice")["Note/n1"]?["body"])
        #expect(server == .string("one two three"))
        let edit = new.insert("zero ", at: 0, replica: 9)
        #expect(try await push(h, client: "new", 2, change(.update, base: 2, merge: body(edit)))?.status == .applied)
        let stale = try await push(h, client: "old", 2, change(.update, base: 2, fields: ["body": .string("two")]), merging: false)
        #expect(stale?.reason == .validation && stale?.message?.contains("body") == true)
        #expect(try await h.state("alice")["Note/n1"]?["body"] == .string("zero one two three"))
    }

    @Test(
        "a first edit of a text an older app wrote whole since the edit's base is refused, naming the field; one based on the current version applies",
        arguments: Backend.all)
    func statelessTextRewrittenWholeIsNotEditedBlindly(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        // An older app creates the note and rewrites its body: no client merged it yet.
        #expect(
            try await push(
                h, client: "old", 1, change(.insert, fields: ["title": .string("t"), "body": .string("abc")]), merging: false, version: .plainFields)?
                .status == .applied)
        #expect(
            try await push(h, client: "old", 2, change(.update, base: 1, fields: ["body": .string("xyz")]), merging: false, version: .plainFields)?
                .status == .applied)
        // A device that saw "abc" types after its "c": replica 0's .2 is "z" now.
        var stale = document("abc")
        let after = stale.insert("!", at: 3, replica: 5)
        let refused = try await push(h, client: "new", 1, change(.update, base: 1, merge: body(after)))
        #expect(refused?.reason == .validation && refused?.message?.contains("body") == true)
        #expect(try await h.state("alice")["Note/n1"]?["body"] == .string("xyz"))
        var fresh = document("xyz")
        let exclaim = fresh.insert("!", at: 3, replica: 5)
        #expect(try await push(h, client: "new", 2, change(.update, base: 2, merge: body(exclaim)))?.status == .applied)
        #expect(try await h.state("alice")["Note/n1"]?["body"] == .string("xyz!"))
    }

    @Test("two devices that insert the same record both keep their text", arguments: Backend.all)
    func insertOfAnExistingRecordKeepsBothTexts(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(
            try await push(h, client: "phone", 1, change(.insert, fields: ["title": .string("t"), "body": .string("from the phone")]))?.status
                == .applied)
        let first = try await h.pullAll("alice", client: "reader", version: .textMerges)
        #expect(
            try await push(h, client: "laptop", 1, change(.insert, fields: ["title": .string("t"), "body": .string("; from the laptop")]))?.status
                == .applied)
        #expect(try await h.state("alice")["Note/n1"]?["body"] == .string("from the phone; from the laptop"))
        // The laptop's copy holds its text as replica 0's run, which the server's edits do not
        // name: the update carries the text's state, which readers take as their copy.
        let next = try await h.pullAll("alice", client: "reader", cursor: first.last.cursor, version: .textMerges)
        let update = try #require(next.changes.last)
        #expect(update.op == .update && update.merge == nil)
        let state = try #require(update.textStates?["body"])
        let copy = try TextDocument(encoded: Array(try #require(Data(base64Encoded: state))))
        #expect(copy.text == "from the phone; from the laptop")
    }

    @Test(
        "pulls carry the texts' edits to version 3 readers, which rebuild each text from them without its value; a snapshot carries the states; older readers get the values alone",
        arguments: Backend.all)
    func pullsCarryEditsAndStates(_ backend: Backend) async throws {
        let h = try await CoreHarness(backend)
        #expect(
            try await push(h, client: "phone", 1, change(.insert, fields: ["title": .string("t"), "body": .string("Hello world")]))?.status
                == .applied)
        let first = try await h.pullAll("alice", client: "reader", version: .textMerges)
        var phone = document("Hello world")
        var laptop = document("Hello world")
        let there = phone.insert(" there", at: 5, replica: 0xA)
        let withoutWorld = laptop.delete(at: 6, count: 5)
        #expect(try await push(h, client: "phone", 2, change(.update, base: 1, merge: body(there)))?.status == .applied)
        #expect(try await push(h, client: "laptop", 1, change(.update, base: 1, merge: body(withoutWorld)))?.status == .applied)
        // A reader that pulled the insert (no state: replica 0's run) applies the edits it pulls.
        #expect(first.changes.count == 1 && first.changes[0].textStates == nil)
        var reader = document("Hello world")
        let next = try await h.pullAll("alice", client: "reader", cursor: first.last.cursor, version: .textMerges)
        for pulled in next.changes {
            guard case let .text(edit)? = pulled.merge?["body"] else {
                Issue.record("a pulled update of the body carries no text edit")
                continue
            }
            try reader.apply(Self.operation(edit))
            // The edits stand for the value, which stays out of the change.
            #expect(pulled.fields["body"] == nil)
        }
        #expect(reader.text == "Hello there ")
        // A snapshot carries the state; it reads back as the same text, and the next edits
        // apply to it.
        let snapshot = try await h.pullAll("alice", client: "newcomer", version: .textMerges)
        let state = try #require(snapshot.changes.first?.textStates?["body"])
        var newcomer = try TextDocument(encoded: Array(try #require(Data(base64Encoded: state))))
        #expect(newcomer.text == "Hello there ")
        let bang = newcomer.insert("!", at: newcomer.scalarCount, replica: 0xB)
        #expect(try await push(h, client: "newcomer", 1, change(.update, base: 3, merge: body(bang)))?.status == .applied)
        #expect(try await h.state("alice")["Note/n1"]?["body"] == .string("Hello there !"))
        // Readers of versions 1 and 2 get the values and nothing else.
        for version in [ProtocolVersion.plainFields, .fieldMerges] {
            let plain = try await h.pullAll("alice", client: "old-\(version.rawValue)", version: version)
            #expect(plain.changes.allSatisfy { $0.merge == nil && $0.textStates == nil })
            #expect(plain.changes.last?.fields["body"] == .string("Hello there !"))
        }
        // A text's edits in a version 2 push are refused as a request.
        let tooOld = PushRequest(
            protocolVersion: .fieldMerges, clientID: "v2",
            mutations: [Mutation(id: 1, stamp: stamp(1_790_000_000_100), changes: [change(.update, merge: body(bang))])], schema: schema())
        await #expect(throws: SyncServiceError.self) { _ = try await h.service.push(user: "alice", request: tooOld) }
    }

    /// A pulled edit as an operation of the merge core.
    static func operation(_ change: TextChange) throws -> TextOperation {
        func id(_ text: String) throws -> TextID { try #require(TextID(Substring(text))) }
        return TextOperation(
            insertions: try change.insertions.map {
                TextOperation.Insertion(
                    id: try id($0.id), originLeft: try $0.left.map(id), originRight: try $0.right.map(id), content: Array($0.content.unicodeScalars))
            },
            deletions: try change.deletions.map { TextOperation.Deletion(start: try id($0.start), count: $0.count) })
    }

    @Test("a text's stored form (\"x\") reads back by hand and through JSONDecoder, and is written as JSONEncoder writes it")
    func storedTextRoundTrips() throws {
        var state = document("héllo 👋🏽")
        _ = state.insert(" world", at: 8, replica: 3)
        let fields: [SyncName: StoredField] = [
            "body": StoredField(
                value: .string(state.text), kind: .string, stamp: stamp(1_790_000_000_000), client: "c", merge: .text, text: Data(state.encoded()))
        ]
        let bytes = Data(try StoredColumns.encodeFields(fields))
        #expect(try StoredColumns.decodeFields(bytes) == fields)
        #expect(try JSONDecoder().decode([SyncName: StoredField].self, from: bytes) == fields)
        // Written byte for byte as the protocol's encoder writes the same values (the state's
        // base64 holds slashes, left unescaped).
        #expect(try JSONEncoder.syncProtocol().encode(fields) == bytes)
    }
}
