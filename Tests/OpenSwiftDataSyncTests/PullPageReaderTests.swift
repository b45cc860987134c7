import Foundation
import OpenSwiftDataSyncProtocol
import Testing

@testable import OpenSwiftDataSync

@Suite("Sync engine: the pull page reader")
struct PullPageReaderTests {
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

    @Test("reads what JSONEncoder writes exactly as JSONDecoder does, every value kind and escape included")
    func matchesJSONDecoder() throws {
        for sorted in [true, false] {
            let encoder = JSONEncoder()
            if sorted { encoder.outputFormatting = [.sortedKeys, .prettyPrinted] }
            let data = try encoder.encode(Self.page)
            let expected = try JSONDecoder().decode(PullResponse.self, from: data)
            let read = try #require(PullPageReader.read(data))
            // NaN is not equal to itself: compare the encodings.
            #expect(try JSONEncoder.syncProtocol().encode(read) == JSONEncoder.syncProtocol().encode(expected))
            #expect(read.changes[0].recordID == "n\u{e9}\"1\\")
            #expect(read.changes[0].fields["title"] == .string("line\nbreak \u{1F600} \u{7} tab\t"))
            #expect(read.changes[0].fields["big"] == .int(Int64.max))
        }
        let escaped = Data(
            #"{"changes":[],"consistent":true,"cursor":"\u00e9\ud83d\ude00","hasMore":false,"lastMutationID":0,"protocolVersion":1,"revokedScopes":[],"serverStamp":"1"}"#
                .utf8)
        #expect(PullPageReader.read(escaped)?.cursor == "\u{e9}\u{1F600}")
    }

    @Test("anything unexpected is left to JSONDecoder: wrong types, bad numbers, truncation, invalid UTF-8, unknown kinds")
    func refusesWhatItDoesNotExpect() throws {
        let good =
            #"{"changes":[{"entity":"Note","fields":{"n":{"t":"int","v":1}},"links":{},"op":"insert","recordID":"r","scope":"user:a","version":1}],"consistent":true,"cursor":"c","hasMore":false,"lastMutationID":0,"protocolVersion":1,"revokedScopes":[],"serverStamp":"5"}"#
        #expect(PullPageReader.read(Data(good.utf8)) != nil)
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
            #expect(PullPageReader.read(Data(text.utf8)) == nil, "\(text)")
        }
        var invalid = Data(good.utf8)
        invalid[invalid.firstIndex(of: UInt8(ascii: "r")) ?? 0] = 0xFF
        #expect(PullPageReader.read(invalid) == nil)
    }
}
