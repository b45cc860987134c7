import Foundation
import GRDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The `.externalStorage` values of a store that live in files beside it: which tables keep
/// them and in which directory, writing a value to its file inside a save's transaction, and
/// mapping it back when a row is read.
///
/// A value larger than ``threshold`` (or one that starts with the reference's magic) goes to a
/// file of its ``AttachmentDirectory``, and the column holds an ``AttachmentReference``; smaller
/// values stay in the row. Files no row or history entry names any more are removed by the
/// collection (`StoreAttachments+Collection.swift`). Made only for a store on disk: an in-memory
/// store keeps every value in its rows.
final class StoreAttachments: Sendable {
    /// Values larger than this many bytes (128 KiB) are kept in files; values of at most this
    /// size stay in the row.
    static let threshold = 131_072

    /// A table whose rows may name files, and the directory of those files.
    struct Table: Sendable {
        /// The table's name (unique across a container's files).
        let name: String
        /// The directory of the files its values name: its own file's.
        let directory: AttachmentDirectory
        /// Its `.externalStorage` columns.
        let externalColumns: [String]
        /// Its BLOB columns, external or not: any of them may name a file (a column whose
        /// attribute lost `.externalStorage` keeps its references), so a file is kept while any
        /// of them names it.
        let blobColumns: [String]
    }

    /// The tables with BLOB columns, by name.
    let tables: [String: Table]
    /// The directories, each once.
    let directories: [AttachmentDirectory]
    /// Whether files may be written and removed (false for a read-only store).
    let isWritable: Bool
    /// The database files whose rows or history may name a file: every file of the store.
    let databaseFiles: [String]
    /// The shared locks this store's reads hold on its directories' lock files.
    let readLocks: AttachmentReadLocks

    /// What changes while the store is open: the files written by the transaction under way
    /// (removed again if it does not commit), the files whose last reference may be gone but
    /// that could not be removed yet, and whether a removal waits for this store's reads to
    /// end.
    struct State {
        var written: Set<Candidate> = []
        var pending: Set<Candidate> = []
        var waitsForReads = false
        /// For tests: reads fall back to `read(2)` as when mapping fails.
        var mapsFiles = true
    }

    /// A file that may no longer be named: its directory and the reference that names it.
    struct Candidate: Hashable, Sendable {
        let directory: AttachmentDirectory
        let reference: AttachmentReference
    }

    let state = Mutex(State())

    /// The attachments of a store whose tables `layout` describes, each table's files beside
    /// the file named in `files` (by table name); tables without a file (in memory) keep their
    /// values inline. Nil when no table of a file has a BLOB column.
    init?(layout: StoreLayout, files: [String: String], isWritable: Bool) {
        let databaseFiles = Array(Set(files.values)).sorted()
        var tables: [String: Table] = [:]
        for table in layout.tables {
            guard let file = files[table.name] else { continue }
            let blobs = table.columns.filter { $0.type == ColumnType.blob.rawValue }
            guard !blobs.isEmpty else { continue }
            tables[table.name] = Table(
                name: table.name, directory: AttachmentDirectory(storePath: file), externalColumns: blobs.filter(\.isExternal).map(\.name),
                blobColumns: blobs.map(\.name))
        }
        let directories = Array(Set(tables.values.map(\.directory))).sorted { $0.path < $1.path }
        // Nothing to do for a store that keeps no value in files and never did.
        guard
            tables.values.contains(where: { !$0.externalColumns.isEmpty })
                || directories.contains(where: { FileManager.default.fileExists(atPath: $0.path) })
        else { return nil }
        self.tables = tables
        self.directories = directories
        self.isWritable = isWritable
        self.databaseFiles = databaseFiles
        readLocks = AttachmentReadLocks(directories: directories)
    }

    /// Whether `table` keeps large values of `column` in files.
    func isExternal(_ column: String, of table: String) -> Bool {
        tables[table]?.externalColumns.contains(column) ?? false
    }

    // MARK: Writing

    /// The value to store in `column` of `table` for the encoded `value`: a reference to the
    /// file it was written to when it is larger than ``threshold`` or starts with the magic, else
    /// `value` itself. Called inside the save's write transaction, which holds SQLite's write
    /// lock: the file is on disk before the transaction that names it commits.
    ///
    /// With `keepingRemote` (a save of the sync engine's, which writes pulled values), a remote
    /// reference (``AttachmentReference/remoteMagic``) is written as it is, or as an ordinary
    /// reference when the file of its bytes is here already; an app's save never writes one.
    func externalize(_ value: DatabaseValue, column: String, of table: String, keepingRemote: Bool = false) throws -> DatabaseValue {
        guard isWritable, case let .blob(data) = value.storage, let entry = tables[table], entry.externalColumns.contains(column),
            data.count > Self.threshold || AttachmentReference.startsWithMagic(data)
        else { return value }
        if keepingRemote, let remote = AttachmentReference(remote: data) {
            return entry.directory.holds(remote) ? remote.encoded.databaseValue : value
        }
        let reference = AttachmentReference(of: data)
        let candidate = Candidate(directory: entry.directory, reference: reference)
        do {
            if try entry.directory.store(data, as: reference) {
                state.withLock { _ = $0.written.insert(candidate) }
            }
        } catch {
            // A failure after the file got its name (flushing its directory) leaves a file the
            // failed save's collection must check, as one it wrote; one that is not there, or
            // that a row names, stays as it is.
            state.withLock { _ = $0.written.insert(candidate) }
            throw error
        }
        return reference.encoded.databaseValue
    }

