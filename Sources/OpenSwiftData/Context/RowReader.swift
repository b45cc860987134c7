import GRDB

/// Decodes the current row of a `SELECT _pk, columns…` statement into a new value buffer,
/// reading SQLite's columns straight into the model's typed slots.
struct RowReader {
    private let layout: EntityLayout
    /// For each selected column after the primary key: the property slot it fills.
    private let columns: [PropertyLayout]
    /// Properties without a column (ephemeral), with the value a fetched model starts with.
    private let initialValues: [(slot: Int, value: Any)]

    init(layout: EntityLayout) {
        self.layout = layout
        columns = layout.columns
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
        for (offset, property) in columns.enumerated() {
            do {
                try buffer.withSlot(property.index) { slot in
                    try property.codec.readIntoSlot(sqliteStatement, CInt(offset + 1), slot)
                }
                buffer.markInitialized(property.index)
            } catch {
                throw SwiftDataError(.valueDecodingFailure, "\(layout.name).\(property.name) of row \(primaryKey): \(error)", entity: layout.name, property: property.name)
            }
        }
        for (slot, value) in initialValues { buffer.storeBoxed(slot, value) }
        return buffer
    }
}
