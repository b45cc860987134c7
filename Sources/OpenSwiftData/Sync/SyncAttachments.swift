import Foundation
import GRDB

/// The bytes of a synced `.externalStorage` value that travel apart from its record: a blob,
/// named by the SHA-256 of its content and its size.
package struct SyncAttachment: Hashable, Sendable, CustomStringConvertible {
    /// The SHA-256 of the bytes, in lowercase hexadecimal.
    package let digest: String
    /// The number of bytes.
    package let size: Int64

    /// An attachment from its digest and size; nil unless the digest is 64 lowercase
    /// hexadecimal digits and the size is not negative.
    package init?(digest: String, size: Int64) {
        guard AttachmentReference(hex: digest, size: size) != nil else { return nil }
        self.digest = digest
        self.size = size
    }

    init(_ reference: AttachmentReference) {
        digest = reference.hex
        size = Int64(clamping: reference.size)
    }

    var reference: AttachmentReference? { AttachmentReference(hex: digest, size: size) }

    /// `<digest>:<size>`.
    package var description: String { "\(digest):\(size)" }
}

/// Why bytes that arrived for an attachment were not taken.
package struct SyncAttachmentMismatch: Error, CustomStringConvertible {
    /// The attachment expected.
    package let expected: SyncAttachment
    /// What the file held: its digest and size.
    package let found: (digest: String, size: Int64)

    package var description: String {
        "the bytes downloaded for \(expected) are \(found.size) bytes with SHA-256 \(found.digest); nothing was stored"
    }
}

/// Sync's side of `.externalStorage` values (see `StoreAttachments+Pins.swift` for how the
/// store keeps their files).
///
/// - Capture logs the reference to a value's file, not its bytes, and pins the file.
/// - The engine sends such a field as a blob, uploads the pinned files, and unpins each once
///   the server holds it (``ModelContainer/syncAttachmentUploaded(_:)``).
/// - A pulled blob is written as a remote reference, which reads as absent, unless the bytes are
///   here already. The engine downloads the missing ones
///   (``ModelContainer/missingSyncAttachments()``) and hands each file to
///   ``ModelContainer/syncAttachmentArrived(_:file:)``, which checks it and puts ordinary
///   references in place of the remote ones.
enum SyncAttachments {
    /// The owner of the pins of files whose upload is pending.
    static let pinOwner = "sync"
    /// The owner of the pins of uploaded files that mutations the engine keeps for a server
    /// restore still name: after a restore that lost the blob, the engine sends those mutations
    /// again, and must be able to send the bytes again too.
    static let retainedOwner = "sync.retained"
}

extension ModelContainer {
    /// The attachment a stored value of a field of bytes names: an ordinary or a remote
    /// reference. Nil for any other value (bytes kept in the row).
    package static func syncAttachment(inStored data: Data) -> SyncAttachment? {
        guard data.count == AttachmentReference.encodedCount else { return nil }
        if let reference = AttachmentReference(stored: data) ?? AttachmentReference(remote: data) { return SyncAttachment(reference) }
        return nil
    }

    /// The stored value a pulled blob is written as: a remote reference (the sync engine's saves
    /// write it as an ordinary one when the bytes are here).
    package static func syncStoredValue(of attachment: SyncAttachment) -> Data? {
        attachment.reference?.remoteEncoded
    }

    /// Whether a synced entity has a field kept in files (`.externalStorage`): only then does
    /// the engine need blobs.
    package var syncsAttachments: Bool {
        syncCapture?.plans.values.contains { plan in plan.fieldColumns.contains { plan.layout.columns[$0].isExternallyStored } } ?? false
    }

    /// The attachments sync keeps files for until they are uploaded, oldest first.
    package func pendingSyncAttachmentUploads() throws -> [SyncAttachment] {
        try store.read { db in try StoreAttachments.pinned(owner: SyncAttachments.pinOwner, in: db) }.map(SyncAttachment.init)
    }

    /// The path of the file holding an attachment's bytes, when this device has it.
    package func syncAttachmentFile(_ attachment: SyncAttachment) -> String? {
        guard let reference = attachment.reference, let attachments = store.attachments else { return nil }
        return attachments.directories.first { $0.holds(reference) }?.filePath(of: reference)
    }

