import Crypto
import Foundation
import NIOCore
import _NIOFileSystem

/// Blobs in files: each blob at `<root>/<first two digits>/<digest>`, each user's unfinished
/// upload at `<root>/uploads/<user's hash>-<digest>`. A finished upload is hashed, synced to
/// disk and renamed into place, so a blob's file is always whole; a crash leaves at most an
/// upload, which the user resumes.
public struct FileBlobStorage: BlobStorage {
    /// The folder the blobs are kept in.
    public let root: FilePath
    private let fileSystem = FileSystem.shared

    /// Blobs in `root` (created when missing). For a SQLite database at `path`, the server
    /// keeps them in `path + ".blobs"`.
    public init(root: String) {
        self.root = FilePath(root)
    }

    private func blobPath(_ digest: String) -> FilePath {
        root.appending(String(digest.prefix(2))).appending(digest)
    }

    private var uploads: FilePath { root.appending("uploads") }

    private func uploadPath(_ digest: String, user: String) -> FilePath {
        uploads.appending("\(Self.userKey(user))-\(digest)")
    }

    /// The file-name form of a user: the first 16 hexadecimal digits of the SHA-256 of the name
    /// (any name is a safe file name then).
    private static func userKey(_ user: String) -> String {
        SyncService.hex(SHA256.hash(data: Data(user.utf8)).prefix(8))
    }

    private func fileSize(_ path: FilePath) async throws -> Int64? {
        try await fileSystem.info(forFileAt: path, infoAboutSymbolicLink: false)?.size
    }

    public func size(of digest: String) async throws -> Int64? {
        try await fileSize(blobPath(digest))
    }

    public func staged(_ digest: String, user: String) async throws -> Int64 {
        try await fileSize(uploadPath(digest, user: user)) ?? 0
    }

    public func stagedTotal(user: String) async throws -> Int64 {
        let prefix = Self.userKey(user) + "-"
        guard try await fileSystem.info(forFileAt: uploads, infoAboutSymbolicLink: false) != nil else { return 0 }
        var total: Int64 = 0
        try await fileSystem.withDirectoryHandle(atPath: uploads) { directory in
            for try await entry in directory.listContents() where entry.name.string.hasPrefix(prefix) {
                total += try await fileSize(entry.path) ?? 0
            }
        }
        return total
    }

    public func append(
        _ body: some AsyncSequence<ByteBuffer, any Error> & Sendable, to digest: String, user: String, at offset: Int64, limit: Int64
    ) async throws -> Int64 {
        try await fileSystem.createDirectory(at: uploads, withIntermediateDirectories: true, permissions: nil)
        let path = uploadPath(digest, user: user)
        let held = try await fileSize(path) ?? 0
        guard held == offset else { throw BlobStorageError.offsetMismatch(expected: held) }
        return try await fileSystem.withFileHandle(forWritingAt: path, options: .modifyFile(createIfNecessary: true)) { handle in
            var end = offset
            do {
                for try await chunk in body {
                    guard end + Int64(chunk.readableBytes) <= limit else { throw BlobStorageError.limitExceeded(limit: limit) }
                    try await handle.write(contentsOf: chunk, toAbsoluteOffset: end)
                    end += Int64(chunk.readableBytes)
                }
            } catch {
                // What arrived before the failure stays: the client resumes from there.
                try? await handle.synchronize()
                throw error
            }
            try await handle.synchronize()
            return end
        }
    }

