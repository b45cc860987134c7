import Foundation
import Testing

@testable import OpenSwiftData

@Suite("SHA-256")
struct SHA256Tests {
    private func hex(_ data: Data) -> String { AttachmentReference.hex(SHA256.hash(data)) }

    /// A message of `count` bytes, each `(index * 31 + 7) mod 256`.
    private func message(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }) }

    @Test("NIST's examples: empty, \"abc\", the 448- and 896-bit messages, a million \"a\"")
    func nistVectors() {
        #expect(hex(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hex(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            hex(
                Data(
                    "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu".utf8))
                == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        #expect(hex(Data(repeating: UInt8(ascii: "a"), count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("lengths around the padding boundaries (55, 56, 63, 64, 65, 119, 120 bytes)")
    func paddingBoundaries() {
        let expected = [
            55: "8aa994584139d128848eeebc4e815639ba5ab6e6e39574195a63ac4f14f7c43b",
            56: "ad574708f75c044c9b85de64cb568ee7711ff4f36448c6242f053ba8f6cc2b63",
            63: "280ed3e8ff1df845b2e7dfe6ac6cee817bef20e783cc65abc41b818b4d2fe076",
            64: "c6ab9724ade5b6a7a1edfffb12f3aa9181351355af8fd08c919952ad211339dd",
            65: "788367c73c7ddf4c53f65e68cc0d943e6227ab55b0e78ba63ace822b1c6301c0",
            119: "3d610547d68216dedf7435a4fb6260353911f6b3fd3f18805ddb8be285d726fe",
            120: "1f80156a804cb7862ad113e8200e9d74499723e7c7854d5f48776d3148e09656",
        ]
        for (count, digest) in expected { #expect(hex(message(count)) == digest, "\(count) bytes") }
    }

    @Test("fed in pieces of any size, the digest is the one of the whole")
    func incremental() {
        let whole = message(1000)
        for piece in [1, 7, 63, 64, 65, 999] {
            var hasher = SHA256()
            var offset = 0
            while offset < whole.count {
                let end = min(offset + piece, whole.count)
                hasher.update(whole.subdata(in: offset..<end))
                offset = end
            }
            #expect(
                AttachmentReference.hex(hasher.finalize()) == "5097e7d587352f5097062ae679f37bda5802d9f875aba14c8cb4d1a188ada179", "pieces of \(piece)"
            )
        }
    }
}