    /// Pins the file of every attachment synced rows name that is here, and of every one kept
    /// for a server restore, so that the engine offers each to the server again: after the
    /// server was restored from a backup, which may have lost blobs uploaded since. An upload the
    /// server still holds is settled by one request and no bytes. Returns how many were pinned
    /// anew.
    @discardableResult
    package func repinSyncAttachments() throws -> Int {
        let columns = syncAttachmentColumns
        guard !columns.isEmpty, store.attachments != nil else { return 0 }
        return try store.write { db in
            var pinned = 0
            for (table, names) in columns {
                for column in names {
                    for data in try StoreAttachments.storedReferences(AttachmentReference.magic, table: table, column: column, in: db) {
                        guard let reference = AttachmentReference(stored: data), try !StoreAttachments.isPinned(reference, in: db) else { continue }
                        try StoreAttachments.pin(reference, owner: SyncAttachments.pinOwner, in: db)
                        pinned += 1
                    }
                }
            }
            for reference in try StoreAttachments.pinned(owner: SyncAttachments.retainedOwner, in: db)
            where try StoreAttachments.pinned(reference, owner: SyncAttachments.pinOwner, in: db) == false {
                try StoreAttachments.pin(reference, owner: SyncAttachments.pinOwner, in: db)
                pinned += 1
            }
            return pinned
        }
    }

    /// Forgets that an attachment waits for its upload (the server holds it): its file is
    /// removed when nothing else names it. With `retained`, the file is kept while mutations the
    /// engine keeps for a server restore name it (released by
    /// ``releaseRetainedSyncAttachment(_:)``).
    package func syncAttachmentUploaded(_ attachment: SyncAttachment, retained: Bool = false) throws {
        guard let reference = attachment.reference, let attachments = store.attachments else { return }
        let removed = try store.write { db in
            if retained { try StoreAttachments.pin(reference, owner: SyncAttachments.retainedOwner, in: db) }
            return try StoreAttachments.unpin(reference, owner: SyncAttachments.pinOwner, in: db)
        }
        if removed && !retained { attachments.collectUnnamed(reference, writer: store.writer) }
    }

    /// The uploaded attachments kept for a server restore (see ``syncAttachmentUploaded(_:retained:)``).
    package func retainedSyncAttachments() throws -> [SyncAttachment] {
        try store.read { db in try StoreAttachments.pinned(owner: SyncAttachments.retainedOwner, in: db) }.map(SyncAttachment.init)
    }

    /// Stops keeping an uploaded attachment for a server restore (no kept mutation names it any
    /// more): its file is removed when nothing else names it.
    package func releaseRetainedSyncAttachment(_ attachment: SyncAttachment) throws {
        guard let reference = attachment.reference, let attachments = store.attachments else { return }
        let removed = try store.write { db in try StoreAttachments.unpin(reference, owner: SyncAttachments.retainedOwner, in: db) }
        if removed { attachments.collectUnnamed(reference, writer: store.writer) }
    }

    /// The synced columns that may hold attachments: per entity table, its `.externalStorage`
    /// synced columns.
    private var syncAttachmentColumns: [(table: String, columns: [String])] {
        guard let plans = syncCapture?.plans else { return [] }
        return plans.keys.sorted().compactMap { name in
            guard let plan = plans[name] else { return nil }
            let columns = plan.fieldColumns.map { plan.layout.columns[$0] }.filter(\.isExternallyStored).map(\.name)
            return columns.isEmpty ? nil : (name, columns)
        }
    }

    /// The attachments synced rows name whose bytes are not here yet (remote references), each
    /// once; the columns named in `excluding` (`Entity.property`: downloaded on demand) are not
    /// looked at.
    package func missingSyncAttachments(excluding: Set<String> = []) throws -> [SyncAttachment] {
        try missingSyncAttachments(splitting: excluding).eager
    }

