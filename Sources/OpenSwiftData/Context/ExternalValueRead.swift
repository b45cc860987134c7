import Foundation
import GRDB
import GRDBSQLite

/// Reads an `.externalStorage` column whose value is a reference to a file beside the store:
/// the file is mapped into the property's `Data` (its bytes are read from disk when first
/// touched), and a missing or damaged file is a ``SwiftDataError`` naming the entity, the
/// property and the file's digest. Any other value is left to the property's codec.
enum ExternalValueRead {
    /// Initializes `slot` (a `Data` or `Data?` slot of `property`) from column `index` of the
    /// statement's current row when it holds a reference, and returns true; false, with the
    /// slot untouched, for any other value.
    ///
    /// A remote reference (a synced blob whose bytes have not arrived) reads as absent: `nil`
    /// for a `Data?` property, an empty `Data` for a `Data` one. `attachments` is nil for a store
    /// that keeps every value in its rows (in memory), where only remote references are special.
    static func read(
        _ statement: SQLiteStatement, _ index: CInt, into slot: UnsafeMutableRawPointer, property: PropertyLayout, entity: String, row: Int64?,
        attachments: StoreAttachments?
    ) throws -> Bool {
        // SQLite's bytes of the column stay valid until the statement steps or resets; they are
        // only parsed here, copied into the reference, before either happens.
        guard sqlite3_column_type(statement, index) == SQLITE_BLOB,
            sqlite3_column_bytes(statement, index) == CInt(AttachmentReference.encodedCount),
            let bytes = sqlite3_column_blob(statement, index)
        else { return false }
        let buffer = UnsafeRawBufferPointer(start: bytes, count: AttachmentReference.encodedCount)
        if AttachmentReference.startsWithRemoteMagic(buffer), property.codec.slot.type == Data?.self || property.codec.slot.type == Data.self {
            if property.codec.slot.type == Data?.self {
                slot.initializeMemory(as: Data?.self, to: nil)
            } else {
                slot.initializeMemory(as: Data.self, to: Data())
            }
            return true
        }
        guard let attachments, let reference = AttachmentReference(stored: buffer) else { return false }
        let data: Data
        do {
            guard let mapped = try attachments.map(reference, of: entity) else { return false }
            data = mapped
        } catch let error as AttachmentError {
            throw SwiftDataError(
                error.code, "\(entity).\(property.name)\(row.map { " of row \($0)" } ?? ""): \(error)", entity: entity, property: property.name)
        }
        if property.codec.slot.type == Data?.self {
            slot.initializeMemory(as: Data?.self, to: data)
        } else {
            slot.initializeMemory(as: Data.self, to: data)
        }
        return true
    }
}
