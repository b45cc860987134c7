import Foundation
import GRDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Removing the files no row names any more.
///
/// A file is named by the rows of its directory's tables (any BLOB column), by the history
/// log, whose updates and tombstones keep stored values, references included (a file stays as
/// long as a history entry names it, so a history value can still be read), and by the pins of
/// the package's components (`StoreAttachments+Pins.swift`: sync keeps a file until it is
/// uploaded).
///
/// What may leave a file unnamed, and when it is removed:
/// - a save (or `erase`, a deletion by predicate, any write) that replaces or deletes a
///   reference: temporary triggers on the writer's connection note the old reference of every
///   external column in a temporary table, read back at the end of the transaction; once it has
///   committed, each noted file that nothing names is removed;
/// - a transaction that did not commit: the files it wrote are checked the same way;
/// - a crash, deleted history, a migration that dropped a table or column: the sweep at open
///   (``sweep(in:)``) removes every file nothing names, and the temporary files of writes a crash
///   interrupted.
///
/// Each removal is safe against what could still need the file:
/// - **Writers.** Every check runs in a write transaction, under SQLite's write lock, as every
///   file write does: a check never races a save that is writing or reusing the file it checks.
/// - **Power loss.** File stores run WAL with `synchronous=NORMAL`, where a commit reaches the
///   disk only at the next checkpoint: the transaction that dropped the last reference could
///   come back after a power loss, naming a removed file. Before removing anything, a
///   collection flushes the write-ahead log (and database file) of every file of the store
///   (``flushCommits()``), under the write lock, so every transaction it checked against is on
///   disk. One `fsync` per collection that removes files, instead of one per commit with
///   `synchronous=FULL`.
/// - **Reads.** A read of the store holds the directories' lock files shared from before its
///   snapshot until its values are mapped (``reading(writer:_:)``); a removal takes the lock
///   file exclusively without waiting (`flock`, `LOCK_NB`), so it never removes a file a read
///   in progress, in this process or another, may still map. When it cannot take the lock, the
///   files are kept as pending and retried when this store's reads end and at the next write;
///   the next open's sweep removes what is left (nothing is collected when the store goes).
/// - **Migration stages.** A custom stage is rolled back by copying the database file back:
///   while one runs on a file of the store, in this process or another (its copy,
///   `<file>-stage-backup`, exists, checked in the write transaction), nothing is removed, and
///   the sweep of the open that follows the stage removes what it left unnamed.
extension StoreAttachments {
    /// The temporary table the triggers note released references in.
    static let releasedTable = "osd_attachments_released"

    /// Creates the temporary table and, for each external column, the temporary triggers that
    /// note a reference an update replaces or a deletion removes. Temporary objects belong to
    /// the connection: no schema change, and every writer that opens the store makes its own.
    /// A table rebuild drops the triggers of its table, so this runs again after one.
    func installTriggers(in db: Database) throws {
        try db.execute(
            sql: "CREATE TEMP TABLE IF NOT EXISTS \(quoted(Self.releasedTable)) (\"tableName\" TEXT NOT NULL, \"reference\" BLOB NOT NULL)")
        let magic = "X'" + AttachmentReference.hex(AttachmentReference.magic) + "'"
        for table in tables.values.sorted(by: { $0.name < $1.name }) {
            for (index, column) in table.externalColumns.enumerated() {
                let old = "OLD.\(quoted(column))"
                let isReference = "length(\(old)) = \(AttachmentReference.encodedCount) AND substr(\(old), 1, 16) = \(magic)"
                let note = "INSERT INTO \(quoted(Self.releasedTable)) VALUES (\(LightweightMigration.literal(table.name.databaseValue)), \(old));"
                let prefix = "osd_attachments_\(table.name)_\(index)"
                try db.execute(
                    sql: """
                        CREATE TEMP TRIGGER IF NOT EXISTS \(quoted(prefix + "_update")) AFTER UPDATE OF \(quoted(column)) ON \(quoted(table.name)) \
                        WHEN \(old) IS NOT NEW.\(quoted(column)) AND \(isReference) BEGIN \(note) END
                        """)
                try db.execute(
                    sql: """
                        CREATE TEMP TRIGGER IF NOT EXISTS \(quoted(prefix + "_delete")) AFTER DELETE ON \(quoted(table.name)) \
                        WHEN \(isReference) BEGIN \(note) END
                        """)
            }
        }
    }