    /// The attachments synced rows name whose bytes are not here yet, read in one pass over the
    /// columns: `eager`, those some column outside `onDemand` (`Entity.property`) names, each
    /// once; `all`, every one, whichever column names it.
    package func missingSyncAttachments(splitting onDemand: Set<String>) throws -> (eager: [SyncAttachment], all: Set<SyncAttachment>) {
        let columns = syncAttachmentColumns
        guard !columns.isEmpty else { return ([], []) }
        return try store.read { db in
            var eager: [SyncAttachment] = []
            var eagerSeen: Set<SyncAttachment> = []
            var all: Set<SyncAttachment> = []
            for (table, names) in columns {
                for column in names {
                    let isEager = !onDemand.contains(table + "." + column)
                    for data in try StoreAttachments.storedReferences(AttachmentReference.remoteMagic, table: table, column: column, in: db) {
                        guard let reference = AttachmentReference(remote: data) else { continue }
                        let attachment = SyncAttachment(reference)
                        all.insert(attachment)
                        if isEager, eagerSeen.insert(attachment).inserted { eager.append(attachment) }
                    }
                }
            }
            return (eager, all)
        }
    }

    /// The path where the engine writes the bytes of a download of `attachment` before handing
    /// them to ``syncAttachmentArrived(_:file:)``, the same for every attempt and launch (an
    /// interrupted download continues): in the store's directory of files when it has one (the
    /// file is then moved, not copied; the sweep at open leaves it, and
    /// ``discardSyncAttachmentDownloads(keeping:)`` removes those no longer wanted), else in the
    /// temporary directory.
    package func syncAttachmentDownloadPath(for attachment: SyncAttachment) throws -> String {
        if let directory = store.attachments?.directories.first { return try directory.downloadPath(attachment.digest) }
        return FileManager.default.temporaryDirectory.appendingPathComponent("osd-download-\(store.identifier)-\(attachment.digest)").path
    }

    /// Removes the unfinished downloads of attachments not in `keeping` (their bytes arrived
    /// another way, or no row needs them any more).
    package func discardSyncAttachmentDownloads(keeping: Set<SyncAttachment>) {
        let wanted = Set(keeping.map(\.digest))
        for directory in store.attachments?.directories ?? [] {
            for (digest, path) in directory.downloads() where !wanted.contains(digest) { unlink(path) }
        }
    }

    /// Takes the downloaded bytes of `attachment` from `file`: checks their size and SHA-256,
    /// keeps them (moved into the store's files, or in the rows of a store in memory), and
    /// writes an ordinary reference in place of every remote reference to them, in one
    /// transaction. Contexts see the change as a save of the sync engine's (``SaveEvent``).
    /// Returns the number of rows that took the bytes. Bytes that are not the attachment's throw
    /// ``SyncAttachmentMismatch``, and nothing changes. `file` is gone afterwards either way.
    ///
    /// `found` is the file's SHA-256 (lowercase hexadecimal) and size when the caller has hashed
    /// it already (the engine, with a faster hasher than the store's); nil to hash it here.
    @discardableResult
    package func syncAttachmentArrived(_ attachment: SyncAttachment, file: String, found: (digest: String, size: Int64)? = nil) throws -> Int {
        defer { unlink(file) }
        guard let reference = attachment.reference else { return 0 }
        let (digest, size) =
            try found
            ?? {
                let (digest, size) = try Self.hashFile(file)
                return (AttachmentReference.hex(digest), Int64(clamping: size))
            }()
        guard digest == attachment.digest, size == attachment.size else {
            throw SyncAttachmentMismatch(expected: attachment, found: (digest, size))
        }
        let columns = syncAttachmentColumns
        let attachments = store.attachments
        // A store in memory keeps the bytes in its rows.
        let inline = attachments == nil ? try Data(contentsOf: URL(fileURLWithPath: file)) : nil
        var updated: [PersistentIdentifier] = []
        try store.write { db in
            if let attachments {
                // Into each directory whose tables may name it, in the transaction: no
                // collection or sweep runs meanwhile, and a rollback's collection removes it.
                var first: AttachmentDirectory?
                for directory in Set(columns.compactMap { attachments.tables[$0.table]?.directory }).sorted(by: { $0.path < $1.path }) {
                    let wrote: Bool
                    if let first {
                        wrote = try directory.store(first.map(reference), as: reference)
                    } else {
                        first = directory
                        wrote = try directory.adopt(file, as: reference)
                    }
                    if wrote { attachments.noteWritten(StoreAttachments.Candidate(directory: directory, reference: reference)) }
                }
            }
            let value = inline ?? reference.encoded
            for (table, names) in columns {
                for column in names {
                    let rows = try Int64.fetchAll(
                        db,
                        sql:
                            "UPDATE \(quoted(table)) SET \(quoted(column)) = ?1 WHERE \(quoted(column)) = ?2 RETURNING \(quoted(TableDescription.primaryKey))",
                        arguments: [value, reference.remoteEncoded])
                    updated += rows.map { PersistentIdentifier(storeIdentifier: store.identifier, entityName: table, key: .row($0)) }
                }
            }
        }
        guard !updated.isEmpty else {
            // No row wanted them any more (changed or deleted meanwhile): the file goes again
            // unless something names it.
            if let attachments { attachments.collectUnnamed(reference, writer: store.writer) }
            return 0
        }
        didCommitSave()
        broadcaster.publish(
            SaveEvent(
                entities: Set(updated.map(\.entityName)), inserted: [], updated: updated, deleted: [], author: syncCapture?.engineAuthor))
        return updated.count
    }

