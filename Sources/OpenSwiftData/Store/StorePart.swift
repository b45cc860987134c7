import Foundation
import GRDB

/// The tables of one configuration of a container with several: in the file at `url`, or in
/// memory when `url` is nil.
struct StorePart: Sendable {
    /// Where the part's tables live; nil for an in-memory configuration.
    var url: URL?
    /// The part's tables and join tables.
    var layout: StoreLayout
}

extension StoreLayout {
    /// The tables named in `tables`, and the join tables between them.
    func restricted(to tables: Set<String>) -> StoreLayout {
        StoreLayout(
            tables: self.tables.filter { tables.contains($0.name) },
            joinTables: joinTables.filter { tables.contains($0.sourceTable) && tables.contains($0.targetTable) })
    }
}

extension SQLiteStore {
    /// Opens (or creates) a store split across several files and in-memory databases, one per
    /// configuration, as one SQLite connection: the first part on disk is the main database
    /// (in memory when every part is), and the others are attached to it.
    ///
    /// Each file is first opened alone with its own part of the layout, so that it is checked,
    /// created or migrated exactly as a single-configuration store is. The main database then
    /// keeps what belongs to the whole container: the history log, the key sequences of every
    /// part's tables, the record of tables and sync's tables. Table names are unique across
    /// parts, so every statement reaches its table without naming the database. One
    /// connection (a `DatabaseQueue`) serves every read and write: an in-memory database is
    /// private to the connection that attached it. A save that writes to several files commits
    /// them one after the other, as SQLite does for attached databases in WAL mode.
    static func open(
        parts: [StorePart], layout: StoreLayout, schemaVersion: Schema.Version, migration options: MigrationOptions
    ) throws -> SQLiteStore {
        let mainIndex = parts.firstIndex { $0.url != nil } ?? 0
        var identifier = UUID().uuidString
        var deferred: [String: Set<String>] = [:]
        for (index, part) in parts.enumerated() {
            guard let url = part.url else { continue }
            // Checked, created or migrated alone; its pool closes when `alone` goes.
            let alone = try open(at: url, layout: part.layout, schemaVersion: schemaVersion, readOnly: false, migration: options)
            deferred.merge(alone.deferredColumns) { $0.union($1) }
            if index == mainIndex { identifier = alone.identifier }
        }
        let main = parts[mainIndex]
        let queue = try wrap("opening \(main.url?.path ?? "an in-memory store")") {
            if let url = main.url { return try DatabaseQueue(path: url.path, configuration: configuration(readOnly: false)) }
            return try DatabaseQueue(configuration: configuration(readOnly: false))
        }
        if main.url == nil {
            try wrap("creating the in-memory store's tables") {
                try queue.write { db in try create(main.layout, identifier: identifier, version: schemaVersion, in: db) }
            }
        }
        for (index, part) in parts.enumerated() where index != mainIndex {
            let database = "osd_part_\(index)"
            let place = part.url?.path ?? "an in-memory database"
            try wrap("attaching \(place)") {
                try queue.writeWithoutTransaction { db in
                    try db.execute(sql: "ATTACH DATABASE ? AS \(quoted(database))", arguments: [part.url?.path ?? ":memory:"])
                }
                try queue.write { db in
                    if part.url == nil {
                        let statements = part.layout.tables.flatMap(\.createStatements) + part.layout.joinTables.flatMap(\.createStatements)
                        for statement in statements { try db.execute(sql: qualified(statement, in: database)) }
                    }
                    // Keys go on after the part's rows, whichever main database saw it last.
                    for table in part.layout.tables { try HistoryLog.raisePrimaryKeySequence(of: table.name, in: db) }
                }
            }
        }
        return SQLiteStore(writer: queue, identifier: identifier, layout: layout, isReadOnly: false, deferredColumns: deferred)
    }

    /// A `CREATE TABLE` or `CREATE INDEX` statement that creates its table or index in
    /// `database`: the first quoted name in these statements is the one created.
    private static func qualified(_ statement: String, in database: String) -> String {
        guard let quote = statement.firstIndex(of: "\"") else { return statement }
        return String(statement[..<quote]) + quoted(database) + "." + String(statement[quote...])
    }
}
