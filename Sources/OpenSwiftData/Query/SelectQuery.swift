import GRDB

/// One `SELECT` over an entity's table, as SQL text and bound arguments.
struct SelectQuery {
    let sql: String
    let arguments: StatementArguments
}

/// One `ORDER BY` term: a column, reached through zero or more to-one relationships (each a
/// foreign-key column and the table it points at), and a direction.
struct OrderTerm {
    /// A step from one table to another through a foreign key.
    struct Hop: Hashable {
        let foreignKey: String
        let table: String
    }

    var hops: [Hop] = []
    let column: String
    let ascending: Bool
    /// The collation of a string sort (nil: SQLite's binary order, Swift's `<` on strings).
    var collation: String?
}

/// Builds the SQL of fetches from an entity's table and a descriptor's translatable parts.
enum SelectBuilder {
    /// The columns a fetch reads: the primary key, then every stored column in layout order.
    static func selectColumns(_ table: TableDescription) -> String {
        ([TableDescription.primaryKey] + table.columns.map(\.name)).map(quoted).joined(separator: ", ")
    }

    /// `SELECT _pk, columns… FROM table [joins] [WHERE …] ORDER BY … LIMIT … OFFSET …`; ties are
    /// broken by the primary key so that paging is stable. `columns` selects a subset (in that
    /// order) instead of every column.
    static func rows(
        _ table: TableDescription, columns: [String]? = nil, filter: PredicateSQL? = nil, order: [OrderTerm], limit: Int?, offset: Int?
    ) -> SelectQuery {
        let selected = columns.map { ([TableDescription.primaryKey] + $0).map(quoted).joined(separator: ", ") } ?? selectColumns(table)
        return select(selected, from: table, filter: filter, order: order, limit: limit, offset: offset)
    }

    /// `SELECT columns… FROM table WHERE _pk = ?`: the columns a partially loaded model lacks.
    static func columns(_ columns: [String], of table: TableDescription, primaryKey: Int64) -> SelectQuery {
        SelectQuery(
            sql: "SELECT \(columns.map(quoted).joined(separator: ", ")) FROM \(quoted(table.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?",
            arguments: [primaryKey]
        )
    }

    /// `SELECT _pk FROM table [joins] [WHERE …] ORDER BY … LIMIT … OFFSET …`.
    static func primaryKeys(_ table: TableDescription, filter: PredicateSQL? = nil, order: [OrderTerm], limit: Int?, offset: Int?) -> SelectQuery {
        select(quoted(TableDescription.primaryKey), from: table, filter: filter, order: order, limit: limit, offset: offset)
    }

    private static func select(
        _ columns: String, from table: TableDescription, filter: PredicateSQL?, order: [OrderTerm], limit: Int?, offset: Int?
    ) -> SelectQuery {
        // Sorting through to-one relationships joins their tables; with joins or a filter, the
        // entity's table is aliased `t` and its own columns qualified.
        let qualify = filter != nil || order.contains { !$0.hops.isEmpty }
        let (joinSQL, aliases) = orderJoins(order)
        let selected = qualify ? qualified(columns, alias: "t") : columns
        var sql = "SELECT \(selected) FROM \(quoted(table.name))" + (qualify ? " AS t" + (filter?.joins ?? "") + joinSQL : "")
        var arguments: [DatabaseValueConvertible] = []
        if let condition = filter?.condition {
            sql += " WHERE " + condition.sql
            arguments += condition.arguments.map { $0 as DatabaseValueConvertible }
        }
        let terms = order.map { term in
            let alias = term.hops.isEmpty ? (qualify ? "t." : "") : "\(aliases[term.hops] ?? "t")."
            let collation = term.collation.map { " COLLATE \($0)" } ?? ""
            return "\(alias)\(quoted(term.column))\(collation) \(term.ascending ? "ASC" : "DESC")"
        }
        // Ties are broken by the primary key, in the last term's direction, so that an index
        // on the last sort column (which ends with the primary key) serves the whole order.
        let tieBreak = (qualify ? "t." : "") + quoted(TableDescription.primaryKey) + (order.last?.ascending == false ? " DESC" : " ASC")
        sql += " ORDER BY " + (terms + [tieBreak]).joined(separator: ", ")
        sql += window(limit: limit, offset: offset, into: &arguments)
        return SelectQuery(sql: sql, arguments: StatementArguments(arguments))
    }