    // MARK: Reading

    /// The bytes a stored value of `table` stands for: the mapped file when it is a reference,
    /// else the value itself.
    func resolve(_ value: DatabaseValue, of table: String) throws -> DatabaseValue {
        guard case let .blob(data) = value.storage, let entry = tables[table], let reference = AttachmentReference(stored: data) else {
            return value
        }
        return try entry.directory.map(reference, mapping: mapsFiles).databaseValue
    }

    /// The mapped value of a reference read from `table`.
    func map(_ reference: AttachmentReference, of table: String) throws -> Data? {
        guard let entry = tables[table] else { return nil }
        return try entry.directory.map(reference, mapping: mapsFiles)
    }

    /// Whether reads map files (false only when a test made them read files instead).
    var mapsFiles: Bool { state.withLock { $0.mapsFiles } }

    /// Runs a read of the store, `body`, holding the directories' lock files shared: from before
    /// its snapshot until its values are mapped, no collection, in this process or another,
    /// removes a file (a read that started before the save that dropped a file's last reference
    /// may still map it). A removal that had to wait for this process's reads runs once the
    /// last of them ends, on `writer`'s queue.
    func reading<T>(writer: any DatabaseWriter, _ body: () throws -> T) rethrows -> T {
        readLocks.acquire()
        defer {
            if readLocks.release(), isWritable, state.withLock({ $0.waitsForReads && !$0.pending.isEmpty }) {
                collectLater(writer: writer)
            }
        }
        return try body()
    }
}

/// The shared locks a store's reads hold on the lock files of its directories
/// (``AttachmentDirectory/lockName``), counted: the first read in progress takes them, the last
/// one releases them. Each store has its own descriptors, so a collection (which opens the lock
/// file anew) cannot take the lock while a read of this store, or of any other container or
/// process, holds it: `flock` locks belong to open file descriptions.
final class AttachmentReadLocks: Sendable {
    private struct State {
        /// One per directory, -1 until it could be opened.
        var descriptors: [Int32]
        /// Reads in progress.
        var holders = 0
        /// Whether a lock could not be taken for the reads in progress.
        var unprotected = false
    }

    private let directories: [AttachmentDirectory]
    private let state: Mutex<State>

    init(directories: [AttachmentDirectory]) {
        self.directories = directories
        state = Mutex(State(descriptors: Array(repeating: -1, count: directories.count)))
    }

    deinit {
        state.withLock { state in
            for descriptor in state.descriptors where descriptor >= 0 { close(descriptor) }
        }
    }

    /// Counts a read in progress; the first takes every lock shared, waiting while a collection
    /// holds one (only while it removes files). A cached descriptor whose lock file was removed
    /// or replaced since (another inode at the path) is reopened first: a lock on the old file
    /// would exclude no one.
    ///
    /// A lock that cannot be taken (a lock file that cannot be opened, a directory that does
    /// not exist yet and cannot be made, a failing `flock`) does not fail the read: it goes on
    /// unprotected. Collection is then conservative: no collection or sweep of this store
    /// removes a file while such a read is in progress (``hasUnprotectedReads``). Another
    /// process cannot know of the read; its removals are excluded only by locks that were taken.
    func acquire() {
        state.withLock { state in
            if state.holders == 0 {
                state.unprotected = false
                for (index, directory) in directories.enumerated() {
                    if state.descriptors[index] >= 0, !directory.isCurrentLock(state.descriptors[index]) {
                        close(state.descriptors[index])
                        state.descriptors[index] = -1
                    }
                    if state.descriptors[index] < 0 { state.descriptors[index] = directory.openLock() }
                    let descriptor = state.descriptors[index]
                    guard descriptor >= 0 else {
                        // A directory that does not exist holds no file to protect (a store
                        // with BLOB columns but no value in files yet).
                        if FileManager.default.fileExists(atPath: directory.path) { state.unprotected = true }
                        continue
                    }
                    var result = flock(descriptor, LOCK_SH)
                    while result != 0 && errno == EINTR { result = flock(descriptor, LOCK_SH) }
                    if result != 0 { state.unprotected = true }
                }
            }
            state.holders += 1
        }
    }

    /// Whether a read in progress could not take a lock (see ``acquire()``): nothing of the
    /// store may be removed until it ends.
    var hasUnprotectedReads: Bool { state.withLock { $0.holders > 0 && $0.unprotected } }

    /// Ends a read; the last one releases the locks and returns true.
    func release() -> Bool {
        state.withLock { state in
            state.holders -= 1
            guard state.holders == 0 else { return false }
            for descriptor in state.descriptors where descriptor >= 0 { flock(descriptor, LOCK_UN) }
            return true
        }
    }
}
