import Foundation
import OpenSwiftDataSyncProtocol

/// Seeded protocol messages of every shape, values of every kind and awkward text included
/// (escapes, control characters, non-ASCII, line separators): what the JSON codec tests write
/// and read.
public struct ProtocolMessageGenerator {
    private var random: SeededGenerator

    /// A generator that starts from `seed`.
    public init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 { random.next() }

    /// One of `items`, which must not be empty.
    public mutating func pick<T>(_ items: [T]) -> T { random.pick(items) }

    /// Text that JSON has to escape or that sorts awkwardly.
    public mutating func text() -> String {
        pick([
            "", "a", "Note 17 of bench-3", "a10", "a9", "B", "é", "ß", "ä", "🎉", "quote \" and \\ and / and \n\t\r",
            "\u{0}\u{1}\u{1f}\u{7f}\u{8}\u{c}", "\u{2028}\u{2029}", "e\u{301}", "f", "user:alice", "ab", "aB", "_x", "x y",
        ])
    }

    /// A finite double, from zero and subnormals to the largest.
    public mutating func double() -> Double {
        pick([
            0, -0.0, 1, 100, 0.1, 1e-7, 1e16, 1e21, 123_456_789_012_345_680, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -2.5,
            Double(bitPattern: next() & 0x7FEF_FFFF_FFFF_FFFF), Double(Int64(bitPattern: next())), Double(next() % 1_000_000) / 1000,
        ])
    }

    /// A value of any kind, non-finite doubles included.
    public mutating func value() -> SyncValue {
        switch next() % 14 {
        case 0: .null
        case 1: .bool(next() % 2 == 0)
        case 2: .int(pick([0, 1, -1, .max, .min, Int64(bitPattern: next())]))
        case 3: .double(pick([double(), .nan, .infinity, -.infinity]))
        case 4: .string(text())
        case 5: .date(double())
        case 6: .data(Data((0..<(next() % 9)).map { _ in UInt8(truncatingIfNeeded: next()) }))
        case 7: .uuid(UUID())
        case 8: .decimal(pick(["12.50", "-1e5", "0"]))
        case 9: .url("https://example.com/a?b=c&d=\(text())")
        case 10: .json("{\"a\":[1,2]}")
        case 11: .reference(text())
        case 12:
            BlobReference(digest: (0..<4).map { _ in String(format: "%016llx", next()) }.joined(), size: Int64(next() % 1_000_000))
                .map(SyncValue.blob) ?? .null
        default: .string("\(next())")
        }
    }

    /// Up to five fields.
    public mutating func fields() -> [SyncName: SyncValue] {
        var fields: [SyncName: SyncValue] = [:]
        for _ in 0..<(next() % 6) { fields[text() + pick(["", "1", "10", "9"])] = value() }
        return fields
    }

    /// Up to two link changes.
    public mutating func links() -> [SyncName: LinkChange] {
        var links: [SyncName: LinkChange] = [:]
        for _ in 0..<(next() % 3) {
            links[text()] = LinkChange(added: (0..<(next() % 3)).map { _ in text() }, removed: (0..<(next() % 2)).map { _ in text() })
        }
        return links
    }

    /// Up to two counter contributions and up to one set's.
    public mutating func merges() -> [SyncName: FieldMerge] {
        var merges: [SyncName: FieldMerge] = [:]
        for _ in 0..<(next() % 3) {
            merges["n" + text()] = .counter(pick([.int(1), .int(-7), .int(.max), .double(0.5), .double(-1e21)]))
        }
        if next() % 2 == 0 {
            let elements = ["\"bob\"", "{\"by\":\"ann\",\"emoji\":\"👍\"}", "[1,2]", "null", "\"" + text() + "\""]
            merges["s" + text()] = .set(
                SetChange(add: (0..<(next() % 3)).map { _ in pick(elements) }, remove: (0..<(next() % 2)).map { _ in pick(elements) }))
        }
        if next() % 2 == 0 { merges["t" + text()] = .text(textChange()) }
        return merges
    }

