import Foundation
import GRDB

/// The tables of one configuration of a container with several: in the file at `url`, or in
/// memory when `url` is nil.
struct StorePart: Sendable {
    /// Where the part's tables live; nil for an in-memory configuration.
    var url: URL?
    /// The part's tables and join tables.
    var layout: StoreLayout
    /// How the part's file migrates.
    var options: MigrationOptions
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
    /// SQLite attaches at most this many databases to a connection (`SQLITE_MAX_ATTACHED`).
    static let attachmentLimit = 10
    /// The metadata key that marks the file keeping a split container's history, keys and
    /// capture tables.
    static let containerMainKey = "containerMain"

    /// Opens (or creates) a store split across several files and in-memory databases, one per
    /// configuration, as one SQLite connection: one file is the main database and the others
    /// are attached to it.
    ///
    /// Each file is first opened alone with its own part of the layout, so that it is checked,
    /// created or migrated exactly as a single-configuration store is. The main database keeps
    /// what belongs to the whole container: the history log, the record of tables and sync's
    /// tables. It is the file that already keeps them (a store that grew a second
    /// configuration), else the first part on disk, else memory; two files that both keep them
    /// are refused. Each file keeps the key sequence of its own tables, so keys never repeat in
    /// a file whichever file is main. Table names are unique across parts, so every statement
    /// reaches its table without naming the database. One connection (a `DatabaseQueue`) serves
    /// every read and write, since an in-memory database is private to the connection that
    /// attached it; the files use a rollback journal while they are attached, so that a save
    /// that writes to several commits in all of them or in none.
    static func open(parts: [StorePart], layout: StoreLayout, schemaVersion: Schema.Version) throws -> SQLiteStore {
        guard parts.count - 1 <= attachmentLimit else {
            throw SwiftDataError(
                .loadIssueModelContainer, "a container takes at most \(attachmentLimit + 1) configurations, not \(parts.count)")
        }
        var identifiers: [Int: String] = [:]
        var keepers: [Int] = []
        var deferred: [String: Set<String>] = [:]
        for (index, part) in parts.enumerated() {
            guard let url = part.url else { continue }
            // Checked, created or migrated alone; its pool closes when `alone` goes.
            let alone = try open(at: url, layout: part.layout, schemaVersion: schemaVersion, readOnly: false, migration: part.options)
            deferred.merge(alone.deferredColumns) { $0.union($1) }
            identifiers[index] = alone.identifier
            if try alone.read({ db in try keepsContainerState(db) }) { keepers.append(index) }
        }
        if keepers.count > 1 {
            let files = keepers.compactMap { parts[$0].url?.path }.joined(separator: " and ")
            throw SwiftDataError(
                .loadIssueModelContainer,
                "\(files) each keep a container's history or sync state; a container with several configurations keeps it in one file")
        }
        let mainIndex = keepers.first ?? parts.firstIndex { $0.url != nil } ?? 0
        let main = parts[mainIndex]
        let identifier = identifiers[mainIndex] ?? UUID().uuidString
        let queue = try wrap("opening \(main.url?.path ?? "an in-memory store")") {
            if let url = main.url { return try DatabaseQueue(path: url.path, configuration: configuration(readOnly: false)) }
            return try DatabaseQueue(configuration: configuration(readOnly: false))
        }
        try wrap("preparing \(main.url?.path ?? "the in-memory store")") {
            if main.url == nil {
                try queue.write { db in try create(main.layout, identifier: identifier, version: schemaVersion, in: db) }
            } else {
                try queue.writeWithoutTransaction { db in useRollbackJournal("main", db) }
                try queue.write { db in
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO \(quoted(metadataTable)) (key, value) VALUES (?, '1')", arguments: [containerMainKey])
                }
            }
        }
        var partSequences: [String: String] = [:]
        for (index, part) in parts.enumerated() where index != mainIndex {
            let database = "osd_part_\(index)"
            let sequence = quoted(database) + "." + quoted(HistoryLog.sequenceTable)
            try wrap("attaching \(part.url?.path ?? "an in-memory database")") {
                try queue.writeWithoutTransaction { db in
                    try db.execute(sql: "ATTACH DATABASE ? AS \(quoted(database))", arguments: [part.url?.path ?? ":memory:"])
                    if part.url != nil { useRollbackJournal(database, db) }
                }
                guard part.url == nil else { return }
                try queue.write { db in
                    var statements = part.layout.tables.flatMap(\.createStatements) + part.layout.joinTables.flatMap(\.createStatements)
                    statements += HistoryLog.createStatements.filter { $0.contains(quoted(HistoryLog.sequenceTable)) }
                    for statement in statements { try db.execute(sql: qualified(statement, in: database)) }
                }
            }
            for table in part.layout.tables { partSequences[table.name] = sequence }
        }
        return SQLiteStore(
            writer: queue, identifier: identifier, layout: layout, isReadOnly: false, deferredColumns: deferred, partSequences: partSequences)
    }

    /// Switches an attached file from WAL to a rollback journal, with which SQLite commits a
    /// transaction over several files in all of them or in none. Another connection to the
    /// file (a second container on it) prevents the switch; the file then stays in WAL, and a
    /// save over several files commits in each in turn.
    private static func useRollbackJournal(_ database: String, _ db: Database) {
        _ = try? String.fetchOne(db, sql: "PRAGMA \(quoted(database)).journal_mode = DELETE")
    }

    /// Whether a file keeps what belongs to a whole container: it was a split container's main
    /// file, its history log has entries, or a capture or a component recorded tables in it.
    private static func keepsContainerState(_ db: Database) throws -> Bool {
        let marked = try String.fetchOne(db, sql: "SELECT value FROM \(quoted(metadataTable)) WHERE key = ?", arguments: [containerMainKey])
        if marked != nil { return true }
        if try HistoryLog.exists(in: db), try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(HistoryLog.table)))") == true {
            return true
        }
        let recorded = try StoreTableRegistry.tables(in: db, layoutFingerprint: nil)
        return recorded.contains { name, owner in
            !StoreTableRegistry.Owner.followsSchema(owner) && !StoreTableRegistry.storeTables.contains(name)
        }
    }

    /// A `CREATE TABLE` or `CREATE INDEX` statement that creates its table or index in
    /// `database`: the first quoted name in these statements is the one created.
    private static func qualified(_ statement: String, in database: String) -> String {
        guard let quote = statement.firstIndex(of: "\"") else { return statement }
        return String(statement[..<quote]) + quoted(database) + "." + String(statement[quote...])
    }
}