    /// Whether any table keeps values in files (only then is there anything to note).
    var hasExternalColumns: Bool { tables.values.contains { !$0.externalColumns.isEmpty } }

    /// The references the transaction under way released, taken from the triggers' table (in
    /// the transaction: if it rolls back, they are back, as is every row).
    func takeReleased(in db: Database) throws -> Set<Candidate> {
        guard hasExternalColumns else { return [] }
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT tableName, reference FROM temp.\(quoted(Self.releasedTable))"))
        guard !rows.isEmpty else { return [] }
        try db.cachedStatement(sql: "DELETE FROM temp.\(quoted(Self.releasedTable))").execute()
        var released: Set<Candidate> = []
        for row in rows {
            let name: String = row[0]
            let data: Data = row[1]
            guard let table = tables[name], let reference = AttachmentReference(stored: data) else { continue }
            released.insert(Candidate(directory: table.directory, reference: reference))
        }
        return released
    }

    /// Forgets the files the transaction under way wrote, returning them.
    func takeWritten() -> Set<Candidate> {
        state.withLock { state in
            defer { state.written = [] }
            return state.written
        }
    }

    /// Removes, among `candidates` and the files left pending by earlier checks, those that
    /// nothing names. Runs in its own write transaction on `writer`; a file that cannot be
    /// removed yet (a read holds the lock file, a migration stage runs, an error) stays pending.
    /// Errors are swallowed: a file left behind costs space until a later collection or the
    /// next open, never data.
    func collect(_ candidates: Set<Candidate>, writer: any DatabaseWriter) {
        guard let all = takePending(adding: candidates) else { return }
        do {
            let left = try writer.write { db in try removeUnnamed(all, in: db) }
            keepPending(left)
        } catch {
            keepPending(all)
        }
    }

    /// Retries the pending files on `writer`'s queue, after the write in progress if any: when
    /// the reads that kept them end.
    func collectLater(writer: any DatabaseWriter) {
        writer.asyncWriteWithoutTransaction { [self] db in
            guard let all = takePending(adding: []) else { return }
            // Without a directory whose lock file is free (a read of another process holds
            // them), nothing could be removed: no write transaction, which would make other
            // processes' saves wait or fail as busy. Kept for the next read end or save.
            guard Set(all.map(\.directory)).contains(where: \.isLockFree) else {
                keepPending(all)
                return
            }
            do {
                var left: Set<Candidate> = []
                try db.inTransaction(.immediate) {
                    left = try removeUnnamed(all, in: db)
                    return .commit
                }
                keepPending(left)
            } catch {
                keepPending(all)
            }
        }
    }

    /// The pending files with `candidates`, taken for a check; nil (with `candidates` kept
    /// pending) when there is nothing to check or nothing may be removed now.
    private func takePending(adding candidates: Set<Candidate>) -> Set<Candidate>? {
        let stage = isMigrating
        return state.withLock { state in
            state.pending.formUnion(candidates)
            guard !stage, !state.pending.isEmpty else { return nil }
            defer {
                state.pending = []
                state.waitsForReads = false
            }
            return state.pending
        }
    }

    /// Keeps files for a later check.
    private func keepPending(_ left: Set<Candidate>) {
        guard !left.isEmpty else { return }
        state.withLock { state in
            state.pending.formUnion(left)
            state.waitsForReads = true
        }
    }

    /// Whether a custom migration stage is running on a file of the store in this process: its
    /// failure puts back a copy of the database file, which may name files removed meanwhile.
    var isMigrating: Bool { databaseFiles.contains { StoreFile.isStageRunning(at: $0) } }

