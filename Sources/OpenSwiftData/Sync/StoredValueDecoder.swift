import Foundation
import GRDB
import GRDBSQLite

/// Turns stored-form values into values of the properties' Swift types with the properties' own
/// codecs, exactly as a fetch reads a column: the values are bound to one `SELECT ?, ?, …` and
/// read back from its row through each codec's `readIntoSlot` (so a value of the wrong storage
/// class, a NULL for a non-optional property or an unknown enum case fails as it would in a
/// fetch, with a typed error).
///
/// The values go straight into the slots of a slot buffer of the entity's layout (a new model's
/// storage, as a fetch fills a fetched model's): no boxed value, no cast per value.
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

    /// Decodes the values of `fields` at `positions` into the slots of `properties` (attributes
    /// of `buffer`'s layout, one per position), replacing what a slot held. A value that cannot
    /// be decoded throws ``SyncCaptureError/undecodableValue(entity:property:reason:)`` and
    /// leaves its slot empty.
    func decode(_ fields: [SyncField], at positions: [Int], as properties: [PropertyLayout], into buffer: some SlotBuffer, entity: String) throws {
        guard !positions.isEmpty else { return }
        let count = positions.count
        let statement: Statement
        if let known = statements[count] {
            statement = known
        } else {
            statement = try db.cachedStatement(sql: "SELECT " + Array(repeating: "?", count: count).joined(separator: ", "))
            statements[count] = statement
        }
        let sqlite = statement.sqliteStatement
        sqlite3_reset(sqlite)
        for (offset, position) in positions.enumerated() {
            try TableWriter.bind(fields[position].value.stored.databaseValue, at: offset + 1, in: statement)
        }
        guard sqlite3_step(sqlite) == SQLITE_ROW else {
            throw SwiftDataError(
                .storeFailure, "decoding remote values of \(entity): \(String(cString: sqlite3_errmsg(db.sqliteConnection)))", entity: entity)
        }
        defer { sqlite3_reset(sqlite) }
        let layout = buffer.slotLayout
        let slots = layout.slots
        try buffer.withSlotBase { base in
            for (offset, property) in properties.enumerated() {
                let index = property.index
                // Safety: `base` is the buffer's tail, laid out by `slots` (stable while the
                // buffer lives, and it is borrowed for this closure). Only an attribute of this
                // layout whose codec reads the slot's own type is written: the codec initializes
                // a value of that type at the slot's offset, which is inside the tail and aligned
                // for it; the flag byte says whether a value is there (destroyed before a
                // second write, set only once the read succeeded).
                guard index >= 0, index < slots.count, property.codec.slot.type == slots.witnesses[index].type else {
                    throw SyncCaptureError.undecodableValue(
                        entity: entity, property: property.name, reason: "the property has no value slot of its type")
                }
                let slot = base + slots.offsets[index]
                let flag = base + slots.flagsOffset + index
                // A slot written before (a field named twice) is emptied first: the codec
                // initializes raw memory.
                if flag.load(as: UInt8.self) != 0 {
                    slots.witnesses[index].destroy(slot)
                    flag.storeBytes(of: 0, as: UInt8.self)
                }
                do {
                    try property.codec.readIntoSlot(sqlite, CInt(offset), slot)
                } catch {
                    throw SyncCaptureError.undecodableValue(entity: entity, property: property.name, reason: "\(error)")
                }
                flag.storeBytes(of: 1, as: UInt8.self)
            }
        }
    }
}
