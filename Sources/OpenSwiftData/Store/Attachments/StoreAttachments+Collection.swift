import Foundation
import GRDB

/// Removing the files no row names any more.
///
/// A file is named by the rows of its directory's tables (any BLOB column) and by the history
/// log, whose updates and tombstones keep stored values, references included: a file stays as
/// long as a history entry names it, so a history value can still be read.
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
/// Every check runs in a write transaction, under SQLite's write lock, as every file write does:
/// a check never races a save that is writing the file it checks. A file is not removed while a
/// read of this store is in progress (it may have started before the save that dropped the last
/// reference, and map the file after): it is checked again after a later save, or at the next
/// open.
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
    /// nothing names. Runs in its own write transaction on `writer`; while a read is in
    /// progress the candidates are kept for a later check. Errors are swallowed: a file left
    /// behind costs space until the next open, never data.
    func collect(_ candidates: Set<Candidate>, writer: any DatabaseWriter) {
        let all: Set<Candidate>? = state.withLock { state in
            state.pending.formUnion(candidates)
            guard state.readers == 0, !state.pending.isEmpty else { return nil }
            defer { state.pending = [] }
            return state.pending
        }
        guard let all else { return }
        do {
            try writer.write { db in
                for candidate in all.sorted(by: { $0.reference.hex < $1.reference.hex }) where try !isReferenced(candidate, in: db) {
                    candidate.directory.remove(hex: candidate.reference.hex)
                }
            }
        } catch {
            state.withLock { $0.pending.formUnion(all) }
        }
    }

    /// Runs ``sweep(in:)`` in a write transaction of its own (after history was deleted), unless
    /// a read is in progress: the next open sweeps then. Errors are swallowed, as in
    /// ``collect(_:writer:)``.
    func sweepWhenIdle(writer: any DatabaseWriter) {
        guard isWritable, state.withLock({ $0.readers == 0 }) else { return }
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
        if try db.tableExists(HistoryLog.table) {
            // A history entry keeps a stored value byte for byte, after its length.
            checks.append("EXISTS (SELECT 1 FROM \(quoted(HistoryLog.table)) WHERE instr(\"changes\", ?1) > 0)")
        }
        guard !checks.isEmpty else { return false }
        let sql = "SELECT " + checks.sorted().joined(separator: " OR ")
        return try Bool.fetchOne(db.cachedStatement(sql: sql), arguments: [candidate.reference.encoded]) == true
    }

    /// Removes every file of the store's directories that nothing names, and every temporary
    /// file a write left (a crash): run at open, in a write transaction, and after deleting
    /// history. Returns the number of files removed.
    @discardableResult
    func sweep(in db: Database) throws -> Int {
        var removed = 0
        for directory in directories {
            let (files, temporaries) = directory.contents()
            for temporary in temporaries {
                try? FileManager.default.removeItem(atPath: temporary)
                removed += 1
            }
            guard !files.isEmpty else { continue }
            var named: Set<String> = []
            let magic = Data(AttachmentReference.magic)
            for table in tables.values where table.directory == directory {
                for column in table.blobColumns {
                    let sql = """
                        SELECT \(quoted(column)) FROM \(quoted(table.name)) \
                        WHERE length(\(quoted(column))) = \(AttachmentReference.encodedCount) AND substr(\(quoted(column)), 1, 16) = ?
                        """
                    for data in try Data.fetchAll(db, sql: sql, arguments: [magic]) {
                        if let reference = AttachmentReference(stored: data) { named.insert(reference.hex) }
                    }
                }
            }
            if try db.tableExists(HistoryLog.table) {
                let entries = try Data.fetchCursor(
                    db, sql: "SELECT \"changes\" FROM \(quoted(HistoryLog.table)) WHERE instr(\"changes\", ?) > 0", arguments: [magic])
                while let entry = try entries.next() {
                    named.formUnion(entry.withUnsafeBytes { AttachmentReference.occurrences(in: $0) })
                }
            }
            for file in files where !named.contains(file) {
                directory.remove(hex: file)
                removed += 1
            }
        }
        state.withLock { $0.pending = [] }
        return removed
    }
}
