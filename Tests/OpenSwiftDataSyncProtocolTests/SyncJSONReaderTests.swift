import Foundation
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

/// The hand-written reader gives what `JSONDecoder` gives for every message it takes, and
/// leaves everything else to `JSONDecoder`.
@Suite struct SyncJSONReaderTests {
    static let page = PullResponse(
        changes: [
            PulledChange(
                version: 7, op: .insert, entity: "Note", recordID: "n\u{e9}\"1\\", scope: .user("alice"),
                fields: [
                    "title": .string("line\nbreak \u{1F600} \u{7} tab\t"),
                    "count": .int(-42),
                    "big": .int(Int64.max),
                    "ratio": .double(0.1),
                    "whole": .double(3),
                    "nan": .double(.nan),
                    "inf": .double(-.infinity),
                    "when": .date(786_297_600.5),
                    "on": .bool(true),
                    "blob": .data(Data([0, 1, 2, 255])),
                    "id": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F") ?? UUID()),
                    "price": .decimal("12.50"),
                    "site": .url("https://example.com/a?b=c"),
                    "meta": .json("{\"a\":[1,2]}"),
                    "folder": .reference("f1"),
                    "none": .null,
                ], links: ["tags": LinkChange(added: ["t1", "t2"], removed: ["t3"])], clientID: "c-1", mutationID: 3),
            PulledChange(version: 8, op: .delete, entity: "Note", recordID: "n2", scope: "team:x"),
        ],
        cursor: "abc.def", hasMore: true, consistent: false, lastMutationID: 12, reset: .historyCompacted,
        revokedScopes: ["team:y"], progress: PullProgress(received: 2, total: 9), serverStamp: HLCTimestamp(rawValue: 123_456_789),
        snapshotScopes: ["team:z"], cursorScopes: ["team:x", "user:alice"])

    @Test("pull pages: reads what JSONEncoder writes exactly as JSONDecoder does, every value kind and escape included")
    func pullPageMatchesJSONDecoder() throws {
        for sorted in [true, false] {
            let encoder = JSONEncoder()
            if sorted { encoder.outputFormatting = [.sortedKeys, .prettyPrinted] }
            let data = try encoder.encode(Self.page)
            let expected = try JSONDecoder().decode(PullResponse.self, from: data)
            let read = try #require(SyncJSONReader.pullResponse(data))
            // NaN is not equal to itself: compare the encodings.
            #expect(try JSONEncoder.syncProtocol().encode(read) == JSONEncoder.syncProtocol().encode(expected))
            #expect(read.changes[0].recordID == "n\u{e9}\"1\\")
            #expect(read.changes[0].fields["title"] == .string("line\nbreak \u{1F600} \u{7} tab\t"))
            #expect(read.changes[0].fields["big"] == .int(Int64.max))
        }
        let escaped = Data(
            #"{"changes":[],"consistent":true,"cursor":"\u00e9\ud83d\ude00","hasMore":false,"lastMutationID":0,"protocolVersion":1,"revokedScopes":[],"serverStamp":"1"}"#
                .utf8)
        #expect(SyncJSONReader.pullResponse(escaped)?.cursor == "\u{e9}\u{1F600}")
    }