    /// Whether a custom migration stage may be running on a file of the store in any process:
    /// the copy a stage makes before it runs (`<file>-stage-backup`) exists. Checked in the
    /// write transaction that removes files, which runs after the transaction that released
    /// them committed: the copy's file is created before the stage reads the store, so a copy
    /// that is not there yet will be read from a snapshot that no longer names them.
    var hasStageBackup: Bool {
        databaseFiles.contains { FileManager.default.fileExists(atPath: $0 + StoreFile.stageBackupSuffix) }
    }

    /// Removes the files of `candidates` that nothing names, in the write transaction `db`;
    /// returns those that could not be removed (a read holds their directory's lock file).
    private func removeUnnamed(_ candidates: Set<Candidate>, in db: Database) throws -> Set<Candidate> {
        // While a stage may be running in another process (see ``hasStageBackup``), or a read
        // of this store could not take its lock, nothing is removed; the files stay pending.
        guard !hasStageBackup, !readLocks.hasUnprotectedReads else { return candidates }
        // A probe of the lock files first: while reads hold them (another process reading all
        // the time), a retry costs no queries and no flush.
        let free = Set(candidates.map(\.directory).filter(\.isLockFree))
        var left = candidates.filter { !free.contains($0.directory) }
        var unnamed: [AttachmentDirectory: [Candidate]] = [:]
        for candidate in candidates.sorted(by: { $0.reference.hex < $1.reference.hex })
        where try free.contains(candidate.directory) && !isReferenced(candidate, in: db) {
            unnamed[candidate.directory, default: []].append(candidate)
        }
        guard !unnamed.isEmpty else { return left }
        try flushCommits()
        for (directory, files) in unnamed {
            let removed = directory.withExclusiveLock {
                for file in files where !directory.remove(hex: file.reference.hex) { left.insert(file) }
            }
            if removed == nil { left.formUnion(files) }
        }
        return left
    }

