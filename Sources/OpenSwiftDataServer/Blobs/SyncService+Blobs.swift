import Foundation
import NIOCore
import OpenSwiftDataSyncProtocol
import Synchronization

// Blobs: bytes uploaded in parts, resumed from what the server holds, checked against their
// digest, and readable by whoever may read a live record that names them. A blob's existence
// is told only to those readers: to anyone else, a stored blob answers as a missing one, and
// an upload of it stores the bytes again (kept once).
extension SyncService {
    private func blobStorage() throws -> any BlobStorage {
        guard let blobs else { throw SyncServiceError(404, .notFound, "this server keeps no blobs") }
        return blobs
    }

    private func checkSize(_ reference: BlobReference) throws {
        guard reference.size <= configuration.maxBlobBytes else {
            throw SyncServiceError(
                413, .blobTooLarge, "the blob is \(reference.size) bytes, more than the limit of \(configuration.maxBlobBytes) bytes per blob")
        }
    }

    /// Whether `user` may read the blob `digest`: a live record that names it is in a scope
    /// they may read.
    package func mayRead(blob digest: String, user: String) async throws -> Bool {
        for scope in try await backend.blobScopes(of: digest) {
            if ScopeAccessLevel.of(user, to: scope, record: try await backend.scope(scope)).canRead { return true }
        }
        return false
    }

    /// Where `user`'s upload of `reference` stands: whole when the server holds the blob and
    /// the user holds it too (uploaded it) or may read it, else the bytes of their unfinished
    /// upload (0: none).
    ///
    /// - Throws: ``SyncServiceError`` `413 blobTooLarge` past the limit per blob, `404` when
    ///   the server keeps no blobs.
    public func blobUpload(user: String, reference: BlobReference) async throws -> BlobUploadState {
        let blobs = try blobStorage()
        try checkSize(reference)
        if try await blobs.size(of: reference.digest) == reference.size,
            try await backend.holds(blob: reference.digest, user: user) ? true : try await mayRead(blob: reference.digest, user: user)
        {
            return BlobUploadState(digest: reference.digest, size: reference.size, received: reference.size)
        }
        var received = try await blobs.staged(reference.digest, user: user)
        if received > reference.size {
            // Started with another size: not this blob's bytes.
            try await blobs.discard(reference.digest, user: user)
            received = 0
        }
        return BlobUploadState(digest: reference.digest, size: reference.size, received: received)
    }

    /// Appends a part of `user`'s upload of `reference`, starting at `offset` (what the server
    /// holds). The part may end anywhere: what arrived before a dropped connection stays, and
    /// the upload resumes from ``blobUpload(user:reference:)``'s `received`. Once the upload
    /// holds `reference.size` bytes they are hashed: the blob is stored, or nothing is.
    ///
    /// - Throws: ``SyncServiceError``: `409 uploadOffsetMismatch` when `offset` is not what the
    ///   server holds (the message names it), `400 malformedRequest` for bytes past the
    ///   blob's size, `413 blobTooLarge` past the limit per blob or per user,
    ///   `422 blobDigestMismatch` when the bytes do not hash to the digest.
    public func appendBlob(
        user: String, reference: BlobReference, offset: Int64, body: some AsyncSequence<ByteBuffer, any Error> & Sendable
    ) async throws -> BlobUploadState {
        let blobs = try blobStorage()
        try checkSize(reference)
        // The user's blobs and unfinished uploads (this one's `offset` bytes among them), with
        // the rest of this one.
        let used = try await backend.blobBytes(of: user) + (try await blobs.stagedTotal(user: user))
        guard used + (reference.size - offset) <= configuration.maxUserBlobBytes else {
            throw SyncServiceError(
                413, .blobTooLarge,
                "the blob would take your blobs to \(used + reference.size - offset) bytes, more than the limit of \(configuration.maxUserBlobBytes) bytes per user"
            )
        }
        let received: Int64
        do {
            received = try await blobs.append(body, to: reference.digest, user: user, at: offset, limit: reference.size)
        } catch BlobStorageError.offsetMismatch(let expected) {
            throw SyncServiceError(
                409, .uploadOffsetMismatch, "the part starts at byte \(offset), but the server holds \(expected) bytes of the upload: send from there"
            )
        } catch BlobStorageError.limitExceeded {
            throw SyncServiceError.malformed("the upload runs past the blob's size of \(reference.size) bytes")
        }
        if received == reference.size {
            // One at a time with collection's deletion of the same blob: a blob found stored
            // here is not deleted before the user is recorded as holding it.
            try await blobLocks.withLock(reference.digest) {
                do {
                    try await blobs.commit(reference.digest, user: user)
                } catch BlobStorageError.digestMismatch(_, let actual) {
                    throw SyncServiceError(
                        422, .blobDigestMismatch, "the upload's bytes hash to \(actual), not \(reference.digest): nothing of it was kept")
                }
                try await backend.noteBlob(reference, holder: user, at: now().syncMilliseconds)
            }
        }
        return BlobUploadState(digest: reference.digest, size: reference.size, received: received)
    }

    /// The size of the blob `digest`, when the server holds it and `user` may read it.
    ///
    /// - Throws: ``SyncServiceError`` `404 notFound` otherwise: a blob that is missing, not
    ///   finished, or that the user may not read, alike.
    public func readableBlob(user: String, digest: String) async throws -> Int64 {
        let blobs = try blobStorage()
        // One who holds the bytes (sent them) may read them back, whatever names them.
        guard BlobReference.isDigest(digest), let size = try await blobs.size(of: digest),
            try await backend.holds(blob: digest, user: user) ? true : try await mayRead(blob: digest, user: user)
        else {
            throw SyncServiceError(404, .notFound, "no blob \(digest) that you may read")
        }
        return size
    }

    /// Deletes the bytes of blobs no live record has named since they were stored, once the
    /// retention window has passed (a device may upload a blob long before it pushes the
    /// record), and the uploads nobody resumed within it. Returns how many blobs.
    package func collectBlobs(before milliseconds: Int64) async throws -> Int {
        guard let blobs else { return 0 }
        var collected = 0
        for digest in try await backend.unreferencedBlobs(before: milliseconds, limit: 10_000) {
            try await blobLocks.withLock(digest) {
                // Checked again in the storage's transaction: a push may have named it since.
                guard try await backend.forgetBlob(digest, before: milliseconds) else { return }
                try await blobs.delete(digest)
                collected += 1
            }
        }
        _ = try await blobs.discardUploads(untouchedSince: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        return collected
    }
}

/// Digests being stored or collected by this server, one operation per digest at a time.
final class BlobLocks: Sendable {
    private let held = Mutex<Set<String>>([])

    /// Runs `body` once no other operation of this server holds `digest`.
    func withLock<T>(_ digest: String, _ body: () async throws -> T) async throws -> T {
        while !held.withLock({ $0.insert(digest).inserted }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        defer { _ = held.withLock { $0.remove(digest) } }
        return try await body()
    }
}
