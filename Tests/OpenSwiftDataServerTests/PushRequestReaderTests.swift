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
        var fast = 0
        for text in PushBodySamples.awkward {
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
