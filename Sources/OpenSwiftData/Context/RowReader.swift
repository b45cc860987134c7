import GRDB

/// Decodes the current row of a `SELECT _pk, columns…` statement into a model's values, reading
/// SQLite's columns directly (no intermediate `Row` lookups).
struct RowReader {
    private let template: ContiguousArray<Any>
    /// For each selected column after the primary key: the property slot it fills and its decoder.
    private let decoders: [(slot: Int, name: String, decode: (DatabaseValue) throws -> Any)]
    private let entityName: String

    init(layout: EntityLayout) {
        template = ContiguousArray(layout.properties.map { property -> Any in
            if property.columnIndex != nil { return UnsetValue() }
            return property.defaultValue ?? property.codec.emptyValue ?? UnsetValue()
        })
        decoders = layout.columns.map { ($0.index, $0.name, $0.codec.decode) }
        entityName = layout.name
    }

    func primaryKey(_ statement: Statement) -> Int64 {
        Int64(sqliteStatement: statement.sqliteStatement, index: 0)
    }

    /// The values of the current row, with a typed error naming the property that cannot be read.
    func values(_ statement: Statement, primaryKey: Int64) throws -> ContiguousArray<Any> {
        var values = template
        let sqliteStatement = statement.sqliteStatement
        for (offset, decoder) in decoders.enumerated() {
            let stored = DatabaseValue(sqliteStatement: sqliteStatement, index: CInt(offset + 1))
            do {
                values[decoder.slot] = try decoder.decode(stored)
            } catch {
                throw SwiftDataError(.valueDecodingFailure, "\(entityName).\(decoder.name) of row \(primaryKey): \(error)", entity: entityName, property: decoder.name)
            }
        }
        return values
    }
}
