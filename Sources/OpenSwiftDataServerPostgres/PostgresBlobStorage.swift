import Crypto
import Foundation
import NIOCore
import OpenSwiftDataServer
import PostgresNIO

/// Blobs' bytes in PostgreSQL, in chunks of at most 1 MiB: stored blobs in `osd_blob_chunks`,
/// each user's unfinished uploads in `osd_blob_upload_chunks`, by their first byte's offset.
///
/// Every server of the database shares them, with no folder to mount; backups (`pg_dump`, base
/// backups, replicas) carry them with the records that name them. A chunk table rather than
/// `pg_largeobject`: large objects live outside the rows that would own them (a deleted row
/// leaves its object behind until `vacuumlo`), are read and written through a descriptor that
/// must stay in one transaction (an upload's part is committed as it arrives here, so a dropped
/// connection keeps it), and `pg_dump` handles them apart. A chunk is an ordinary row.
///
/// Reads take one chunk per query, never a transaction open while a slow client reads.
public struct PostgresBlobStorage: BlobStorage {
    let storage: PostgresSyncStorage

    /// The most bytes in one chunk.
    static let chunkSize = 1 << 20

    /// Blobs in the database `storage` uses.
    public init(storage: PostgresSyncStorage) {
        self.storage = storage
    }

    private var logger: Logger { storage.logger }

    public func size(of digest: String) async throws -> Int64? {
        try await storage.blobTransaction { [logger] connection in
            var size: Int64?
            for try await (count, total) in try await connection.checkedQuery(
                "SELECT count(*)::int8, coalesce(sum(length(data)), 0)::int8 FROM osd_blob_chunks WHERE digest = \(digest)", logger: logger
            ).decode((Int64, Int64).self) where count > 0 { size = total }
            return size
        }
    }

    public func staged(_ digest: String, user: String) async throws -> Int64 {
        try await storage.blobTransaction { [logger] connection in
            try await Self.total(
                connection, "SELECT coalesce(sum(length(data)), 0)::int8 FROM osd_blob_upload_chunks WHERE user_id = \(user) AND digest = \(digest)",
                logger)
        }
    }

    public func stagedTotal(user: String) async throws -> Int64 {
        try await storage.blobTransaction { [logger] connection in
            try await Self.total(
                connection, "SELECT coalesce(sum(length(data)), 0)::int8 FROM osd_blob_upload_chunks WHERE user_id = \(user)", logger)
        }
    }

    private static func total(_ connection: PostgresConnection, _ query: PostgresQuery, _ logger: Logger) async throws -> Int64 {
        var total: Int64 = 0
        for try await value in try await connection.checkedQuery(query, logger: logger).decode(Int64.self) { total = value }
        return total
    }

    public func append(
        _ body: some AsyncSequence<ByteBuffer, any Error> & Sendable, to digest: String, user: String, at offset: Int64, limit: Int64
    ) async throws -> Int64 {
        let held = try await staged(digest, user: user)
        guard held == offset else { throw BlobStorageError.offsetMismatch(expected: held) }
        var end = offset
        var pending = ByteBuffer()
        // Each chunk is committed on its own: what arrived before a dropped connection stays.
        func flush() async throws {
            guard pending.readableBytes > 0 else { return }
            let chunk = pending
            let start = end
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            try await storage.blobTransaction { [logger] connection in
                try await connection.checkedQuery(
                    """
                    INSERT INTO osd_blob_upload_chunks (user_id, digest, start_byte, data, written_at)
                    VALUES (\(user), \(digest), \(start), \(chunk), \(now))
                    """, logger: logger)
            }
            end += Int64(chunk.readableBytes)
            pending.clear()
        }
        do {
            for try await part in body {
                var part = part
                while part.readableBytes > 0 {
                    let take = min(part.readableBytes, Self.chunkSize - pending.readableBytes)
                    guard end + Int64(pending.readableBytes + take) <= limit else { throw BlobStorageError.limitExceeded(limit: limit) }
                    if var slice = part.readSlice(length: take) { pending.writeBuffer(&slice) }
                    if pending.readableBytes == Self.chunkSize { try await flush() }
                }
            }
        } catch {
            // What arrived before the failure stays: the client resumes from there.
            try? await flush()
            throw error
        }
        try await flush()
        return end
    }