    /// The keys of the rows of several tables (a class's and its subclasses', one key space)
    /// that match, sorted and windowed together:
    /// `SELECT k, c FROM (SELECT t._pk AS k, 0 AS c, <sort columns> FROM A AS t … WHERE … UNION ALL
    /// SELECT …, 1, … FROM B …) ORDER BY <sort columns>, k LIMIT … OFFSET …`. `c` is the position
    /// of the row's part in `parts`. Each part's terms name the same columns (inherited ones, under
    /// the names the superclass gives them) in the same directions; ties go by primary key, which
    /// is unique across the tables.
    static func unionKeys(_ parts: [(table: TableDescription, filter: PredicateSQL?, order: [OrderTerm])], limit: Int?, offset: Int?) -> SelectQuery {
        var arguments: [DatabaseValueConvertible] = []
        var selects: [String] = []
        for (position, part) in parts.enumerated() {
            let (joinSQL, aliases) = orderJoins(part.order)
            let sortColumns = part.order.enumerated().map { index, term -> String in
                let alias = term.hops.isEmpty ? "t" : aliases[term.hops] ?? "t"
                return ", \(alias).\(quoted(term.column)) AS o\(index)"
            }.joined()
            var sql =
                "SELECT t.\(quoted(TableDescription.primaryKey)) AS k, \(position) AS c\(sortColumns) FROM \(quoted(part.table.name)) AS t"
                + (part.filter?.joins ?? "") + joinSQL
            if let condition = part.filter?.condition {
                sql += " WHERE " + condition.sql
                arguments += condition.arguments.map { $0 as DatabaseValueConvertible }
            }
            selects.append(sql)
        }
        let terms = (parts.first?.order ?? []).enumerated().map { index, term -> String in
            "o\(index)\(term.collation.map { " COLLATE \($0)" } ?? "") \(term.ascending ? "ASC" : "DESC")"
        }
        var sql = "SELECT k, c FROM (" + selects.joined(separator: " UNION ALL ") + ") ORDER BY " + (terms + ["k ASC"]).joined(separator: ", ")
        sql += window(limit: limit, offset: offset, into: &arguments)
        return SelectQuery(sql: sql, arguments: StatementArguments(arguments))
    }

    /// The `LEFT JOIN`s that sorting through to-one relationships needs, from the table aliased
    /// `t`, and the alias of each path of hops.
    private static func orderJoins(_ order: [OrderTerm]) -> (sql: String, aliases: [[OrderTerm.Hop]: String]) {
        var aliases: [[OrderTerm.Hop]: String] = [:]
        var joinSQL = ""
        for term in order {
            for length in term.hops.indices {
                let path = Array(term.hops[...length])
                guard aliases[path] == nil else { continue }
                let alias = "j\(aliases.count)"
                let previous = length == 0 ? "t" : aliases[Array(term.hops[..<length])] ?? "t"
                let hop = term.hops[length]
                joinSQL +=
                    " LEFT JOIN \(quoted(hop.table)) AS \(alias) ON \(alias).\(quoted(TableDescription.primaryKey)) = \(previous).\(quoted(hop.foreignKey))"
                aliases[path] = alias
            }
        }
        return (joinSQL, aliases)
    }