    @Test("pull pages: anything unexpected is left to JSONDecoder: wrong types, bad numbers, truncation, invalid UTF-8, unknown kinds")
    func pullPageRefusesWhatItDoesNotExpect() throws {
        let good =
            #"{"changes":[{"entity":"Note","fields":{"n":{"t":"int","v":1}},"links":{},"op":"insert","recordID":"r","scope":"user:a","version":1}],"consistent":true,"cursor":"c","hasMore":false,"lastMutationID":0,"protocolVersion":1,"revokedScopes":[],"serverStamp":"5"}"#
        #expect(SyncJSONReader.pullResponse(Data(good.utf8)) != nil)
        let bad = [
            good.replacingOccurrences(of: #"{"t":"int","v":1}"#, with: #"{"t":"int","v":1.5}"#),
            good.replacingOccurrences(of: #"{"t":"int","v":1}"#, with: #"{"t":"int","v":"1"}"#),
            good.replacingOccurrences(of: #"{"t":"int","v":1}"#, with: #"{"t":"money","v":1}"#),
            good.replacingOccurrences(of: #""version":1"#, with: #""version":01"#),
            good.replacingOccurrences(of: #""serverStamp":"5""#, with: #""serverStamp":5"#),
            good.replacingOccurrences(of: #""op":"insert""#, with: #""op":"upsert""#),
            good.replacingOccurrences(of: #""recordID":"r","#, with: ""),
            String(good.dropLast()),
            good + "x",
        ]
        for text in bad {
            #expect(SyncJSONReader.pullResponse(Data(text.utf8)) == nil, "\(text)")
        }
        var invalid = Data(good.utf8)
        invalid[invalid.firstIndex(of: UInt8(ascii: "r")) ?? 0] = 0xFF
        #expect(SyncJSONReader.pullResponse(invalid) == nil)
    }

    @Test("pull pages: unknown keys a newer server adds are skipped, at every level")
    func pullPageSkipsUnknownKeys() throws {
        let page =
            #"{"future":{"a":[1,2.5,null,true,"x"]},"changes":[{"entity":"Note","extra":[{}],"fields":{},"links":{},"op":"delete","recordID":"r","scope":"user:a","version":1}],"consistent":true,"cursor":"c","hasMore":false,"lastMutationID":0,"progress":{"received":1,"total":2,"rate":0.5},"protocolVersion":1,"revokedScopes":[],"serverStamp":"5"}"#
        let read = try #require(SyncJSONReader.pullResponse(Data(page.utf8)))
        #expect(read.changes.map(\.recordID) == ["r"])
        // A value before its kind (an encoder without sorted keys) reads the same.
        let values = page.replacingOccurrences(
            of: #""fields":{}"#, with: #""fields":{"n":{"v":1.5,"t":"double"},"d":{"v":"12.50","t":"decimal"},"b":{"t":"bool","v":true}}"#)
        let fields = try #require(SyncJSONReader.pullResponse(Data(values.utf8))).changes[0].fields
        #expect(fields == ["n": .double(1.5), "d": .decimal("12.50"), "b": .bool(true)])
        #expect(read.progress == PullProgress(received: 1, total: 2))
    }

    /// The encodings of two values, which compare NaN equal to NaN.
    static func sameEncoding(_ a: some Encodable, _ b: some Encodable) throws -> Bool {
        try JSONEncoder.syncProtocol().encode(a) == JSONEncoder.syncProtocol().encode(b)
    }

    @Test("round trip: generated pushes and pull pages, written by the writer, read back as JSONDecoder reads them")
    func roundTrip() throws {
        var generator = ProtocolMessageGenerator(seed: 41)
        for _ in 0..<300 {
            let request = generator.pushRequest()
            var writer = SyncJSONWriter()
            try writer.pushRequest(request)
            let pushBytes = writer.data
            let pushRead = try #require(pushBytes.withUnsafeBytes { SyncJSONReader.pushRequest($0) })
            #expect(try Self.sameEncoding(pushRead, JSONDecoder().decode(PushRequest.self, from: pushBytes)))
            #expect(try Self.sameEncoding(pushRead, request))

            let page = generator.pullResponse()
            writer = SyncJSONWriter()
            try writer.pullResponse(page)
            let pageRead = try #require(SyncJSONReader.pullResponse(writer.data))
            #expect(try Self.sameEncoding(pageRead, JSONDecoder().decode(PullResponse.self, from: writer.data)))
            #expect(try Self.sameEncoding(pageRead, page))
        }
    }

    @Test("push requests: other input is either read as JSONDecoder reads it or left to it")
    func pushRequestOtherInput() throws {
        var read = 0
        for text in PushBodySamples.awkward {
            let data = Data(text.utf8)
            guard let fast = data.withUnsafeBytes({ SyncJSONReader.pushRequest($0) }) else { continue }
            read += 1
            let expected = try JSONDecoder().decode(PushRequest.self, from: data)
            #expect(try Self.sameEncoding(fast, expected), "\(text)")
        }
        // The common forms (a plain integer, whitespace, escapes, a decimal) are read by hand.
        #expect(read >= 6)
    }

    @Test("escaped or repeated keys, and values nested deeper than the reader goes, are left to JSONDecoder, without recursing")
    func keysAndDepthTheDecoderDecides() throws {
        let good =
            #"{"changes":[],"consistent":true,"cursor":"c","hasMore":false,"lastMutationID":0,"protocolVersion":1,"revokedScopes":[],"serverStamp":"5"}"#
        #expect(SyncJSONReader.pullResponse(Data(good.utf8)) != nil)
        // JSONDecoder unescapes keys and keeps a repeated key's first value; the reader says no.
        let escaped = good.replacingOccurrences(of: #""hasMore":false"#, with: #""has\u004Dore":true"#)
        #expect(SyncJSONReader.pullResponse(Data(escaped.utf8)) == nil)
        #expect(try JSONDecoder().decode(PullResponse.self, from: Data(escaped.utf8)).hasMore)
        let repeated = good.replacingOccurrences(of: #""hasMore":false"#, with: #""hasMore":true,"hasMore":false"#)
        #expect(SyncJSONReader.pullResponse(Data(repeated.utf8)) == nil)
        // A million nested arrays in an unknown key, or in a value before its kind: no recursion
        // that deep.
        let deep = String(repeating: "[", count: 1_000_000) + String(repeating: "]", count: 1_000_000)
        let page = good.replacingOccurrences(of: #""cursor":"c""#, with: #""cursor":"c","future":"# + deep)
        #expect(SyncJSONReader.pullResponse(Data(page.utf8)) == nil)
        let push =
            #"{"clientID":"c1","mutations":[{"changes":[{"entity":"N","fields":{"a":{"v":"# + deep
            + #","t":"int"}},"op":"insert","recordID":"r","scope":"user:a"}],"id":1,"stamp":"5"}],"protocolVersion":1}"#
        #expect(Data(push.utf8).withUnsafeBytes { SyncJSONReader.pushRequest($0) } == nil)
    }
}
