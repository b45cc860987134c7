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

/// Primary keys as a JSON array (`[1,2,3]`): one statement argument however many keys, read in
/// SQL with `SELECT value FROM json_each(?)`.
func jsonKeyArray<S: Sequence>(_ keys: S) -> String where S.Element == Int64 {
    "[" + keys.map(String.init).joined(separator: ",") + "]"
}

extension ColumnDescription {
    /// The same column, allowing NULL.
    var nullable: ColumnDescription {
        ColumnDescription(
            name: name, type: type, isNullable: true, references: references, originalName: originalName, defaultValue: defaultValue,
            isExternal: isExternal)
    }

    /// The column's definition in `CREATE TABLE` or `ALTER TABLE … ADD COLUMN`, with an optional
    /// `DEFAULT` literal.
    func definition(defaultLiteral: String? = nil) -> String {
        var definition = "\(quoted(name)) \(type)\(isNullable ? "" : " NOT NULL")"
        if let target = references {
            // Checked at commit, so one save can write rows in any order; a row that goes
            // away leaves NULL behind (delete rules run in the context before that).
            definition += " REFERENCES \(quoted(target))(\(quoted(TableDescription.primaryKey))) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED"
        }
        if let defaultLiteral { definition += " DEFAULT \(defaultLiteral)" }
        return definition
    }
}

extension TableDescription {
    /// The statements that create the table and its indexes.
    var createStatements: [String] {
        var columnsSQL = ["\(quoted(Self.primaryKey)) INTEGER PRIMARY KEY"]
        columnsSQL += columns.map { $0.definition() }
        var statements = ["CREATE TABLE \(quoted(name)) (\(columnsSQL.joined(separator: ", "))) STRICT"]
        for (number, constraint) in uniqueConstraints.enumerated() {
            let indexName = "osd_\(name)_unique_\(number)"
            statements.append("CREATE UNIQUE INDEX \(quoted(indexName)) ON \(quoted(name)) (\(constraint.map(quoted).joined(separator: ", ")))")
        }
        for column in columns where column.references != nil {
            statements.append("CREATE INDEX \(quoted("osd_\(name)_fk_\(column.name)")) ON \(quoted(name)) (\(quoted(column.name)))")
        }
        for index in indexes {
            // Commas cannot occur in property names: `[a_b]` and `[a, b]` get different names.
            let indexName = "osd_\(name)_index_\(index.joined(separator: ","))"
            statements.append("CREATE INDEX IF NOT EXISTS \(quoted(indexName)) ON \(quoted(name)) (\(index.map(quoted).joined(separator: ", ")))")
        }
        return statements
    }
}

extension JoinTableDescription {
    /// The statements that create the join table and the index of its `target` column.
    var createStatements: [String] { createStatements(named: name) }

    /// The statements that create the join table under `tableName` (a rebuild creates it under a
    /// temporary name first) and the index of its `target` column, named after ``name``.
    func createStatements(named tableName: String) -> [String] {
        let source = quoted(Self.sourceColumn)
        let target = quoted(Self.targetColumn)
        let key = quoted(TableDescription.primaryKey)
        // A side that spans a class hierarchy holds keys of several tables: SQLite cannot check
        // it, and the save deletes its links itself (`DeletedReferences.clear(referencesTo:…)`).
        func references(_ table: String, spansHierarchy: Bool) -> String {
            spansHierarchy ? "" : " REFERENCES \(quoted(table))(\(key)) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED"
        }
        return [
            """
            CREATE TABLE \(quoted(tableName)) (\
            \(source) INTEGER NOT NULL\(references(sourceTable, spansHierarchy: sourceSpansHierarchy)), \
            \(target) INTEGER NOT NULL\(references(targetTable, spansHierarchy: targetSpansHierarchy)), \
            PRIMARY KEY (\(source), \(target))) STRICT, WITHOUT ROWID
            """,
            "CREATE INDEX \(quoted("osd_\(name)_target")) ON \(quoted(name)) (\(target), \(source))",
        ]
    }
}
