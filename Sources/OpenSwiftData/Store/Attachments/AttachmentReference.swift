import Foundation

/// What the column of an `.externalStorage` value holds when the bytes live in a file beside
/// the store: a BLOB of exactly 56 bytes, ``magic`` (16 bytes), the SHA-256 of the value (32
/// bytes) and its size (8 bytes, little-endian). The column keeps its type, so stores written
/// before values moved to files need no migration: their inline values stay valid.
///
/// A value that starts with ``magic`` is always written to a file, whatever its size, so a
/// column value that starts with the magic and has the reference's length is always a reference.
struct AttachmentReference: Hashable, Sendable {
    /// The first 16 bytes of every reference.
    static let magic: [UInt8] = [0x00, 0x4F, 0x53, 0x44, 0x61, 0x74, 0x74, 0x61, 0x63, 0x68, 0x01, 0xA5, 0x5A, 0xC3, 0x3C, 0x00]
    /// The length of a reference in bytes.
    static let encodedCount = 16 + SHA256.digestCount + 8

    /// The SHA-256 of the value (32 bytes).
    let digest: [UInt8]
    /// The value's size in bytes.
    let size: UInt64

    /// The reference to `data`, hashing it.
    init(of data: Data) {
        digest = SHA256.hash(data)
        size = UInt64(data.count)
    }

    /// The reference a stored BLOB holds, or nil when the BLOB is an inline value.
    init?(stored bytes: UnsafeRawBufferPointer) {
        guard bytes.count == Self.encodedCount, Self.startsWithMagic(bytes) else { return nil }
        self.init(parsing: bytes)
    }

    /// The digest and size of 56 bytes whose magic the caller checked.
    private init(parsing bytes: UnsafeRawBufferPointer) {
        digest = Array(bytes[16..<48])
        var size: UInt64 = 0
        for index in (48..<56).reversed() { size = size << 8 | UInt64(bytes[index]) }
        self.size = size
    }

    /// The reference a stored value holds, or nil when it is anything else.
    init?(stored data: Data) {
        guard data.count == Self.encodedCount, let reference = data.withUnsafeBytes({ AttachmentReference(stored: $0) }) else { return nil }
        self = reference
    }

    /// Whether `bytes` starts with ``magic``.
    static func startsWithMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= magic.count && zip(bytes.prefix(magic.count), magic).allSatisfy { $0 == $1 }
    }

    /// Whether `data` starts with ``magic`` or ``remoteMagic``: such a value is always kept in
    /// a file when the app saves it, so that no value of the app's is ever taken for a
    /// reference.
    static func startsWithMagic(_ data: Data) -> Bool {
        data.count >= magic.count && data.withUnsafeBytes { startsWithMagic($0) || startsWithRemoteMagic($0) }
    }

    // MARK: Remote references

    /// The first 16 bytes of a remote reference: ``magic`` with its version byte 2.
    ///
    /// A remote reference names bytes this device does not hold yet: a synced blob whose record
    /// arrived before its bytes. Only the sync engine's own saves write one; a column that holds
    /// one reads as absent (`nil`, or an empty `Data` for a non-optional property) until the
    /// bytes arrive and the column takes an ordinary reference.
    static let remoteMagic: [UInt8] = {
        var bytes = magic
        bytes[10] = 0x02
        return bytes
    }()

    /// Whether `bytes` starts with ``remoteMagic``.
    static func startsWithRemoteMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= remoteMagic.count && zip(bytes.prefix(remoteMagic.count), remoteMagic).allSatisfy { $0 == $1 }
    }

    /// A reference from a digest and a size; nil unless the digest has 32 bytes.
    init?(digest: [UInt8], size: UInt64) {
        guard digest.count == SHA256.digestCount else { return nil }
        self.digest = digest
        self.size = size
    }

    /// The reference a remote reference names, or nil when `bytes` is anything else.
    init?(remote bytes: UnsafeRawBufferPointer) {
        guard bytes.count == Self.encodedCount, Self.startsWithRemoteMagic(bytes) else { return nil }
        self.init(parsing: bytes)
    }

    /// The reference a stored remote reference names, or nil when `data` is anything else.
    init?(remote data: Data) {
        guard data.count == Self.encodedCount, let reference = data.withUnsafeBytes({ AttachmentReference(remote: $0) }) else { return nil }
        self = reference
    }

    /// The 56 bytes of the remote reference to these bytes.
    var remoteEncoded: Data { encoded(magic: Self.remoteMagic) }

    /// A reference from its digest in lowercase hexadecimal and its size; nil for another text.
    init?(hex: String, size: Int64) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == SHA256.digestCount * 2, size >= 0 else { return nil }
        var digest: [UInt8] = []
        digest.reserveCapacity(SHA256.digestCount)
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else { return nil }
            digest.append(high << 4 | low)
        }
        self.digest = digest
        self.size = UInt64(size)
    }

    /// The value of a lowercase hexadecimal digit.
    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: return digit - 0x30
        case 0x61...0x66: return digit - 0x61 + 10
        default: return nil
        }
    }

    /// The 56 bytes the column holds.
    var encoded: Data { encoded(magic: Self.magic) }

    /// The 56 bytes of a reference under `magic`.
    private func encoded(magic: [UInt8]) -> Data {
        var bytes = magic + digest
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: size >> UInt64(shift))) }
        return Data(bytes)
    }

    /// The digest in lowercase hexadecimal: the file's name.
    var hex: String { Self.hex(digest) }

    /// Bytes in lowercase hexadecimal.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The references that occur anywhere in `bytes` (a history entry, which keeps stored
    /// values byte for byte), by digest. Every offset is tried: a magic inside an inline value
    /// may start less than a reference's length before a real reference, which must not be
    /// skipped (an extra digest only keeps a file longer).
    static func occurrences(in bytes: UnsafeRawBufferPointer) -> Set<String> {
        var found: Set<String> = []
        guard bytes.count >= encodedCount else { return found }
        for offset in 0...(bytes.count - encodedCount)
        where bytes[offset] == magic[0] && startsWithMagic(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + encodedCount)])) {
            found.insert(hex(Array(bytes[(offset + 16)..<(offset + 48)])))
        }
        return found
    }
}
