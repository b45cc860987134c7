import GRDB

/// Inserts, updates, deletes and looks up rows of one table inside a write transaction, through
/// cached prepared statements.
struct TableWriter {
    let table: TableDescription
    let db: Database
    private let insertSQL: String

    init(table: TableDescription, db: Database) {
        self.table = table
        self.db = db
        let names = table.columns.map { quoted($0.name) }.joined(separator: ", ")
        let marks = Array(repeating: "?", count: table.columns.count).joined(separator: ", ")
        self.insertSQL = table.columns.isEmpty
            ? "INSERT INTO \(quoted(table.name)) DEFAULT VALUES"
            : "INSERT INTO \(quoted(table.name)) (\(names)) VALUES (\(marks))"
    }

    /// Inserts a row (values in column order) and returns its primary key.
    func insert(_ values: [DatabaseValue]) throws -> Int64 {
        let statement = try db.cachedStatement(sql: insertSQL)
        statement.setUncheckedArguments(StatementArguments(values))
        try statement.execute()
        return db.lastInsertedRowID
    }

    /// Updates the given columns (by column index) of one row.
    func update(primaryKey: Int64, columns: [Int], values: [DatabaseValue]) throws {
        guard !columns.isEmpty else { return }
        let assignments = columns.map { "\(quoted(table.columns[$0].name)) = ?" }.joined(separator: ", ")
        let statement = try db.cachedStatement(sql: "UPDATE \(quoted(table.name)) SET \(assignments) WHERE \(quoted(TableDescription.primaryKey)) = ?")
        statement.setUncheckedArguments(StatementArguments(values + [primaryKey.databaseValue]))
        try statement.execute()
    }

    /// Deletes one row.
    func delete(primaryKey: Int64) throws {
        let statement = try db.cachedStatement(sql: "DELETE FROM \(quoted(table.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?")
        statement.setUncheckedArguments([primaryKey])
        try statement.execute()
    }

    /// The primary keys of the rows that share the values of any uniqueness constraint.
    /// `values` are the candidate row's values in column order.
    func conflictingRows(_ values: [DatabaseValue]) throws -> [Int64] {
        guard !table.uniqueConstraints.isEmpty else { return [] }
        var clauses: [String] = []
        var arguments: [DatabaseValue] = []
        for constraint in table.uniqueConstraints {
            // SQLite's unique indexes treat NULLs as distinct, so a constraint with a NULL value
            // cannot conflict.
            let indexes = constraint.compactMap { name in table.columns.firstIndex { $0.name == name } }
            guard indexes.allSatisfy({ !values[$0].isNull }) else { continue }
            clauses.append("(" + indexes.map { "\(quoted(table.columns[$0].name)) = ?" }.joined(separator: " AND ") + ")")
            arguments += indexes.map { values[$0] }
        }
        guard !clauses.isEmpty else { return [] }
        let sql = "SELECT \(quoted(TableDescription.primaryKey)) FROM \(quoted(table.name)) WHERE " + clauses.joined(separator: " OR ")
        return try Int64.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments))
    }
}
