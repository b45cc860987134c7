import Foundation
import GRDB
import GRDBSQLite

/// Turns stored-form values into values of the properties' Swift types with the properties' own
/// codecs, exactly as a fetch reads a column: the values are bound to one `SELECT ?, ?, …` and
/// read back from its row through each codec's `readIntoSlot` (so a value of the wrong storage
/// class, a NULL for a non-optional property or an unknown enum case fails as it would in a
/// fetch, with a typed error).
///
/// A batch decodes many records' values with one decoder, which keeps its statement per value
/// count (building the SQL and looking it up in GRDB's cache per record cost as much as the
/// decoding).
final class StoredValueDecoder {
    let db: Database
    private var statements: [Int: Statement] = [:]

    init(db: Database) {
        self.db = db
    }

    /// The values, boxed, in the order of `properties`.
    func decode(_ values: [DatabaseValue], as properties: [PropertyLayout], entity: String) throws -> [Any] {
        guard !values.isEmpty else { return [] }
        let statement: Statement
        if let known = statements[values.count] {
            statement = known
        } else {
            statement = try db.cachedStatement(sql: "SELECT " + Array(repeating: "?", count: values.count).joined(separator: ", "))
            statements[values.count] = statement
        }
        let sqlite = statement.sqliteStatement
        sqlite3_reset(sqlite)
        for (offset, value) in values.enumerated() { try TableWriter.bind(value, at: offset + 1, in: statement) }
        guard sqlite3_step(sqlite) == SQLITE_ROW else {
            throw SwiftDataError(.storeFailure, "decoding remote values of \(entity): \(String(cString: sqlite3_errmsg(db.sqliteConnection)))", entity: entity)
        }
        defer { sqlite3_reset(sqlite) }
        var boxed: [Any] = []
        boxed.reserveCapacity(values.count)
        for (offset, property) in properties.enumerated() {
            let witness = property.codec.slot
            let slot = UnsafeMutableRawPointer.allocate(byteCount: max(witness.size, 1), alignment: witness.alignment)
            defer { slot.deallocate() }
            do {
                try property.codec.readIntoSlot(sqlite, CInt(offset), slot)
            } catch {
                throw SyncCaptureError.undecodableValue(entity: entity, property: property.name, reason: "\(error)")
            }
            boxed.append(witness.box(slot))
            witness.destroy(slot)
        }
        return boxed
    }
}