    public func commit(_ digest: String, user: String) async throws {
        // One snapshot for the hash and the copy: a part of the same upload written meanwhile
        // changes the upload, never what is hashed and stored.
        let stored = try await size(of: digest) != nil
        let actual: String = try await storage.blobTransaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ") { [logger] connection in
            var hasher = SHA256()
            var next: Int64 = 0
            var starts: [Int64] = []
            for try await start in try await connection.checkedQuery(
                "SELECT start_byte FROM osd_blob_upload_chunks WHERE user_id = \(user) AND digest = \(digest) ORDER BY start_byte", logger: logger
            ).decode(Int64.self) { starts.append(start) }
            for start in starts {
                for try await chunk in try await connection.checkedQuery(
                    "SELECT data FROM osd_blob_upload_chunks WHERE user_id = \(user) AND digest = \(digest) AND start_byte = \(start)", logger: logger
                ).decode(ByteBuffer.self) {
                    guard start == next else { continue }
                    chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                    next += Int64(chunk.readableBytes)
                }
            }
            let actual = SyncService.hex(hasher.finalize())
            if actual == digest, !stored {
                try await connection.checkedQuery(
                    """
                    INSERT INTO osd_blob_chunks (digest, start_byte, data)
                    SELECT digest, start_byte, data FROM osd_blob_upload_chunks WHERE user_id = \(user) AND digest = \(digest)
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
                if starts.isEmpty {
                    // An empty blob: one empty chunk says it is stored.
                    try await connection.checkedQuery(
                        "INSERT INTO osd_blob_chunks (digest, start_byte, data) VALUES (\(digest), 0, \(ByteBuffer())) ON CONFLICT DO NOTHING",
                        logger: logger)
                }
            }
            try await connection.checkedQuery(
                "DELETE FROM osd_blob_upload_chunks WHERE user_id = \(user) AND digest = \(digest)", logger: logger)
            return actual
        }
        guard actual == digest else { throw BlobStorageError.digestMismatch(expected: digest, actual: actual) }
    }

    public func discard(_ digest: String, user: String) async throws {
        try await storage.blobTransaction { [logger] connection in
            try await connection.checkedQuery("DELETE FROM osd_blob_upload_chunks WHERE user_id = \(user) AND digest = \(digest)", logger: logger)
        }
    }

    public func read(_ digest: String, range: Range<Int64>, into write: (ByteBuffer) async throws -> Void) async throws {
        guard !range.isEmpty else { return }
        let lower = range.lowerBound
        let upper = range.upperBound
        let starts: [Int64] = try await storage.blobTransaction { [logger] connection in
            var starts: [Int64] = []
            for try await start in try await connection.checkedQuery(
                """
                SELECT start_byte FROM osd_blob_chunks
                WHERE digest = \(digest) AND start_byte < \(upper) AND start_byte + length(data) > \(lower) ORDER BY start_byte
                """, logger: logger
            ).decode(Int64.self) { starts.append(start) }
            return starts
        }
        for start in starts {
            let chunk: ByteBuffer? = try await storage.blobTransaction { [logger] connection in
                var found: ByteBuffer?
                for try await data in try await connection.checkedQuery(
                    "SELECT data FROM osd_blob_chunks WHERE digest = \(digest) AND start_byte = \(start)", logger: logger
                ).decode(ByteBuffer.self) { found = data }
                return found
            }
            guard var chunk else { continue }
            // The part of the chunk inside the range.
            let skip = Int(max(0, lower - start))
            let keep = Int(min(Int64(chunk.readableBytes), upper - start)) - skip
            guard keep > 0, let slice = chunk.getSlice(at: chunk.readerIndex + skip, length: keep) else { continue }
            chunk = slice
            try await write(chunk)
        }
    }

    public func delete(_ digest: String) async throws {
        try await storage.blobTransaction { [logger] connection in
            try await connection.checkedQuery("DELETE FROM osd_blob_chunks WHERE digest = \(digest)", logger: logger)
        }
    }

    public func discardUploads(untouchedSince date: Date) async throws -> Int {
        let milliseconds = Int64(date.timeIntervalSince1970 * 1000)
        return try await storage.blobTransaction { [logger] connection in
            var uploads: Set<String> = []
            for try await (user, digest) in try await connection.checkedQuery(
                """
                WITH stale AS (
                    SELECT user_id, digest FROM osd_blob_upload_chunks GROUP BY user_id, digest HAVING max(written_at) < \(milliseconds))
                DELETE FROM osd_blob_upload_chunks c USING stale s WHERE c.user_id = s.user_id AND c.digest = s.digest
                RETURNING c.user_id, c.digest
                """, logger: logger
            ).decode((String, String).self) { uploads.insert(user + "\n" + digest) }
            return uploads.count
        }
    }
}
