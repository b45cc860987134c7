import Foundation
import Hummingbird
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftDataServer

/// The hand-written reading of push requests gives what `JSONDecoder` gives, and leaves every
/// other input (a schema, an unknown key, a number JSON does not allow) to `JSONDecoder`.
@Suite struct PushRequestReaderTests {
    /// Equality of requests that counts NaN equal to NaN.
    static func same(_ a: PushRequest, _ b: PushRequest) -> Bool {
        func normalized(_ request: PushRequest) -> PushRequest {
            var request = request
            for m in request.mutations.indices {
                for c in request.mutations[m].changes.indices {
                    request.mutations[m].changes[c].fields = request.mutations[m].changes[c].fields.mapValues { value in
                        if case .double(let number) = value, number.isNaN { return .string("NaN") }
                        return value
                    }
                }
            }
            return request
        }
        return normalized(a) == normalized(b)
    }

    @Test func generatedRequestsReadTheSame() throws {
        var generator = ProtocolMessageGenerator(seed: 23)
        var fast = 0
        for _ in 0..<300 {
            let request = generator.pushRequest()
            let data = try JSONEncoder.syncProtocol().encode(request)
            let expected = try JSONDecoder().decode(PushRequest.self, from: data)
            #expect(Self.same(try JSONBody.decode(PushRequest.self, from: ByteBuffer(bytes: data)), expected))
            let read = data.withUnsafeBytes { SyncJSONReader.pushRequest($0) } != nil
            if read { fast += 1 }
        }
        // Every generated request takes the fast path.
        #expect(fast == 300)
    }

    @Test func otherInputGetsTheDecodersAnswer() throws {
        let change = #"{"op":"insert","entity":"Note","recordID":"n1","scope":"user:alice","fields":{"n":{"t":"int","v":NUMBER}}}"#
        func body(_ number: String, extra: String = "", version: String = "1") -> String {
            #"{"protocolVersion":"# + version + #","clientID":"c1""# + extra + #","mutations":[{"id":1,"stamp":"5","changes":["#
                + change.replacingOccurrences(of: "NUMBER", with: number) + "]}]}"
        }
        let bodies = [
            body("01"), body("-01"), body(".5"), body("1."), body("+1"), body("1e2"), body("1.0"), body("-0"), body("99999999999999999999"),
            body("7"),
            body("7", extra: #","schema":null"#), body("7", extra: #","unknown":1"#), body("7", extra: #","clientID":"c2""#),
            body("7", version: "99"),
            body("7").replacingOccurrences(of: #""op":"insert""#, with: #""op":"upsert""#),
            body("7").replacingOccurrences(of: #""stamp":"5""#, with: #""stamp":"+5""#),
            body("7").replacingOccurrences(of: "user:alice", with: #"user:\u00e9\ud83c\udf89"#),
            body("7").replacingOccurrences(of: "user:alice", with: #"user:\ud83c"#),
            body("7").replacingOccurrences(of: #""n":{"t":"int","v":7}"#, with: #""n":{"t":"double","v":1e2},"m":null,"d":{"t":"date","v":-0.5e-3}"#),
            body("7") + " x", " " + body("7") + "\n",
        ]
        var fast = 0
        for text in bodies {
            let data = Data(text.utf8)
            // What the decoder reads, of a supported version (JSONBody refuses the others first).
            let expected = (try? JSONDecoder().decode(PushRequest.self, from: data)).flatMap {
                ProtocolVersion.supported.contains($0.protocolVersion) ? $0 : nil
            }
            let actual = try? JSONBody.decode(PushRequest.self, from: ByteBuffer(bytes: data))
            #expect(actual == expected, "\(text)")
            let read = data.withUnsafeBytes { SyncJSONReader.pushRequest($0) } != nil
            if read { fast += 1 }
        }
        #expect(fast >= 4)
    }
}
