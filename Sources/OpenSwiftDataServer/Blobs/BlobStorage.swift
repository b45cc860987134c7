import Foundation
import NIOCore

/// Where the server keeps blobs' bytes: whole blobs by digest, and each user's unfinished
/// uploads. The server checks access and limits; a storage only keeps bytes.
///
/// ``FileBlobStorage`` keeps them in files beside the SQLite database.
public protocol BlobStorage: Sendable {
    /// The size of the stored blob `digest`, or nil when it is not stored.
    func size(of digest: String) async throws -> Int64?

    /// How many bytes of `digest` the user's unfinished upload holds (0: none).
    func staged(_ digest: String, user: String) async throws -> Int64

    /// The bytes of every unfinished upload of the user, for their limit.
    func stagedTotal(user: String) async throws -> Int64

    /// Appends `body` to the user's upload of `digest`, which holds `offset` bytes, keeping at
    /// most `limit` bytes in all; returns how many it holds then. Bytes past `limit` are not
    /// written: ``BlobStorageError/limitExceeded(limit:)`` is thrown with the upload as it was before
    /// the part's last chunk.
    func append(
        _ body: some AsyncSequence<ByteBuffer, any Error> & Sendable, to digest: String, user: String, at offset: Int64, limit: Int64
    ) async throws -> Int64

    /// Moves the user's finished upload into place as the blob `digest`, once its bytes hash to
    /// it, durably; a blob stored already stays as it is (the upload is dropped). Throws
    /// ``BlobStorageError/digestMismatch(expected:actual:)`` (the upload is dropped) when they do not.
    func commit(_ digest: String, user: String) async throws

    /// Drops the user's unfinished upload of `digest`.
    func discard(_ digest: String, user: String) async throws

    /// Reads `range` of the blob `digest`, in order, chunk by chunk.
    func read(_ digest: String, range: Range<Int64>, into write: (ByteBuffer) async throws -> Void) async throws

    /// Deletes the blob `digest` (no error when it is not stored).
    func delete(_ digest: String) async throws

    /// Drops every user's unfinished uploads that received nothing since `date`; returns how
    /// many.
    func discardUploads(untouchedSince date: Date) async throws -> Int
}

/// What a blob storage refuses.
public enum BlobStorageError: Error, Equatable, Sendable {
    /// An upload's bytes do not hash to the digest it names.
    case digestMismatch(expected: String, actual: String)
    /// An append would take the upload past its limit.
    case limitExceeded(limit: Int64)
    /// An append starts elsewhere than where the upload ends.
    case offsetMismatch(expected: Int64)
}
