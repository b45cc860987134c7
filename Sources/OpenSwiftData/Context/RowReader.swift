import Foundation
import GRDB
import GRDBSQLite

/// Decodes the current row of a `SELECT _pk, columns…` statement into a new value buffer,
/// reading SQLite's columns straight into the model's typed slots.
struct RowReader {
    /// How one selected column is read: where its slot and "initialized" flag sit in the
    /// buffer, resolved once per fetch. Plain values: going through the columns of a row copies
    /// no reference (a copied closure or class reference is retained and released).
    private struct ColumnRead {
        let slotOffset: Int
        let flagOffset: Int
        /// How the common scalar types are read inline (no closure call, no reference
        /// counting); `.cases` uses the column's case table and `.codec` its codec's reader
        /// (`codecReads`).
        let kind: Kind
    }

    /// The scalar types read inline, by the Swift type of their codec's slot.
    private enum Kind {
        case int, optionalInt, double, optionalDouble, bool, optionalBool
        case string, optionalString, date, optionalDate, uuid, optionalUUID, cases, codec
        /// A to-one relationship's foreign key, read into a ``ToOneSlot/fault(_:)``.
        case reference
        /// An `.externalStorage` value: a reference is mapped from its file, a remote reference
        /// reads as absent (``ExternalValueRead``), anything else is read by the codec.
        case external

        init(codec: ValueCodec) {
            if codec.cases != nil {
                self = .cases
                return
            }
            if codec.kind == .foreignKey, codec.slot.type == ToOneSlot.self {
                self = .reference
                return
            }
            let inline: [(type: Any.Type, kind: Kind)] = [
                (Int.self, .int), (Int?.self, .optionalInt), (Double.self, .double), (Double?.self, .optionalDouble),
                (Bool.self, .bool), (Bool?.self, .optionalBool), (String.self, .string), (String?.self, .optionalString),
                (Date.self, .date), (Date?.self, .optionalDate), (UUID.self, .uuid), (UUID?.self, .optionalUUID),
            ]
            self = inline.first { $0.type == codec.slot.type }?.kind ?? .codec
        }
    }

    private let layout: EntityLayout
    /// For each selected column after the primary key: the property slot it fills.
    private let columns: [PropertyLayout]

    /// The properties of the selected columns, in order.
    var columnProperties: [PropertyLayout] { columns }
    private let reads: [ColumnRead]
    /// Each column's codec reader, for what the inline reads do not cover.
    private let codecReads: [(SQLiteStatement, CInt, UnsafeMutableRawPointer) throws -> Void]
    /// Each column's case table (raw-value enums), or nil.
    private let caseTables: [CaseTable?]
    /// Properties without a column (ephemeral), with the value a fetched model starts with.
    private let initialValues: [(slot: Int, value: Any)]
    /// Positions (in `columns`) of non-optional columns that a custom migration stage left
    /// nullable for its `didMigrate` to fill: NULL leaves their slot without a value.
    private let deferred: Set<Int>
    /// The store's files of `.externalStorage` values, when it keeps any.
    private let attachments: StoreAttachments?

    /// A reader of `columns` (all of the entity's columns by default), selected in that order
    /// after the primary key. NULL in a column named in `deferredColumns` leaves its property
    /// without a value (a row a custom stage's `didMigrate` has yet to fill).
    /// `attachments` are the store's files of `.externalStorage` values (nil: every value is
    /// in its row).
    init(layout: EntityLayout, columns: [PropertyLayout]? = nil, deferredColumns: Set<String>? = nil, attachments: StoreAttachments? = nil) {
        self.layout = layout
        let columns = columns ?? layout.columns
        self.columns = columns
        deferred = deferredColumns.map { names in Set(columns.indices.filter { names.contains(columns[$0].name) }) } ?? []
        let attachments = attachments?.tables[layout.name] == nil ? nil : attachments
        self.attachments = attachments
        let slots = layout.slots
        reads = columns.map { property in
            ColumnRead(
                slotOffset: slots.offsets[property.index], flagOffset: slots.flagsOffset + property.index,
                kind: property.isExternallyStored ? .external : Kind(codec: property.codec)
            )
        }
        codecReads = columns.map(\.codec.readIntoSlot)
        caseTables = columns.map(\.codec.cases)
        initialValues = layout.properties.compactMap { property in
            guard property.columnIndex == nil, let value = property.fallbackValue else { return nil }
            return (property.index, value)
        }
    }

