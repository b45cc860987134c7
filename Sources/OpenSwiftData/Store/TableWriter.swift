import Foundation
import GRDB
import GRDBSQLite

/// Inserts, updates, deletes and looks up rows of one table inside one write transaction.
///
/// Statements are prepared once per writer and values are bound straight through SQLite's C API,
/// so a save of many rows pays for SQL text and argument packing once, not per row.
final class TableWriter {
    let table: TableDescription
    private let db: Database
    private var insertStatement: Statement?
    private var deleteStatement: Statement?
    private var updateStatements: [[Int]: Statement] = [:]
    private var conflictStatements: [[Int]: Statement] = [:]

    init(table: TableDescription, db: Database) {
        self.table = table
        self.db = db
    }

    /// Inserts a row with a given primary key (values in column order).
    func insert(_ values: [DatabaseValue], primaryKey: Int64) throws {
        let statement = try prepared(&insertStatement) {
            let names = ([TableDescription.primaryKey] + table.columns.map(\.name)).map(quoted).joined(separator: ", ")
            let marks = Array(repeating: "?", count: table.columns.count + 1).joined(separator: ", ")
            return "INSERT INTO \(quoted(table.name)) (\(names)) VALUES (\(marks))"
        }
        reset(statement)
        try Self.bind(primaryKey.databaseValue, at: 1, in: statement)
        for (offset, value) in values.enumerated() { try Self.bind(value, at: offset + 2, in: statement) }
        try statement.execute()
    }

    /// Updates the given columns (by column index) of one row.
    func update(primaryKey: Int64, columns: [Int], values: [DatabaseValue]) throws {
        guard !columns.isEmpty else { return }
        let statement: Statement
        if let cached = updateStatements[columns] {
            statement = cached
        } else {
            let assignments = columns.map { "\(quoted(table.columns[$0].name)) = ?" }.joined(separator: ", ")
            statement = try makeStatement("UPDATE \(quoted(table.name)) SET \(assignments) WHERE \(quoted(TableDescription.primaryKey)) = ?")
            updateStatements[columns] = statement
        }
        reset(statement)
        for (offset, value) in values.enumerated() { try Self.bind(value, at: offset + 1, in: statement) }
        try Self.bind(primaryKey.databaseValue, at: values.count + 1, in: statement)
        try statement.execute()
    }

    /// Deletes one row.
    func delete(primaryKey: Int64) throws {
        let statement = try prepared(&deleteStatement) {
            "DELETE FROM \(quoted(table.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?"
        }
        reset(statement)
        try Self.bind(primaryKey.databaseValue, at: 1, in: statement)
        try statement.execute()
    }

    /// The primary keys of the rows that share the values of any uniqueness constraint.
    /// `values` are the candidate row's values in column order.
    func conflictingRows(_ values: [DatabaseValue]) throws -> [Int64] {
        guard !table.uniqueConstraints.isEmpty else { return [] }
        // SQLite's unique indexes treat NULLs as distinct, so a constraint with a NULL value
        // cannot conflict.
        let constraints = table.uniqueConstraintColumns.filter { columns in columns.allSatisfy { !values[$0].isNull } }
        guard !constraints.isEmpty else { return [] }
        let key = constraints.flatMap { $0 + [-1] }
        let statement: Statement
        if let cached = conflictStatements[key] {
            statement = cached
        } else {
            let clauses = constraints.map { columns in
                "(" + columns.map { "\(quoted(table.columns[$0].name)) = ?" }.joined(separator: " AND ") + ")"
            }
            statement = try makeStatement(
                "SELECT \(quoted(TableDescription.primaryKey)) FROM \(quoted(table.name)) WHERE " + clauses.joined(separator: " OR "))
            conflictStatements[key] = statement
        }
        reset(statement)
        for (offset, column) in constraints.joined().enumerated() { try Self.bind(values[column], at: offset + 1, in: statement) }
        return try Int64.fetchAll(statement)
    }

    private func prepared(_ slot: inout Statement?, _ sql: () -> String) throws -> Statement {
        if let statement = slot { return statement }
        let statement = try makeStatement(sql())
        slot = statement
        return statement
    }

    private func makeStatement(_ sql: String) throws -> Statement {
        let statement = try db.makeStatement(sql: sql)
        // Mark the (empty) arguments as bound: values are then bound below through the C API,
        // and `execute()` only resets the statement, which keeps bindings.
        statement.setUncheckedArguments(StatementArguments())
        return statement
    }

    /// SQLite refuses bindings on a statement stepped since its last reset; the reset's result
    /// repeats the last step's error, which that step already reported.
    private func reset(_ statement: Statement) {
        sqlite3_reset(statement.sqliteStatement)
    }

    /// Binds a value to a parameter (1-based) through SQLite's C API.
    static func bind(_ value: DatabaseValue, at index: Int, in statement: Statement) throws {
        let sqlite = statement.sqliteStatement
        let position = CInt(index)
        let code: CInt
        switch value.storage {
        case .null:
            code = sqlite3_bind_null(sqlite, position)
        case let .int64(integer):
            code = sqlite3_bind_int64(sqlite, position, integer)
        case let .double(double):
            code = sqlite3_bind_double(sqlite, position, double)
        case let .string(string):
            var string = string
            code = string.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) { text in
                    guard let base = text.baseAddress, !text.isEmpty else {
                        return sqlite3_bind_text(sqlite, position, "", 0, sqliteTransient)
                    }
                    return sqlite3_bind_text(sqlite, position, base, CInt(text.count), sqliteTransient)
                }
            }
        case let .blob(data):
            if data.isEmpty {
                code = sqlite3_bind_zeroblob(sqlite, position, 0)
            } else {
                code = data.withUnsafeBytes { bytes in
                    sqlite3_bind_blob(sqlite, position, bytes.baseAddress, CInt(bytes.count), sqliteTransient)
                }
            }
        }
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "binding parameter \(index) of \(statement.sql)")
        }
    }
}

/// SQLite copies the bytes of a value bound with this destructor.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

extension TableDescription {
    /// The uniqueness constraints as column indexes.
    var uniqueConstraintColumns: [[Int]] {
        uniqueConstraints.map { constraint in constraint.compactMap { name in columns.firstIndex { $0.name == name } } }
    }
}
