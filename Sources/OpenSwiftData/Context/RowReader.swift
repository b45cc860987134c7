import GRDB

/// Decodes the current row of a `SELECT _pk, columns…` statement into a new value buffer,
/// reading SQLite's columns straight into the model's typed slots.
struct RowReader {
    /// How one selected column is read: the codec's in-place reader and where its slot and
    /// "initialized" flag sit in the buffer, resolved once per fetch.
    private struct ColumnRead {
        let slotOffset: Int
        let flagOffset: Int
        let read: (SQLiteStatement, CInt, UnsafeMutableRawPointer) throws -> Void
    }

    private let layout: EntityLayout
    /// For each selected column after the primary key: the property slot it fills.
    private let columns: [PropertyLayout]
    private let reads: [ColumnRead]
    /// Properties without a column (ephemeral), with the value a fetched model starts with.
    private let initialValues: [(slot: Int, value: Any)]

    /// A reader of `columns` (all of the entity's columns by default), selected in that order
    /// after the primary key.
    init(layout: EntityLayout, columns: [PropertyLayout]? = nil) {
        self.layout = layout
        let columns = columns ?? layout.columns
        self.columns = columns
        let slots = layout.slots
        reads = columns.map { property in
            ColumnRead(slotOffset: slots.offsets[property.index], flagOffset: slots.flagsOffset + property.index, read: property.codec.readIntoSlot)
        }
        initialValues = layout.properties.compactMap { property in
            guard property.columnIndex == nil, let value = property.fallbackValue else { return nil }
            return (property.index, value)
        }
    }

    func primaryKey(_ statement: Statement) -> Int64 {
        Int64(sqliteStatement: statement.sqliteStatement, index: 0)
    }

    /// The values of the current row, with a typed error naming the property that cannot be read.
    func values(_ statement: Statement, primaryKey: Int64) throws -> ValueBuffer {
        let buffer = ValueBuffer.make(layout)
        let sqliteStatement = statement.sqliteStatement
        let failed: Int? = buffer.withUnsafeMutablePointerToElements { words in
            let base = UnsafeMutableRawPointer(words)
            return reads.withUnsafeBufferPointer { reads in
                for index in reads.indices {
                    let column = reads[index]
                    do {
                        try column.read(sqliteStatement, CInt(index + 1), base + column.slotOffset)
                    } catch {
                        return index
                    }
                    base.storeBytes(of: 1, toByteOffset: column.flagOffset, as: UInt8.self)
                }
                return nil
            }
        }
        if let failed {
            // Read the column again for the error: the failure path only.
            let property = columns[failed]
            do {
                try buffer.withSlot(property.index) { slot in try property.codec.readIntoSlot(sqliteStatement, CInt(failed + 1), slot) }
                buffer.markInitialized(property.index)
            } catch {
                throw SwiftDataError(.valueDecodingFailure, "\(layout.name).\(property.name) of row \(primaryKey): \(error)", entity: layout.name, property: property.name)
            }
            throw SwiftDataError(.valueDecodingFailure, "\(layout.name).\(property.name) of row \(primaryKey) could not be read", entity: layout.name, property: property.name)
        }
        for (slot, value) in initialValues { buffer.storeBoxed(slot, value) }
        return buffer
    }
}