    /// A text's contribution: up to two insertions (origins sometimes absent) and one deletion.
    public mutating func textChange() -> TextChange {
        let ids = ["00000000075bcd15.0", "ffffffffffffffff.4294967295", "0000000000000000." + String(next() % 1000)]
        return TextChange(
            insertions: (0..<(next() % 3)).map { _ in
                TextChange.Insertion(id: pick(ids), left: pick([nil, pick(ids)]), right: pick([nil, pick(ids)]), content: text() + "é👋🏽\n")
            },
            deletions: (0..<(next() % 2)).map { _ in TextChange.Deletion(start: pick(ids), count: UInt32(next() % 9) + 1) })
    }

    /// A stamp, the extremes included.
    public mutating func stamp() -> HLCTimestamp { HLCTimestamp(rawValue: pick([0, 1, UInt64.max, next()])) }

    /// A mutation of up to three changes.
    public mutating func mutation(id: MutationID) -> Mutation {
        let changes = (0..<(next() % 4)).map { _ in
            RecordChange(
                op: pick(RecordOperation.allCases), entity: text(), recordID: text(), scope: ScopeID(rawValue: text()),
                baseVersion: pick([nil, 0, 41, .max]), fields: fields(), links: links(), merge: merges())
        }
        return Mutation(id: id, stamp: stamp(), changes: changes)
    }

    /// A push request without a schema, mutation ids ascending from 1.
    public mutating func pushRequest() -> PushRequest {
        let mutations = (0..<(next() % 4)).map { mutation(id: Int64($0 + 1)) }
        let predecessors = Dictionary([(text(), Int64(next() >> 1)), ("c-earlier", 9)], uniquingKeysWith: max)
        return PushRequest(clientID: text(), mutations: mutations, cursor: pick([nil, text()]), predecessors: pick([nil, predecessors]))
    }

    /// A pull page of up to three changes, every optional part sometimes present.
    public mutating func pullResponse() -> PullResponse {
        let changes = (0..<(next() % 4)).map { _ in
            PulledChange(
                version: Int64(next() >> 1), op: pick(RecordOperation.allCases), entity: text(), recordID: text(),
                scope: ScopeID(rawValue: text()), fields: fields(), links: links(), clientID: pick([nil, "c1", text()]),
                mutationID: pick([nil, 1, .max]), merge: pick([nil, ["body": .text(textChange())]]),
                textStates: pick([nil, Dictionary([("body", "AAEC/+8="), (text(), "")], uniquingKeysWith: { first, _ in first })]))
        }
        return PullResponse(
            changes: changes, cursor: text(), hasMore: next() % 2 == 0, consistent: next() % 2 == 0, lastMutationID: Int64(next() >> 1),
            reset: pick([nil, .epochChanged, .historyCompacted]), revokedScopes: pick([[], ["group:a", "user:b"]]),
            progress: pick([nil, PullProgress(received: 3, total: 100_000)]), serverStamp: stamp(),
            snapshotScopes: pick([nil, [], ["team:t1", "user:b"]]), cursorScopes: pick([nil, [], ["team:t1", "user:b"]]))
    }

    /// A push's answer of up to three results, some with the server's records.
    public mutating func pushResponse() -> PushResponse {
        let states = (0..<(next() % 3)).map { _ in
            RecordState(
                entity: text(), recordID: text(), scope: ScopeID(rawValue: text()), version: Int64(next() >> 1), deleted: next() % 2 == 0,
                fields: fields(), links: pick([[:], ["tags": ["a", "b"]], ["x": [], "y": ["z"]]]))
        }
        let results = (0..<(next() % 4)).map { index in
            MutationResult(
                id: Int64(index), status: pick([.applied, .rejected]), reason: pick([nil] + RejectionReason.allCases),
                message: pick([nil, text()]), serverRecords: pick([nil, states]))
        }
        return PushResponse(lastMutationID: Int64(next() >> 1), results: results, serverStamp: stamp())
    }
}