    /// The text of a TEXT column (the caller checked the storage class).
    @inline(__always)
    private static func text(_ statement: SQLiteStatement, _ index: CInt) -> String {
        guard let bytes = sqlite3_column_text(statement, index) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Initializes a `UUID` (or `UUID?`) slot from a BLOB column (the caller checked the storage
    /// class); false, and the slot left uninitialized, when the blob is not 16 bytes long (the
    /// codec then reports it).
    @inline(__always)
    private static func readUUID(_ statement: SQLiteStatement, _ index: CInt, into slot: UnsafeMutableRawPointer, optional: Bool) -> Bool {
        guard sqlite3_column_bytes(statement, index) == 16, let bytes = sqlite3_column_blob(statement, index) else { return false }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: 16)) }
        if optional {
            slot.initializeMemory(as: UUID?.self, to: UUID(uuid: value))
        } else {
            slot.initializeMemory(as: UUID.self, to: UUID(uuid: value))
        }
        return true
    }

    func primaryKey(_ statement: Statement) -> Int64 {
        Int64(sqliteStatement: statement.sqliteStatement, index: 0)
    }

    /// The values of the current row in a buffer of their own.
    func values(_ statement: Statement, primaryKey: Int64) throws -> ValueBuffer {
        let buffer = ValueBuffer.make(layout)
        try read(statement, primaryKey: primaryKey, into: buffer)
        return buffer
    }

    /// Reads the values of the current row into the empty slots of `buffer`, with a typed error
    /// naming the property that cannot be read.
    func read(_ statement: Statement, primaryKey: Int64, into buffer: some SlotBuffer) throws {
        let sqliteStatement = statement.sqliteStatement
        // A missing or unreadable file of an `.externalStorage` value: thrown as it is, after
        // the loop.
        var externalFailure: (any Error)?
        let failed: Int? = buffer.withSlotBase { base in
            return reads.withUnsafeBufferPointer { reads in
                for index in reads.indices {
                    let column = reads[index]
                    let position = CInt(index + 1)
                    let slot = base + column.slotOffset
                    let type = sqlite3_column_type(sqliteStatement, position)
                    // Inline reads accept exactly what the codecs accept; anything else (a wrong
                    // storage class, NULL where a value is required) goes to the codec, which
                    // either reads it or throws the error that names the problem.
                    switch (column.kind, type) {
                    case (.int, SQLITE_INTEGER):
                        slot.initializeMemory(as: Int.self, to: Int(sqlite3_column_int64(sqliteStatement, position)))
                    case (.optionalInt, SQLITE_INTEGER):
                        slot.initializeMemory(as: Int?.self, to: Int(sqlite3_column_int64(sqliteStatement, position)))
                    case (.optionalInt, SQLITE_NULL):
                        slot.initializeMemory(as: Int?.self, to: nil)
                    case (.double, SQLITE_FLOAT), (.double, SQLITE_INTEGER):
                        slot.initializeMemory(as: Double.self, to: sqlite3_column_double(sqliteStatement, position))
                    case (.optionalDouble, SQLITE_FLOAT), (.optionalDouble, SQLITE_INTEGER):
                        slot.initializeMemory(as: Double?.self, to: sqlite3_column_double(sqliteStatement, position))
                    case (.optionalDouble, SQLITE_NULL):
                        slot.initializeMemory(as: Double?.self, to: nil)
                    case (.bool, SQLITE_INTEGER):
                        slot.initializeMemory(as: Bool.self, to: sqlite3_column_int64(sqliteStatement, position) != 0)
                    case (.optionalBool, SQLITE_INTEGER):
                        slot.initializeMemory(as: Bool?.self, to: sqlite3_column_int64(sqliteStatement, position) != 0)
                    case (.optionalBool, SQLITE_NULL):
                        slot.initializeMemory(as: Bool?.self, to: nil)
                    case (.string, SQLITE_TEXT):
                        slot.initializeMemory(as: String.self, to: Self.text(sqliteStatement, position))
                    case (.optionalString, SQLITE_TEXT):
                        slot.initializeMemory(as: String?.self, to: Self.text(sqliteStatement, position))
                    case (.optionalString, SQLITE_NULL):
                        slot.initializeMemory(as: String?.self, to: nil)
                    case (.date, SQLITE_FLOAT), (.date, SQLITE_INTEGER):
                        slot.initializeMemory(
                            as: Date.self, to: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(sqliteStatement, position)))
                    case (.optionalDate, SQLITE_FLOAT), (.optionalDate, SQLITE_INTEGER):
                        slot.initializeMemory(
                            as: Date?.self, to: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(sqliteStatement, position)))
                    case (.optionalDate, SQLITE_NULL):
                        slot.initializeMemory(as: Date?.self, to: nil)
                    case (.uuid, SQLITE_BLOB) where Self.readUUID(sqliteStatement, position, into: slot, optional: false),
                        (.optionalUUID, SQLITE_BLOB) where Self.readUUID(sqliteStatement, position, into: slot, optional: true):
                        break
                    case (.optionalUUID, SQLITE_NULL):
                        slot.initializeMemory(as: UUID?.self, to: nil)
                    case (.reference, SQLITE_INTEGER):
                        slot.initializeMemory(as: ToOneSlot.self, to: .fault(sqlite3_column_int64(sqliteStatement, position)))
                    case (.reference, SQLITE_NULL):
                        slot.initializeMemory(as: ToOneSlot.self, to: .fault(nil))
                    case (.cases, _) where caseTables[index]?.read(sqliteStatement, position, into: slot) == true:
                        break
                    case (.external, SQLITE_BLOB):
                        do {
                            if try ExternalValueRead.read(
                                sqliteStatement, position, into: slot, property: columns[index], entity: layout.name, row: primaryKey,
                                attachments: attachments)
                            {
                                break
                            }
                            try codecReads[index](sqliteStatement, position, slot)
                        } catch let error as SwiftDataError where error.code == .missingExternalData || error.code == .storeFailure {
                            externalFailure = error
                            return index
                        } catch {
                            return index
                        }
                    default:
                        do {
                            try codecReads[index](sqliteStatement, position, slot)
                        } catch {
                            if type == SQLITE_NULL, deferred.contains(index) { continue }
                            return index
                        }
                    }
                    base.storeBytes(of: 1, toByteOffset: column.flagOffset, as: UInt8.self)
                }
                return nil
            }
        }
        if let externalFailure { throw externalFailure }
        if let failed {
            // Read the column again for the error: the failure path only.
            let property = columns[failed]
            do {
                try buffer.withSlot(property.index) { slot in try property.codec.readIntoSlot(sqliteStatement, CInt(failed + 1), slot) }
                buffer.markInitialized(property.index)
            } catch {
                throw SwiftDataError(
                    .valueDecodingFailure, "\(layout.name).\(property.name) of row \(primaryKey): \(error)", entity: layout.name,
                    property: property.name)
            }
            throw SwiftDataError(
                .valueDecodingFailure, "\(layout.name).\(property.name) of row \(primaryKey) could not be read", entity: layout.name,
                property: property.name)
        }
        for (slot, value) in initialValues { buffer.storeBoxed(slot, value) }
    }
}
