import Foundation
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

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

    @Test func mutationsAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = ProtocolMessageGenerator(seed: 19)
        for _ in 0..<500 {
            let mutation = generator.mutation(id: Int64(bitPattern: generator.next()))
            #expect(try Self.written { try $0.mutation(mutation) } == Self.encoded(mutation))
        }
    }

    @Test func pushRequestsAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = ProtocolMessageGenerator(seed: 29)
        for _ in 0..<300 {
            let request = generator.pushRequest()
            #expect(try Self.written { try $0.pushRequest(request) } == Self.encoded(request))
        }
        // A schema is left to JSONEncoder.
        let withSchema = PushRequest(clientID: "c1", mutations: [], schema: SchemaDescriptor(entities: []))
        #expect(throws: EncodingError.self) { try Self.written { try $0.pushRequest(withSchema) } }
    }

    @Test func answersAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = ProtocolMessageGenerator(seed: 7)
        for _ in 0..<300 {
            let pull = generator.pullResponse()
            #expect(try Self.written { try $0.pullResponse(pull) } == Self.encoded(pull))
            let push = generator.pushResponse()
            #expect(try Self.written { try $0.pushResponse(push) } == Self.encoded(push))
        }
    }

    @Test func nonFiniteNumbersThatJSONCannotHoldThrowAsJSONEncoderDoes() {
        #expect(throws: EncodingError.self) { try Self.written { try $0.syncValue(.date(.infinity)) } }
        #expect(throws: EncodingError.self) { try Self.encoded(SyncValue.date(.infinity)) }
    }
}
