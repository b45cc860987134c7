import Foundation
import OpenSwiftDataSyncProtocol
import Testing

@testable import OpenSwiftDataServer

/// The hand-written JSON writer gives the same bytes as `JSONEncoder.syncProtocol()` for every
/// message it writes (mutation hashes depend on it).
@Suite struct SyncJSONWriterTests {
    static func encoded(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder.syncProtocol().encode(value), as: UTF8.self)
    }

    static func written(_ write: (inout SyncJSONWriter) throws -> Void) rethrows -> String {
        var writer = SyncJSONWriter()
        try write(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Deterministic pseudo-random values of every kind, awkward text included.
    struct Generator {
        var state: UInt64

        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 11
        }

        mutating func pick<T>(_ values: [T]) -> T { values[Int(next() % UInt64(values.count))] }

        mutating func text() -> String {
            pick([
                "", "a", "Note 17 of bench-3", "a10", "a9", "B", "é", "ß", "ä", "🎉", "quote \" and \\ and / and \n\t\r",
                "\u{0}\u{1}\u{1f}\u{7f}\u{8}\u{c}", "\u{2028}\u{2029}", "user:alice", "ab", "aB", "_x", "x y",
            ])
        }

        mutating func double() -> Double {
            pick([
                0, -0.0, 1, 100, 0.1, 1e-7, 1e16, 1e21, 123_456_789_012_345_680, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -2.5,
                Double(bitPattern: next() & 0x7FEF_FFFF_FFFF_FFFF), Double(Int64(bitPattern: next())), Double(next() % 1_000_000) / 1000,
            ])
        }

        mutating func value() -> SyncValue {
            switch next() % 13 {
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
            default: .string("\(next())")
            }
        }

        mutating func fields() -> [SyncName: SyncValue] {
            var fields: [SyncName: SyncValue] = [:]
            for _ in 0..<(next() % 6) { fields[text() + pick(["", "1", "10", "9"])] = value() }
            return fields
        }

        mutating func links() -> [SyncName: LinkChange] {
            var links: [SyncName: LinkChange] = [:]
            for _ in 0..<(next() % 3) {
                links[text()] = LinkChange(added: (0..<(next() % 3)).map { _ in text() }, removed: (0..<(next() % 2)).map { _ in text() })
            }
            return links
        }

        mutating func stamp() -> HLCTimestamp { HLCTimestamp(rawValue: pick([0, 1, UInt64.max, next()])) }
    }

    @Test func mutationsAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = Generator(state: 19)
        for _ in 0..<500 {
            let changes = (0..<(generator.next() % 4)).map { _ in
                RecordChange(
                    op: generator.pick(RecordOperation.allCases), entity: generator.text(), recordID: generator.text(),
                    scope: ScopeID(rawValue: generator.text()), baseVersion: generator.pick([nil, 0, 41, .max]), fields: generator.fields(),
                    links: generator.links())
            }
            let mutation = Mutation(id: Int64(bitPattern: generator.next()), stamp: generator.stamp(), changes: changes)
            #expect(try Self.written { try $0.mutation(mutation) } == Self.encoded(mutation))
        }
    }

    @Test func answersAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = Generator(state: 7)
        for _ in 0..<300 {
            let changes = (0..<(generator.next() % 4)).map { _ in
                PulledChange(
                    version: Int64(generator.next()), op: generator.pick(RecordOperation.allCases), entity: generator.text(),
                    recordID: generator.text(), scope: ScopeID(rawValue: generator.text()), fields: generator.fields(), links: generator.links(),
                    clientID: generator.pick([nil, "c1", generator.text()]), mutationID: generator.pick([nil, 1, .max]))
            }
            let pull = PullResponse(
                changes: changes, cursor: generator.text(), hasMore: generator.next() % 2 == 0, consistent: generator.next() % 2 == 0,
                lastMutationID: Int64(generator.next()), reset: generator.pick([nil, .epochChanged, .historyCompacted]),
                revokedScopes: generator.pick([[], ["group:a", "user:b"]]),
                progress: generator.pick([nil, PullProgress(received: 3, total: 100_000)]), serverStamp: generator.stamp(),
                snapshotScopes: generator.pick([nil, [], ["team:t1", "user:b"]]), cursorScopes: generator.pick([nil, [], ["team:t1", "user:b"]]))
            #expect(try Self.written { try $0.pullResponse(pull) } == Self.encoded(pull))
            let states = (0..<(generator.next() % 3)).map { _ in
                RecordState(
                    entity: generator.text(), recordID: generator.text(), scope: ScopeID(rawValue: generator.text()),
                    version: Int64(generator.next()), deleted: generator.next() % 2 == 0, fields: generator.fields(),
                    links: generator.pick([[:], ["tags": ["a", "b"]], ["x": [], "y": ["z"]]]))
            }
            let results = (0..<(generator.next() % 4)).map { index in
                MutationResult(
                    id: Int64(index), status: generator.pick([.applied, .rejected]), reason: generator.pick([nil] + RejectionReason.allCases),
                    message: generator.pick([nil, generator.text()]), serverRecords: generator.pick([nil, states]))
            }
            let push = PushResponse(lastMutationID: Int64(generator.next()), results: results, serverStamp: generator.stamp())
            #expect(try Self.written { try $0.pushResponse(push) } == Self.encoded(push))
        }
    }

    @Test func storedColumnsAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = Generator(state: 3)
        for _ in 0..<300 {
            var fields: [SyncName: StoredField] = [:]
            for (name, value) in generator.fields() {
                fields[name] = StoredField(
                    value: value, kind: generator.pick([nil, value.kind, .string]), stamp: generator.stamp(), client: generator.text())
            }
            #expect(try Self.written { try $0.storedFields(fields) } == Self.encoded(fields))
            let values = generator.fields()
            let links = generator.links()
            #expect(
                try Self.written { try $0.changePayload(fields: values, links: links) } == Self.encoded(ChangePayload(fields: values, links: links)))
        }
    }

    @Test func nonFiniteNumbersThatJSONCannotHoldThrowAsJSONEncoderDoes() {
        #expect(throws: EncodingError.self) { try Self.written { try $0.syncValue(.date(.infinity)) } }
        #expect(throws: EncodingError.self) { try Self.encoded(SyncValue.date(.infinity)) }
    }
}
