import Foundation
import GRDB
import Synchronization

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

    /// What changes while the store is open: the files written by the transaction under way
    /// (removed again if it does not commit), the files whose last reference may be gone but
    /// that could not be removed yet, and the number of reads in progress.
    struct State {
        var written: Set<Candidate> = []
        var pending: Set<Candidate> = []
        var readers = 0
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
    func externalize(_ value: DatabaseValue, column: String, of table: String) throws -> DatabaseValue {
        guard isWritable, case let .blob(data) = value.storage, let entry = tables[table], entry.externalColumns.contains(column),
            data.count > Self.threshold || AttachmentReference.startsWithMagic(data)
        else { return value }
        let reference = AttachmentReference(of: data)
        if try entry.directory.store(data, as: reference) {
            state.withLock { _ = $0.written.insert(Candidate(directory: entry.directory, reference: reference)) }
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
        return try entry.directory.map(reference).databaseValue
    }

    /// The mapped value of a reference read from `table`.
    func map(_ reference: AttachmentReference, of table: String) throws -> Data? {
        guard let entry = tables[table] else { return nil }
        return try entry.directory.map(reference)
    }

    /// Counts a read in progress while `body` runs: a file whose last reference a save removed
    /// is kept while a read that may have started before that save could still map it.
    func reading<T>(_ body: () throws -> T) rethrows -> T {
        state.withLock { $0.readers += 1 }
        defer { state.withLock { $0.readers -= 1 } }
        return try body()
    }
}
