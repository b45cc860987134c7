import Foundation

/// Quotes an identifier for SQLite: `name` → `"name"`, doubling embedded quotes.
func quoted(_ identifier: String) -> String {
    var result = "\""
    for character in identifier {
        if character == "\"" { result.append("\"") }
        result.append(character)
    }
    result.append("\"")
    return result
}

extension TableDescription {
    /// The statements that create the table and its indexes.
    var createStatements: [String] {
        var columnsSQL = ["\(quoted(Self.primaryKey)) INTEGER PRIMARY KEY"]
        columnsSQL += columns.map { "\(quoted($0.name)) \($0.type)\($0.isNullable ? "" : " NOT NULL")" }
        var statements = ["CREATE TABLE \(quoted(name)) (\(columnsSQL.joined(separator: ", "))) STRICT"]
        for (number, constraint) in uniqueConstraints.enumerated() {
            let indexName = "osd_\(name)_unique_\(number)"
            statements.append("CREATE UNIQUE INDEX \(quoted(indexName)) ON \(quoted(name)) (\(constraint.map(quoted).joined(separator: ", ")))")
        }
        for index in indexes {
            let indexName = "osd_\(name)_index_\(index.joined(separator: "_"))"
            statements.append("CREATE INDEX IF NOT EXISTS \(quoted(indexName)) ON \(quoted(name)) (\(index.map(quoted).joined(separator: ", ")))")
        }
        return statements
    }
}
