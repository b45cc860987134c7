import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The directory beside a store file that keeps its `.externalStorage` values:
/// `<store file>.attachments/<first 2 hex digits>/<SHA-256 in hex>`, one file per distinct
/// value (content-addressed, so equal values share one file).
///
/// A file is written whole before anything names it: to a temporary name in its shard
/// directory, flushed (`fsync`), renamed to its final name, then the directory flushed. A crash
/// leaves at most a temporary file or a file no row names, which the store's sweep removes.
struct AttachmentDirectory: Sendable, Hashable {
    /// The directory's path.
    let path: String

    /// What the store file's name is followed by to name its directory.
    static let suffix = ".attachments"
    /// How temporary files' names start.
    static let temporaryPrefix = ".tmp-"

    /// The directory of the store file at `storePath`.
    init(storePath: String) {
        path = storePath + Self.suffix
    }

    /// Where the file of `reference` lives.
    func filePath(of reference: AttachmentReference) -> String { filePath(hex: reference.hex) }

    /// Where the file of the digest `hex` lives.
    func filePath(hex: String) -> String { path + "/" + String(hex.prefix(2)) + "/" + hex }

    /// Writes `data`, whose reference is `reference`, durably under its final name; does nothing
    /// when a file of that name and size is there already (the same content). Returns whether it
    /// wrote a file.
    func store(_ data: Data, as reference: AttachmentReference) throws -> Bool {
        let hex = reference.hex
        let shard = path + "/" + String(hex.prefix(2))
        let final = shard + "/" + hex
        var info = stat()
        if stat(final, &info) == 0, UInt64(info.st_size) == reference.size { return false }
        if try makeDirectory(path) { try flushDirectory(parent(of: path)) }
        if try makeDirectory(shard) { try flushDirectory(path) }
        let temporary = shard + "/" + Self.temporaryPrefix + UUID().uuidString
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("creating", temporary) }
        do {
            try data.withUnsafeBytes { bytes in
                // An empty value has no address and nothing to write.
                guard let base = bytes.baseAddress else { return }
                var offset = 0
                while offset < bytes.count {
                    // Inside the buffer `withUnsafeBytes` lends for this closure.
                    let written = write(descriptor, base + offset, bytes.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw failure("writing", temporary)
                    }
                    offset += written
                }
            }
            guard fsync(descriptor) == 0 else { throw failure("flushing", temporary) }
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        guard rename(temporary, final) == 0 else {
            let error = failure("renaming", temporary)
            unlink(temporary)
            throw error
        }
        try flushDirectory(shard)
        return true
    }

    /// The value of `reference`, mapped from its file: the bytes are read from disk when first
    /// touched, not now. A missing file, or one whose size is not the reference's, throws
    /// ``AttachmentError``.
    func map(_ reference: AttachmentReference) throws -> Data {
        let file = filePath(of: reference)
        let data: Data
        do {
            // swift-corelibs-foundation maps the file (`mmap`) for `.alwaysMapped` on Linux, as
            // Foundation does on Apple's systems: the test of lazy reads checks the mapping.
            data = try Data(contentsOf: URL(fileURLWithPath: file), options: .alwaysMapped)
        } catch {
            throw AttachmentError(reference: reference, path: file, problem: access(file, F_OK) == 0 ? "cannot be read: \(error)" : "is missing")
        }
        guard UInt64(data.count) == reference.size else {
            throw AttachmentError(reference: reference, path: file, problem: "holds \(data.count) bytes instead of \(reference.size)")
        }
        return data
    }

    /// Removes the file of the digest `hex` (nothing happens when it is gone already).
    func remove(hex: String) {
        unlink(filePath(hex: hex))
    }

    /// The digests of the files in the directory, and the paths of temporary files left by
    /// writes that did not finish. Other names are left alone.
    func contents() -> (files: [String], temporaries: [String]) {
        let manager = FileManager.default
        var files: [String] = []
        var temporaries: [String] = []
        for shard in (try? manager.contentsOfDirectory(atPath: path)) ?? [] {
            let shardPath = path + "/" + shard
            if shard.hasPrefix(Self.temporaryPrefix) {
                temporaries.append(shardPath)
                continue
            }
            guard shard.count == 2 else { continue }
            for name in (try? manager.contentsOfDirectory(atPath: shardPath)) ?? [] {
                if name.hasPrefix(Self.temporaryPrefix) {
                    temporaries.append(shardPath + "/" + name)
                } else if name.count == 64, name.hasPrefix(shard), name.allSatisfy(\.isHexDigit) {
                    files.append(name)
                }
            }
        }
        return (files, temporaries)
    }

    /// Creates a directory; true when it did not exist.
    private func makeDirectory(_ directory: String) throws -> Bool {
        if mkdir(directory, 0o755) == 0 { return true }
        if errno == EEXIST { return false }
        if errno == ENOENT {
            // The store's own directory is made when the store is; a missing one is recreated.
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return true
        }
        throw failure("creating the directory", directory)
    }

    /// Flushes a directory's entries (a new name in it) to disk.
    private func flushDirectory(_ directory: String) throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("opening the directory", directory) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("flushing the directory", directory) }
    }

    private func parent(of directory: String) -> String {
        URL(fileURLWithPath: directory).deletingLastPathComponent().path
    }

    /// The error for a failed system call, with `errno`'s text.
    private func failure(_ action: String, _ file: String) -> SwiftDataError {
        SwiftDataError(.storeFailure, "\(action) \(file) for an external-storage value: \(String(cString: strerror(errno)))")
    }
}

/// A file of an `.externalStorage` value that is missing or damaged; the reader turns it into a
/// ``SwiftDataError`` naming the entity and property.
struct AttachmentError: Error, CustomStringConvertible {
    /// The reference whose file is wrong.
    let reference: AttachmentReference
    /// The file's path.
    let path: String
    /// What is wrong with it.
    let problem: String

    var description: String { "the file of the external-storage value \(reference.hex) (\(path)) \(problem)" }
}
