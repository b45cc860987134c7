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
///
/// `.lock` in the directory coordinates readers and removals across containers and processes
/// (`flock`): a read of the store holds it shared from before its snapshot until its values are
/// mapped; a removal takes it exclusively without waiting, and leaves the file for a later
/// collection when it cannot.
struct AttachmentDirectory: Sendable, Hashable {
    /// The directory's path.
    let path: String

    /// What the store file's name is followed by to name its directory.
    static let suffix = ".attachments"
    /// How temporary files' names start.
    static let temporaryPrefix = ".tmp-"
    /// The name of the lock file.
    static let lockName = ".lock"

    /// The directory of the store file at `storePath`.
    init(storePath: String) {
        path = storePath + Self.suffix
    }

    /// Where the file of `reference` lives.
    func filePath(of reference: AttachmentReference) -> String { filePath(hex: reference.hex) }

    /// Where the file of the digest `hex` lives.
    func filePath(hex: String) -> String { path + "/" + String(hex.prefix(2)) + "/" + hex }

    /// Whether the file of `reference` is here, with the reference's size.
    func holds(_ reference: AttachmentReference) -> Bool {
        var info = stat()
        return stat(filePath(of: reference), &info) == 0 && UInt64(info.st_size) == reference.size
    }

    /// Writes `data`, whose reference is `reference`, durably under its final name; does nothing
    /// when a file of that name and size is there already (the same content). Returns whether it
    /// wrote a file.
    func store(_ data: Data, as reference: AttachmentReference) throws -> Bool {
        let hex = reference.hex
        let shard = path + "/" + String(hex.prefix(2))
        let final = shard + "/" + hex
        var info = stat()
        if stat(final, &info) == 0, UInt64(info.st_size) == reference.size {
            // The same content is there already, but maybe not on disk yet: its writer may have
            // died between its rename and the flush of the directory, or written it for a
            // transaction that did not commit. Flushed like a file written here before a row
            // names it.
            try flushFile(final)
            try flushDirectory(shard)
            try flushDirectory(path)
            return false
        }
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

    /// The prefix of a download's file in the directory, followed by the digest: written by the
    /// sync engine across launches and adopted (``adopt(_:as:)``) once complete. Not a temporary
    /// file: the sweep leaves it, so that an interrupted download continues.
    static let downloadPrefix = ".download-"

    /// The path of the download of the bytes of `digest` (creating the directory).
    func downloadPath(_ digest: String) throws -> String {
        if try makeDirectory(path) { try flushDirectory(parent(of: path)) }
        return path + "/" + Self.downloadPrefix + digest
    }

    /// The unfinished downloads in the directory: digest and path.
    func downloads() -> [(digest: String, path: String)] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).compactMap { name in
            guard name.hasPrefix(Self.downloadPrefix) else { return nil }
            return (String(name.dropFirst(Self.downloadPrefix.count)), path + "/" + name)
        }
    }

    /// Moves `temporary` (a complete file holding the bytes of `reference`, checked by the
    /// caller) durably under its final name; removes it instead when that file is here
    /// already. Returns whether it moved the file.
    func adopt(_ temporary: String, as reference: AttachmentReference) throws -> Bool {
        let hex = reference.hex
        let shard = path + "/" + String(hex.prefix(2))
        let final = shard + "/" + hex
        if holds(reference) {
            unlink(temporary)
            try flushFile(final)
            try flushDirectory(shard)
            return false
        }
        if try makeDirectory(path) { try flushDirectory(parent(of: path)) }
        if try makeDirectory(shard) { try flushDirectory(path) }
        try flushFile(temporary)
        guard rename(temporary, final) == 0 else { throw failure("renaming", temporary) }
        try flushDirectory(shard)
        return true
    }

    /// The value of `reference`, mapped from its file: the bytes are read from disk when first
    /// touched, not now. When the mapping fails (the process's limit of mappings,
    /// `vm.max_map_count`, or a file system that cannot map) or `mapping` is false, the file is
    /// read instead. A missing file, or one whose size is not the reference's, throws
    /// ``AttachmentError`` with ``AttachmentError/Kind/missing`` or
    /// ``AttachmentError/Kind/damaged``; a file that cannot be read, with
    /// ``AttachmentError/Kind/unreadable``.
    func map(_ reference: AttachmentReference, mapping: Bool = true) throws -> Data {
        let file = filePath(of: reference)
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { throw AttachmentError(reference: reference, path: file, kind: .missing, problem: "is missing") }
            throw AttachmentError(
                reference: reference, path: file, kind: .unreadable, problem: "cannot be opened: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw AttachmentError(reference: reference, path: file, kind: .unreadable, problem: "cannot be read: \(String(cString: strerror(errno)))")
        }
        guard UInt64(info.st_size) == reference.size, let count = Int(exactly: reference.size) else {
            throw AttachmentError(
                reference: reference, path: file, kind: .damaged, problem: "holds \(info.st_size) bytes instead of \(reference.size)")
        }
        if mapping, count > 0, let region = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE, descriptor, 0),
            region != UnsafeMutableRawPointer(bitPattern: -1)
        {
            // The mapping stays valid for `count` bytes until `munmap`, which only the
            // deallocator calls, when the last copy of the `Data` goes; closing the descriptor
            // or removing the file does not end it. It is private and writable, so a mutation
            // of the `Data` changes a private copy of the page, never the file. Content-addressed
            // files are never rewritten in place, so the bytes stay those of the reference.
            return Data(bytesNoCopy: region, count: count, deallocator: .custom { pointer, count in munmap(pointer, count) })
        }
        var data = Data(count: count)
        // `errno` of a failed `pread`, saved before anything else can change it.
        var readError: Int32 = 0
        let read = data.withUnsafeMutableBytes { buffer -> Int in
            // An empty value has no address and nothing to read.
            guard let base = buffer.baseAddress else { return 0 }
            var offset = 0
            while offset < buffer.count {
                // Inside the buffer `withUnsafeMutableBytes` lends for this closure.
                let got = pread(descriptor, base + offset, buffer.count - offset, off_t(offset))
                if got < 0 {
                    if errno == EINTR { continue }
                    readError = errno
                    return -1
                }
                if got == 0 { break }
                offset += got
            }
            return offset
        }
        guard read == count else {
            if read < 0 {
                throw AttachmentError(
                    reference: reference, path: file, kind: .unreadable, problem: "cannot be read: \(String(cString: strerror(readError)))")
            }
            throw AttachmentError(reference: reference, path: file, kind: .damaged, problem: "ended after \(read) of \(count) bytes")
        }
        return data
    }

    /// Removes the file of the digest `hex`; true when it is gone (removed now or already),
    /// false when it could not be removed.
    @discardableResult
    func remove(hex: String) -> Bool {
        unlink(filePath(hex: hex)) == 0 || errno == ENOENT
    }

    /// The lock file's path.
    var lockPath: String { path + "/" + Self.lockName }

    /// Creates the directory and its lock file when they are missing (a writable store with
    /// `.externalStorage` columns, at open): a read that starts before the first value is
    /// written has a lock to hold.
    func prepare() throws {
        if try makeDirectory(path) { try flushDirectory(parent(of: path)) }
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("creating the lock file", lockPath) }
        close(descriptor)
    }

    /// A descriptor of the lock file (created when the directory exists and is writable), or
    /// -1 when there is none.
    func openLock() -> Int32 {
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if descriptor >= 0 { return descriptor }
        return open(lockPath, O_RDONLY | O_CLOEXEC)
    }

    /// Whether `descriptor` is open on the file now at ``lockPath`` (same device and inode):
    /// false once the lock file was removed or replaced, when a lock on `descriptor` no longer
    /// excludes what locks the file at the path.
    func isCurrentLock(_ descriptor: Int32) -> Bool {
        var held = stat()
        var current = stat()
        guard fstat(descriptor, &held) == 0, stat(lockPath, &current) == 0 else { return false }
        return held.st_dev == current.st_dev && held.st_ino == current.st_ino
    }

    /// Whether the lock file is free: no read holds it, in this process or another (taken
    /// exclusively without waiting, and released at once).
    var isLockFree: Bool { withExclusiveLock({ true }) == true }

    /// Runs `body` holding the lock file exclusively, taken without waiting; nil, without
    /// running `body`, when a read holds it (in this process or another) or there is no lock
    /// file to take.
    func withExclusiveLock<T>(_ body: () throws -> T) rethrows -> T? {
        let descriptor = openLock()
        guard descriptor >= 0 else { return nil }
        // Closing the descriptor releases the lock.
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return nil }
        return try body()
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

    /// Flushes a file's contents to disk.
    private func flushFile(_ file: String) throws {
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("opening", file) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("flushing", file) }
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
    /// What is wrong with a file.
    enum Kind: Sendable {
        /// There is no file: ``SwiftDataError/missingExternalData``.
        case missing
        /// The file does not hold the value (another size): ``SwiftDataError/missingExternalData``.
        case damaged
        /// The file is there but reading it failed (an I/O error, permissions):
        /// ``SwiftDataError/storeFailure``.
        case unreadable
    }

    /// The reference whose file is wrong.
    let reference: AttachmentReference
    /// The file's path.
    let path: String
    /// What is wrong with it, as an error code.
    let kind: Kind
    /// What is wrong with it.
    let problem: String

    var description: String { "the file of the external-storage value \(reference.hex) (\(path)) \(problem)" }

    /// The ``SwiftDataError`` code for the error: missing data, or a failure of the store.
    var code: SwiftDataError.Code { kind == .unreadable ? .storeFailure : .missingExternalData }
}