    /// `"a", "b"` → `t."a", t."b"`.
    private static func qualified(_ columns: String, alias: String) -> String {
        columns.components(separatedBy: ", ").map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    /// The rows whose primary key is in a JSON array of keys, in primary-key order.
    static func rows(_ table: TableDescription, primaryKeyIn keys: String) -> SelectQuery {
        rows(table, column: TableDescription.primaryKey, in: keys)
    }

    /// The rows whose column `column` holds one of the keys of a JSON array, in primary-key
    /// order (one query, one argument, however many keys).
    static func rows(_ table: TableDescription, column: String, in keys: String) -> SelectQuery {
        SelectQuery(
            sql:
                "SELECT \(selectColumns(table)) FROM \(quoted(table.name)) WHERE \(quoted(column)) IN (SELECT value FROM json_each(?)) ORDER BY \(quoted(TableDescription.primaryKey))",
            arguments: [keys]
        )
    }

    /// The rows whose foreign key `column` holds one of the keys of a JSON array, grouped by
    /// that key and in primary-key order within each group: the order the column's index gives,
    /// so SQLite sorts nothing (ordering all of them by primary key would sort every row).
    static func rows(_ table: TableDescription, groupedBy column: String, in keys: String) -> SelectQuery {
        SelectQuery(
            sql:
                "SELECT \(selectColumns(table)) FROM \(quoted(table.name)) WHERE \(quoted(column)) IN (SELECT value FROM json_each(?)) ORDER BY \(quoted(column)), \(quoted(TableDescription.primaryKey))",
            arguments: [keys]
        )
    }

    /// Every row whose foreign key `column` is set, in primary-key order (storage order: one
    /// pass over the table, no index lookups): the related rows of a whole table's models.
    static func rows(_ table: TableDescription, referencing column: String) -> SelectQuery {
        SelectQuery(
            sql:
                "SELECT \(selectColumns(table)) FROM \(quoted(table.name)) WHERE \(quoted(column)) IS NOT NULL ORDER BY \(quoted(TableDescription.primaryKey))",
            arguments: []
        )
    }

    /// One row by primary key.
    static func row(_ table: TableDescription, primaryKey: Int64) -> SelectQuery {
        SelectQuery(
            sql: "SELECT \(selectColumns(table)) FROM \(quoted(table.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?",
            arguments: [primaryKey]
        )
    }

    /// The rows whose column `column` holds `key` (the models whose foreign key points at one
    /// row), in primary-key order.
    static func rows(_ table: TableDescription, whereColumn column: String, equals key: Int64) -> SelectQuery {
        SelectQuery(
            sql:
                "SELECT \(selectColumns(table)) FROM \(quoted(table.name)) WHERE \(quoted(column)) = ? ORDER BY \(quoted(TableDescription.primaryKey))",
            arguments: [key]
        )
    }

    /// The rows a join table relates to one row (`key`, on the source side when `fromSource`),
    /// in primary-key order.
    static func rows(_ table: TableDescription, joinedThrough join: JoinTableDescription, fromSource: Bool, key: Int64) -> SelectQuery {
        let columns = ([TableDescription.primaryKey] + table.columns.map(\.name)).map { "t.\(quoted($0))" }.joined(separator: ", ")
        let near = quoted(fromSource ? JoinTableDescription.sourceColumn : JoinTableDescription.targetColumn)
        let far = quoted(fromSource ? JoinTableDescription.targetColumn : JoinTableDescription.sourceColumn)
        let primaryKey = quoted(TableDescription.primaryKey)
        return SelectQuery(
            sql:
                "SELECT \(columns) FROM \(quoted(table.name)) AS t JOIN \(quoted(join.name)) AS j ON j.\(far) = t.\(primaryKey) WHERE j.\(near) = ? ORDER BY t.\(primaryKey)",
            arguments: [key]
        )
    }

    /// `SELECT near, far FROM join WHERE near IN (json_each(?)) ORDER BY far`: the links of the
    /// models whose keys the JSON array argument holds, each as (own key, related key), in the
    /// related keys' order. `fromSource` says which column holds the models' own keys.
    static func joinPairs(_ join: JoinTableDescription, fromSource: Bool, in keys: String) -> SelectQuery {
        let near = quoted(fromSource ? JoinTableDescription.sourceColumn : JoinTableDescription.targetColumn)
        let far = quoted(fromSource ? JoinTableDescription.targetColumn : JoinTableDescription.sourceColumn)
        return SelectQuery(
            sql: "SELECT \(near), \(far) FROM \(quoted(join.name)) WHERE \(near) IN (SELECT value FROM json_each(?)) ORDER BY \(far)",
            arguments: [keys]
        )
    }

    /// `SELECT COUNT(*) FROM table [joins] [WHERE …]`.
    static func count(_ table: TableDescription, filter: PredicateSQL? = nil) -> SelectQuery {
        guard let filter else { return SelectQuery(sql: "SELECT COUNT(*) FROM \(quoted(table.name))", arguments: []) }
        var sql = "SELECT COUNT(*) FROM \(quoted(table.name)) AS t\(filter.joins)"
        if let condition = filter.condition { sql += " WHERE " + condition.sql }
        return SelectQuery(sql: sql, arguments: StatementArguments(filter.condition?.arguments ?? []))
    }

    private static func window(limit: Int?, offset: Int?, into arguments: inout [DatabaseValueConvertible]) -> String {
        guard limit != nil || offset != nil else { return "" }
        arguments.append(limit ?? -1)
        arguments.append(offset ?? 0)
        return " LIMIT ? OFFSET ?"
    }
}