    public func commit(_ digest: String, user: String) async throws {
        let path = uploadPath(digest, user: user)
        let destination = blobPath(digest)
        if try await fileSize(destination) != nil {
            // Stored already (perhaps uploaded by another user first): the bytes must still be
            // the digest's, so that an upload proves the uploader has them.
            let actual = try await hash(path, copyingTo: nil)
            try await discard(digest, user: user)
            guard actual == digest else { throw BlobStorageError.digestMismatch(expected: digest, actual: actual) }
            return
        }
        // The upload is copied into a new file as it is hashed: a part still being written to
        // the upload (a second request of the same upload) can change the upload, never the
        // blob, whose file no request writes to.
        let copy = uploads.appending("\(Self.userKey(user))-\(digest).\(UUID().uuidString).commit")
        do {
            let actual = try await hash(path, copyingTo: copy)
            guard actual == digest else { throw BlobStorageError.digestMismatch(expected: digest, actual: actual) }
            try await fileSystem.createDirectory(at: destination.removingLastComponent(), withIntermediateDirectories: true, permissions: nil)
            if try await fileSize(destination) == nil {
                do {
                    try await fileSystem.moveItem(at: copy, to: destination)
                } catch {
                    // Another upload of the same bytes stored it meanwhile: kept once.
                    guard try await fileSize(destination) != nil else { throw error }
                }
            }
            // The rename is durable once the folder that holds the blob is synced.
            try await fileSystem.withFileHandle(forReadingAt: destination.removingLastComponent()) { try await $0.synchronize() }
        } catch {
            _ = try? await fileSystem.removeItem(at: copy, strategy: .platformDefault, recursively: false)
            try? await discard(digest, user: user)
            throw error
        }
        _ = try? await fileSystem.removeItem(at: copy, strategy: .platformDefault, recursively: false)
        try await discard(digest, user: user)
    }

    /// The SHA-256 of a file, in lowercase hexadecimal, read once in parts; each part is also
    /// written to a new file at `copy` when given (synced to disk before this returns).
    private func hash(_ path: FilePath, copyingTo copy: FilePath?) async throws -> String {
        var hasher = SHA256()
        try await fileSystem.withFileHandle(forReadingAt: path) { source in
            let chunks = source.readChunks(chunkLength: .mebibytes(1))
            guard let copy else {
                for try await chunk in chunks { chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) } }
                return
            }
            try await fileSystem.withFileHandle(forWritingAt: copy, options: .newFile(replaceExisting: false)) { target in
                var offset: Int64 = 0
                for try await chunk in chunks {
                    chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                    try await target.write(contentsOf: chunk, toAbsoluteOffset: offset)
                    offset += Int64(chunk.readableBytes)
                }
                try await target.synchronize()
            }
        }
        return SyncService.hex(hasher.finalize())
    }

    public func discard(_ digest: String, user: String) async throws {
        try await fileSystem.removeItem(at: uploadPath(digest, user: user), strategy: .platformDefault, recursively: false)
    }

    public func read(_ digest: String, range: Range<Int64>, into write: (ByteBuffer) async throws -> Void) async throws {
        try await fileSystem.withFileHandle(forReadingAt: blobPath(digest)) { handle in
            for try await chunk in handle.readChunks(in: range, chunkLength: .kibibytes(256)) { try await write(chunk) }
        }
    }

    public func discardUploads(untouchedSince date: Date) async throws -> Int {
        var stale: [FilePath] = []
        guard try await fileSystem.info(forFileAt: uploads, infoAboutSymbolicLink: false) != nil else { return 0 }
        try await fileSystem.withDirectoryHandle(atPath: uploads) { directory in
            for try await entry in directory.listContents() {
                guard let info = try await fileSystem.info(forFileAt: entry.path, infoAboutSymbolicLink: false) else { continue }
                let modified = info.lastDataModificationTime
                let seconds = Double(modified.seconds) + Double(modified.nanoseconds) / 1e9
                if seconds < date.timeIntervalSince1970 { stale.append(entry.path) }
            }
        }
        for path in stale { try await fileSystem.removeItem(at: path, strategy: .platformDefault, recursively: false) }
        return stale.count
    }

    public func delete(_ digest: String) async throws {
        try await fileSystem.removeItem(at: blobPath(digest), strategy: .platformDefault, recursively: false)
    }
}
