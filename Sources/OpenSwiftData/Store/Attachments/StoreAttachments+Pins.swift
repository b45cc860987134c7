import Foundation
import GRDB

/// Files kept for a component of the package while no row names them (`osd_attachment_pins`):
/// the store's one registry of references held outside its rows and history.
///
/// Sync capture pins the file of every reference it logs, in the save's transaction: the bytes
/// must stay until the sync engine has uploaded them, even when a later save replaces the
/// value or deletes the row first. The engine unpins a file once the server holds it, and the
/// file is collected then if nothing else names it. The collection and the sweep at open
/// (``StoreAttachments/isReferenced(_:in:)``, ``StoreAttachments/sweep(in:)``) keep every pinned
/// file.
extension StoreAttachments {
    /// The table of pinned references.
    static let pinsTable = "osd_attachment_pins"

    /// Creates the table of pins when missing.
    static let pinsCreateStatement =
        "CREATE TABLE IF NOT EXISTS \(quoted(pinsTable)) (\"reference\" BLOB NOT NULL, \"owner\" TEXT NOT NULL, PRIMARY KEY (\"reference\", \"owner\")) STRICT"

    /// Pins the file of `reference` for `owner`, in the caller's transaction.
    static func pin(_ reference: AttachmentReference, owner: String, in db: Database) throws {
        try db.execute(sql: pinsCreateStatement)
        try db.execute(
            sql: "INSERT OR IGNORE INTO \(quoted(pinsTable)) (reference, owner) VALUES (?, ?)", arguments: [reference.encoded, owner])
    }

    /// The references `owner` pinned, oldest first.
    static func pinned(owner: String, in db: Database) throws -> [AttachmentReference] {
        guard try db.tableExists(pinsTable) else { return [] }
        return try Data.fetchAll(db, sql: "SELECT reference FROM \(quoted(pinsTable)) WHERE owner = ? ORDER BY rowid", arguments: [owner])
            .compactMap { AttachmentReference(stored: $0) }
    }

    /// Whether anyone pinned `reference`.
    static func isPinned(_ reference: AttachmentReference, in db: Database) throws -> Bool {
        guard try db.tableExists(pinsTable) else { return false }
        return try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(pinsTable)) WHERE reference = ?)", arguments: [reference.encoded])
            == true
    }

    /// Whether `owner` pinned `reference`.
    static func pinned(_ reference: AttachmentReference, owner: String, in db: Database) throws -> Bool {
        guard try db.tableExists(pinsTable) else { return false }
        return try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(pinsTable)) WHERE reference = ? AND owner = ?)", arguments: [reference.encoded, owner])
            == true
    }

    /// Removes `owner`'s pin of `reference`, in the caller's transaction; returns whether there
    /// was one.
    static func unpin(_ reference: AttachmentReference, owner: String, in db: Database) throws -> Bool {
        guard try db.tableExists(pinsTable) else { return false }
        try db.execute(
            sql: "DELETE FROM \(quoted(pinsTable)) WHERE reference = ? AND owner = ?", arguments: [reference.encoded, owner])
        return db.changesCount > 0
    }

    /// Removes the file of `reference` from every directory where nothing names it any more
    /// (after its pin went).
    func collectUnnamed(_ reference: AttachmentReference, writer: any DatabaseWriter) {
        collect(Set(directories.map { Candidate(directory: $0, reference: reference) }), writer: writer)
    }

    /// Notes a file the transaction under way wrote (removed again if it does not commit and
    /// nothing names it).
    func noteWritten(_ candidate: Candidate) {
        state.withLock { _ = $0.written.insert(candidate) }
    }
}
