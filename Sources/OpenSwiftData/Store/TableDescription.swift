import GRDB

/// A column of a store table.
struct ColumnDescription: Hashable, Sendable {
    let name: String
    /// `INTEGER`, `REAL`, `TEXT` or `BLOB`.
    let type: String
    let isNullable: Bool
    /// For a foreign key: the table whose primary key it holds.
    var references: String? = nil
    /// The name the column had in an earlier version of the schema (`originalName:`), for a
    /// lightweight migration to rename it. Not part of the fingerprint.
    var originalName: String? = nil
    /// The stored form of the property's declared default, given to existing rows when a
    /// migration adds the column. Not part of the fingerprint.
    var defaultValue: DatabaseValue? = nil
    /// Whether large values of the column live in files beside the store (`.externalStorage`
    /// of a `Data` property; see ``StoreAttachments``). Not part of the fingerprint: the column
    /// is a BLOB either way.
    var isExternal = false
}

/// A table the store creates and writes: one per entity. Its first column is always the integer
/// primary key `_pk`, which is not listed in `columns`.
struct TableDescription: Hashable, Sendable {
    let name: String
    let columns: [ColumnDescription]
    /// Uniqueness constraints as column names, one array per constraint.
    let uniqueConstraints: [[String]]
    /// Indexes as column names, one array per index.
    let indexes: [[String]]
    /// The table's name in an earlier version of the schema (a renamed entity), for a
    /// lightweight migration to rename it. Not part of the fingerprint.
    var originalName: String? = nil

    static let primaryKey = "_pk"

    /// A canonical one-line description; two stores whose tables describe the same are
    /// interchangeable.
    var fingerprint: String {
        let cols = columns.map { "\($0.name) \($0.type)\($0.isNullable ? "" : " NOT NULL")\($0.references.map { " -> \($0)" } ?? "")" }.joined(
            separator: ", ")
        let uniques = uniqueConstraints.map { "unique(\($0.joined(separator: ",")))" }.joined(separator: " ")
        let idx = indexes.map { "index(\($0.joined(separator: ",")))" }.joined(separator: " ")
        return "table \(name)(\(cols)) \(uniques) \(idx)"
    }
}

/// All the tables of one store.
struct StoreLayout: Hashable, Sendable {
    let tables: [TableDescription]
    /// The join tables of many-to-many (and inverse-less to-many) relationships.
    var joinTables: [JoinTableDescription] = []

    /// The canonical text of the layout, one line per table in name order.
    var fingerprint: String {
        (tables.map(\.fingerprint) + joinTables.map(\.fingerprint)).sorted().joined(separator: "\n")
    }

    /// A 64-bit FNV-1a hash of the fingerprint, in hex.
    var hash: String {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in fingerprint.utf8 {
            value ^= UInt64(byte)
            value = value &* 0x100_0000_01b3
        }
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
