import Foundation
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftDataServer

/// The SQLite storage's hand-written reading and writing of its JSON columns agree with
/// `JSONEncoder`/`JSONDecoder` (the form stores written before them hold).
@Suite struct StoredJSONTests {
    static let values: [SyncValue] = [
        .null, .bool(true), .bool(false), .int(0), .int(-42), .int(.max), .int(.min),
        .double(1), .double(-0.0), .double(0.1), .double(1e-7), .double(1e300), .double(.nan), .double(.infinity), .double(-.infinity),
        .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude),
        .string(""), .string("plain"), .string("quote \" backslash \\ slash / newline \n tab \t nul \u{0} bell \u{7} é 🎉 \u{2028}"),
        .date(786_297_600.5), .date(-1), .data(Data([0, 1, 2, 255])), .data(Data()), .uuid(UUID()),
        .decimal("12.50"), .url("https://example.com/a?b=c"), .json("{\"a\":[1,2]}"), .reference("note-17"),
    ]

    static func fields() -> [SyncName: StoredField] {
        var fields: [SyncName: StoredField] = [:]
        for (index, value) in values.enumerated() {
            fields["field\(index) \"é\"\n"] = StoredField(
                value: value, kind: value.kind ?? (index % 2 == 0 ? .string : nil), stamp: HLCTimestamp(rawValue: UInt64(index) * 0x1234_5678_9ABC),
                client: "client-\(index) ✓")
        }
        return fields
    }

    /// Equality that counts NaN equal to NaN.
    static func same(_ a: [SyncName: StoredField], _ b: [SyncName: StoredField]) -> Bool {
        a.count == b.count
            && a.allSatisfy { name, field in
                guard let other = b[name] else { return false }
                if case .double(let x) = field.value, case .double(let y) = other.value, x.isNaN, y.isNaN {
                    return field.kind == other.kind && field.stamp == other.stamp && field.client == other.client
                }
                return field == other
            }
    }

    @Test func fieldsWrittenByJSONEncoderReadTheSame() throws {
        let fields = Self.fields()
        let data = try JSONEncoder.syncProtocol().encode(fields)
        #expect(Self.same(try StoredJSON.fields(data), fields))
        // The protocol's reader takes every kind, decimals included.
        let fast = try #require(SyncJSONReader.read(data, { try $0.storedFields() }))
        #expect(Self.same(fast, fields))
    }

    @Test func fieldsWrittenByHandReadTheSameBothWays() throws {
        let fields = Self.fields()
        var writer = SyncJSONWriter()
        try writer.storedFields(fields)
        #expect(Self.same(try JSONDecoder().decode([SyncName: StoredField].self, from: writer.data), fields))
        #expect(Self.same(try StoredJSON.fields(writer.data), fields))
        // The same bytes as JSONEncoder for values whose text both write alike.
        let simple: [SyncName: StoredField] = [
            "title": StoredField(value: .string("Note 1 / \"x\""), kind: .string, stamp: HLCTimestamp(rawValue: 99), client: "c"),
            "count": StoredField(value: .int(7), kind: .int, stamp: HLCTimestamp(rawValue: 1), client: "c"),
            "gone": StoredField(value: .null, kind: nil, stamp: HLCTimestamp(rawValue: 2), client: "d"),
        ]
        var simpleWriter = SyncJSONWriter()
        try simpleWriter.storedFields(simple)
        #expect(String(decoding: simpleWriter.bytes, as: UTF8.self) == String(decoding: try JSONEncoder.syncProtocol().encode(simple), as: UTF8.self))
    }

    @Test func payloadsRoundTrip() throws {
        let values = Dictionary(uniqueKeysWithValues: Self.values.enumerated().map { ("f\($0.offset)", $0.element) })
        let links: [SyncName: LinkChange] = ["tags": LinkChange(added: ["a", "b\"c"], removed: []), "empty": LinkChange()]
        let edit = TextChange(
            insertions: [TextChange.Insertion(id: "00000000075bcd15.0", left: nil, right: "0000000000000000.3", content: "é👋🏽")],
            deletions: [TextChange.Deletion(start: "0000000000000000.1", count: 2)])
        let merge: [SyncName: FieldMerge] = ["body": .text(edit)]
        let states: [SyncName: String] = ["body": "AAEC/+8="]
        var writer = SyncJSONWriter()
        try writer.changePayload(ChangePayload(fields: values, links: links, merge: merge, textStates: states))
        for data in [
            writer.data, try JSONEncoder.syncProtocol().encode(ChangePayload(fields: values, links: links, merge: merge, textStates: states)),
        ] {
            let payload = try StoredJSON.payload(data)
            #expect(payload.links == links)
            #expect(payload.merge == merge && payload.textStates == states)
            #expect(payload.fields.count == values.count)
            for (name, value) in values {
                if case .double(let x) = value, x.isNaN {
                    guard case .double(let y) = payload.fields[name], y.isNaN else {
                        Issue.record("\(name) is not NaN")
                        continue
                    }
                } else {
                    #expect(payload.fields[name] == value, "\(name)")
                }
            }
        }
    }

    @Test func otherValidJSONFallsBackToTheDecoder() throws {
        // Keys in another order, whitespace, an escaped key, and a "v" before its "t".
        let text = #" { "n\u00e9" : { "v" : { "v" : 3 , "t" : "int" } , "s" : "5" , "c" : "x" } } "#
        let fields = try StoredJSON.fields(Data(text.utf8))
        #expect(fields == ["né": StoredField(value: .int(3), kind: nil, stamp: HLCTimestamp(rawValue: 5), client: "x")])
    }

    @Test func malformedStoredDataIsATypedError() throws {
        for text in [
            "", "{", "[]", #"{"a":{"v":null}}"#, #"{"a":{"c":"x","s":"-1","v":null}}"#, #"{"a":{"c":"x","s":"1","v":{"t":"int","v":1.5}}}"#,
            #"{"a":{"c":"x","s":"1","v":{"t":"nope","v":1}}}"#,
        ] {
            #expect(throws: StoredDataError.self, "\(text)") { try StoredJSON.fields(Data(text.utf8)) }
        }
        #expect(throws: StoredDataError.self) { try StoredJSON.payload(Data(#"{"f":{}}"#.utf8)) }
    }

    @Test func storedColumnsAreWrittenAsJSONEncoderWritesThem() throws {
        func written(_ write: (inout SyncJSONWriter) throws -> Void) rethrows -> String {
            var writer = SyncJSONWriter()
            try write(&writer)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        func encoded(_ value: some Encodable) throws -> String { String(decoding: try JSONEncoder.syncProtocol().encode(value), as: UTF8.self) }
        var generator = ProtocolMessageGenerator(seed: 3)
        for _ in 0..<300 {
            var fields: [SyncName: StoredField] = [:]
            for (name, value) in generator.fields() {
                fields[name] = StoredField(
                    value: value, kind: generator.pick([nil, value.kind, .string]), stamp: generator.stamp(), client: generator.text())
            }
            #expect(try written { try $0.storedFields(fields) } == encoded(fields))
            let payload = ChangePayload(
                fields: generator.fields(), links: generator.links(), merge: generator.pick([nil, ["body": .text(generator.textChange())]]),
                textStates: generator.pick([nil, ["body": "AAEC/+8="]]))
            #expect(try written { try $0.changePayload(payload) } == encoded(payload))
        }
    }
}