    /// Makes every committed transaction of the store's files durable: flushes (`fsync`) each
    /// file's write-ahead log and the file itself. Called under the write lock, so no
    /// transaction commits meanwhile; a commit that a checkpoint already copied into the
    /// database file was flushed by that checkpoint (`synchronous=NORMAL` flushes the file
    /// after a checkpoint), and one still in the log is flushed here. A file that is missing is
    /// skipped: a log that is gone was checkpointed and removed by SQLite. Then each file's
    /// directory is flushed, once.
    func flushCommits() throws {
        // The directories of the files too, each once: a log created since the last flush is
        // an entry of its directory.
        let directories = Set(databaseFiles.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }).sorted()
        for file in databaseFiles {
            for path in [file + "-wal", file] {
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                if descriptor < 0 {
                    if errno == ENOENT { continue }
                    throw SwiftDataError(.storeFailure, "opening \(path) to flush it: \(String(cString: strerror(errno)))")
                }
                defer { close(descriptor) }
                guard fsync(descriptor) == 0 else {
                    throw SwiftDataError(.storeFailure, "flushing \(path): \(String(cString: strerror(errno)))")
                }
            }
        }
        for directory in directories {
            let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw SwiftDataError(.storeFailure, "opening the directory \(directory) to flush it: \(String(cString: strerror(errno)))")
            }
            defer { close(descriptor) }
            guard fsync(descriptor) == 0 else {
                throw SwiftDataError(.storeFailure, "flushing the directory \(directory): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Runs ``sweep(in:)`` in a write transaction of its own (after history was deleted, and at
    /// open), when it can: skipped while a migration stage runs, and when the write lock is
    /// busy (another process is saving). Errors are swallowed, as in ``collect(_:writer:)``: the
    /// next sweep removes what this one left.
    func sweepIfPossible(writer: any DatabaseWriter) {
        guard isWritable, !isMigrating else { return }
        _ = try? writer.write { db in try sweep(in: db) }
    }

    /// Whether a row of the candidate's directory's tables, or a history entry, names it.
    func isReferenced(_ candidate: Candidate, in db: Database) throws -> Bool {
        var checks: [String] = []
        for table in tables.values where table.directory == candidate.directory {
            for column in table.blobColumns {
                checks.append("EXISTS (SELECT 1 FROM \(quoted(table.name)) WHERE \(quoted(column)) = ?1)")
            }
        }
        if try db.tableExists(Self.pinsTable) {
            checks.append("EXISTS (SELECT 1 FROM \(quoted(Self.pinsTable)) WHERE reference = ?1)")
        }
        if try db.tableExists(HistoryLog.table) {
            // A history entry keeps a stored value byte for byte, after its length.
            checks.append("EXISTS (SELECT 1 FROM \(quoted(HistoryLog.table)) WHERE instr(\"changes\", ?1) > 0)")
        }
        guard !checks.isEmpty else { return false }
        let sql = "SELECT " + checks.sorted().joined(separator: " OR ")
        return try Bool.fetchOne(db.cachedStatement(sql: sql), arguments: [candidate.reference.encoded]) == true
    }

    /// Removes every file of the store's directories that nothing names, and every temporary
    /// file a write left (a crash): run at open and after deleting history, in a write
    /// transaction. A directory whose lock file a read holds is left for the next sweep.
    /// Returns the number of files removed.
    @discardableResult
    func sweep(in db: Database) throws -> Int {
        // A stage that may be running in another process: the next sweep removes what is left.
        guard !hasStageBackup, !readLocks.hasUnprotectedReads else { return 0 }
        var removed = 0
        var flushed = false
        for directory in directories {
            let (files, temporaries) = directory.contents()
            var named: Set<String> = []
            if !files.isEmpty {
                let magic = AttachmentReference.magic
                for table in tables.values where table.directory == directory {
                    for column in table.blobColumns {
                        for data in try Self.storedReferences(magic, table: table.name, column: column, in: db) {
                            if let reference = AttachmentReference(stored: data) { named.insert(reference.hex) }
                        }
                    }
                }
                if try db.tableExists(Self.pinsTable) {
                    for data in try Data.fetchAll(db, sql: "SELECT reference FROM \(quoted(Self.pinsTable))") {
                        if let reference = AttachmentReference(stored: data) { named.insert(reference.hex) }
                    }
                }
                if try db.tableExists(HistoryLog.table) {
                    let entries = try Data.fetchCursor(
                        db, sql: "SELECT \"changes\" FROM \(quoted(HistoryLog.table)) WHERE instr(\"changes\", ?) > 0", arguments: [Data(magic)])
                    while let entry = try entries.next() {
                        // The buffer is used only inside the closure, which `occurrences` reads
                        // within its bounds (`rebasing` slices of it) and does not keep.
                        named.formUnion(entry.withUnsafeBytes { AttachmentReference.occurrences(in: $0) })
                    }
                }
            }
            let unnamed = files.filter { !named.contains($0) }
            guard !unnamed.isEmpty || !temporaries.isEmpty else { continue }
            // Temporary files are named by nothing, whatever the log holds; unnamed files only
            // once every transaction checked is on disk.
            if !unnamed.isEmpty, !flushed {
                try flushCommits()
                flushed = true
            }
            removed +=
                directory.withExclusiveLock {
                    var count = 0
                    for temporary in temporaries where unlink(temporary) == 0 { count += 1 }
                    for file in unnamed where directory.remove(hex: file) { count += 1 }
                    return count
                } ?? 0
        }
        return removed
    }

    /// The distinct values of `table.column` that are attachment references under `magic`
    /// (``AttachmentReference/magic`` or ``AttachmentReference/remoteMagic``), still encoded.
    static func storedReferences(_ magic: [UInt8], table: String, column: String, in db: Database) throws -> [Data] {
        let sql = """
            SELECT DISTINCT \(quoted(column)) FROM \(quoted(table)) \
            WHERE length(\(quoted(column))) = \(AttachmentReference.encodedCount) AND substr(\(quoted(column)), 1, 16) = ?
            """
        return try Data.fetchAll(db, sql: sql, arguments: [Data(magic)])
    }
}
