import Foundation

/// A blob: bytes that travel outside the records that name them (an `.externalStorage`
/// value), on their own endpoints, by the SHA-256 of their content.
///
/// A record's field holds it as a value of kind `blob` whose text is the digest in lowercase
/// hexadecimal, a colon, and the size in bytes:
///
/// ```json
/// {"t": "blob", "v": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08:4"}
/// ```
public struct BlobReference: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The SHA-256 of the bytes, 64 lowercase hexadecimal digits.
    public let digest: String
    /// The number of bytes.
    public let size: Int64

    /// A reference from its digest and size; nil when the digest is not 64 lowercase
    /// hexadecimal digits or the size is negative.
    public init?(digest: String, size: Int64) {
        guard Self.isDigest(digest), size >= 0 else { return nil }
        self.digest = digest
        self.size = size
    }

    /// A reference from its text, `<digest>:<size>`; nil for any other text.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let size = Int64(parts[1]), String(size) == parts[1] else { return nil }
        self.init(digest: String(parts[0]), size: size)
    }

    /// Whether `text` is a digest as references spell it: 64 lowercase hexadecimal digits.
    public static func isDigest(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `<digest>:<size>`.
    public var description: String { "\(digest):\(size)" }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let reference = BlobReference(text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "\(text.debugDescription) is not a blob reference (64 lowercase hexadecimal digits, a colon, a size)"))
        }
        self = reference
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// How much of a blob the server holds for the caller: the answer of every blob upload
/// request.
///
/// ```json
/// {"digest": "9f86…0a08", "size": 104857600, "received": 41943040}
/// ```
public struct BlobUploadState: Hashable, Sendable, Codable {
    /// The blob's digest.
    public var digest: String
    /// Its size in bytes.
    public var size: Int64
    /// How many bytes the server holds: the offset the next part of the upload starts at. Equal
    /// to `size` once the blob is stored, checked against its digest.
    public var received: Int64

    /// Makes a state.
    public init(digest: String, size: Int64, received: Int64) {
        self.digest = digest
        self.size = size
        self.received = received
    }

    /// Whether the server holds the whole blob.
    public var isComplete: Bool { received == size }
}

/// The headers of the blob endpoints.
public enum BlobHeader {
    /// The blob's size in bytes, on the request that starts (or asks about) an upload.
    public static let length = "Upload-Length"
    /// Where a part of an upload starts: the server's `received`.
    public static let offset = "Upload-Offset"
}

extension [SyncName: SyncValue] {
    /// The fields with every blob as nil: what a reader that does not know blobs gets.
    public func withoutBlobs() -> [SyncName: SyncValue] {
        guard contains(where: { $0.value.kind == .blob }) else { return self }
        return mapValues { $0.kind == .blob ? .null : $0 }
    }
}

extension RecordState {
    /// The record with every blob field as nil: what a reader that does not know blobs gets.
    public func withoutBlobs() -> RecordState {
        var state = self
        state.fields = fields.withoutBlobs()
        return state
    }
}

extension SyncValueKind {
    /// The kind of field a value of this kind goes in: ``data`` for a ``blob`` (a field of bytes
    /// holds them inline or as a blob), itself for the others.
    public var fieldKind: SyncValueKind { self == .blob ? .data : self }
}