    /// The attachment a model's synced `.externalStorage` property names, and whether its bytes
    /// are here; nil when the property holds its bytes in the row, holds nothing, or does not
    /// sync.
    package func syncAttachment(of model: PersistentIdentifier, property: String) throws -> (attachment: SyncAttachment, isLocal: Bool)? {
        guard let row = model.rowID,
            syncAttachmentColumns.contains(where: { $0.table == model.entityName && $0.columns.contains(property) })
        else { return nil }
        let stored = try store.read { db in
            try Data.fetchOne(
                db, sql: "SELECT \(quoted(property)) FROM \(quoted(model.entityName)) WHERE \(quoted(TableDescription.primaryKey)) = ?",
                arguments: [row])
        }
        guard let stored else { return nil }
        if let local = AttachmentReference(stored: stored) { return (SyncAttachment(local), true) }
        if let remote = AttachmentReference(remote: stored) { return (SyncAttachment(remote), false) }
        return nil
    }

    /// Drops this device's copy of the bytes of a model's synced `.externalStorage` property:
    /// the row takes a remote reference (the property reads as absent), and the file is removed
    /// when nothing else names it. Returns false, and keeps the bytes, when they are not in a
    /// file or the server may not hold them yet (their upload is pending). Contexts see the
    /// change as a save of the sync engine's.
    package func evictSyncAttachment(of model: PersistentIdentifier, property: String) throws -> Bool {
        guard let row = model.rowID, store.attachments != nil,
            syncAttachmentColumns.contains(where: { $0.table == model.entityName && $0.columns.contains(property) })
        else { return false }
        let evicted = try store.write { db -> Bool in
            let column = quoted(property)
            let table = quoted(model.entityName)
            let key = quoted(TableDescription.primaryKey)
            guard let stored = try Data.fetchOne(db, sql: "SELECT \(column) FROM \(table) WHERE \(key) = ?", arguments: [row]),
                let reference = AttachmentReference(stored: stored),
                try !StoreAttachments.isPinned(reference, in: db)
            else { return false }
            try db.execute(sql: "UPDATE \(table) SET \(column) = ? WHERE \(key) = ?", arguments: [reference.remoteEncoded, row])
            return true
        }
        // The file goes once the transaction committed (the column's trigger noted it).
        guard evicted else { return false }
        didCommitSave()
        broadcaster.publish(
            SaveEvent(entities: [model.entityName], inserted: [], updated: [model], deleted: [], author: syncCapture?.engineAuthor))
        return true
    }

    /// The SHA-256 and size of a file, read in parts.
    private static func hashFile(_ path: String) throws -> (digest: [UInt8], size: UInt64) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SwiftDataError(.storeFailure, "reading the downloaded file \(path): it cannot be opened")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        var size: UInt64 = 0
        while true {
            let part = try handle.read(upToCount: 1 << 20) ?? Data()
            if part.isEmpty { break }
            hasher.update(part)
            size += UInt64(part.count)
        }
        return (hasher.finalize(), size)
    }
}
