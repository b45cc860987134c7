import GRDB

/// The record of the tables the store created in its file, and who owns each
/// (`osd_store_tables`). A migration consults it, and only it, to decide what it may drop.
///
/// The rule: **a migration drops only a table the store created for an entity or a
/// relationship that the new schema no longer has.** Every other table in the file is kept
/// byte for byte:
/// - the store's own metadata and history tables, and those a capture of the save pipeline
///   records under ``Owner/store`` (sync capture's log and records);
/// - the tables a component of the package registered through
///   ``ModelContainer/createComponentTables(_:owner:)`` (the sync engine's state, sent mutations
///   and shadows);
/// - any table the app made itself in the same file (a full-text index, a cache), which the
///   store never recorded.
///
/// Stores written before the record existed get it on their first open: the tables their
/// recorded layout names are taken as the store's entity and relationship tables, and nothing
/// else is, so an unknown table in such a file is kept too.
enum StoreTableRegistry {
    static let table = "osd_store_tables"

    /// Who owns a recorded table.
    enum Owner {
        /// An entity's rows: dropped when the entity leaves the schema.
        static let entity = "entity"
        /// A relationship's join table: dropped when the relationship leaves the schema.
        static let relationship = "relationship"
        /// The store's metadata, history and sequence tables, and a capture's: always kept.
        static let store = "store"

        /// Whether a migration may drop a table of this owner when the schema no longer names it.
        static func followsSchema(_ owner: String) -> Bool { owner == entity || owner == relationship }
    }

    static let createStatement = "CREATE TABLE IF NOT EXISTS \(quoted(table)) (\"name\" TEXT PRIMARY KEY NOT NULL, \"owner\" TEXT NOT NULL) STRICT"

    /// Whether the record exists (stores written by earlier versions have none).
    static func exists(in db: Database) throws -> Bool { try db.tableExists(table) }

    /// The recorded tables and their owners. For a store without the record, what it would hold:
    /// the tables the stored layout (`layoutFingerprint`) names, as entity and relationship
    /// tables, and the store's own tables.
    static func tables(in db: Database, layoutFingerprint: String?) throws -> [String: String] {
        if try exists(in: db) {
            let rows = try Row.fetchAll(db, sql: "SELECT name, owner FROM \(quoted(table))")
            return Dictionary(
                rows.map { ($0["name"] as String? ?? "", $0["owner"] as String? ?? Owner.store) }, uniquingKeysWith: { first, _ in first })
        }
        var tables: [String: String] = [:]
        for (name, owner) in Self.tables(namedBy: layoutFingerprint ?? "") { tables[name] = owner }
        for name in storeTables { tables[name] = Owner.store }
        return tables
    }

    /// The entity and relationship tables a layout fingerprint names (`table NAME(…)` and
    /// `join NAME(…)` lines; a Swift identifier holds no parenthesis).
    static func tables(namedBy fingerprint: String) -> [(name: String, owner: String)] {
        fingerprint.split(separator: "\n").compactMap { line -> (String, String)? in
            let owner: String
            let rest: Substring
            if line.hasPrefix("table ") {
                owner = Owner.entity
                rest = line.dropFirst(6)
            } else if line.hasPrefix("join ") {
                owner = Owner.relationship
                rest = line.dropFirst(5)
            } else {
                return nil
            }
            guard let open = rest.firstIndex(of: "("), open > rest.startIndex else { return nil }
            return (String(rest[..<open]), owner)
        }
    }

    /// The store's own tables, kept by every migration.
    static var storeTables: Set<String> {
        Set([SQLiteStore.metadataTable, table, StoreAttachments.pinsTable]).union(HistoryLog.tables)
    }

    /// Records `layout`'s tables as the store's entity and relationship tables (forgetting the
    /// ones it no longer has), and the store's own tables that exist, creating the record if
    /// needed. Runs in the caller's transaction: with the tables' creation, or with the
    /// migration that changed them.
    static func recordLayout(_ layout: StoreLayout, in db: Database) throws {
        try db.execute(sql: createStatement)
        let existing = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
        try db.execute(sql: "DELETE FROM \(quoted(table)) WHERE owner IN (?, ?)", arguments: [Owner.entity, Owner.relationship])
        for entity in layout.tables { try record(entity.name, owner: Owner.entity, in: db) }
        for join in layout.joinTables { try record(join.name, owner: Owner.relationship, in: db) }
        for name in storeTables where existing.contains(name) { try record(name, owner: Owner.store, in: db) }
    }

    /// Records one table under `owner` (replacing an earlier owner).
    static func record(_ name: String, owner: String, in db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO \(quoted(table)) (name, owner) VALUES (?, ?)", arguments: [name, owner])
    }
}

/// A table a component of the package (the sync engine) keeps in the app's store file: created
/// and recorded through the core, so that migrations keep it (see ``StoreTableRegistry``).
package struct StoreComponentTable: Sendable, Hashable {
    /// The table's name.
    package let name: String
    /// The statements that create it (and its indexes) when missing: `CREATE … IF NOT EXISTS`.
    package let createStatements: [String]

    /// A table named `name`, made by `createStatements` when missing.
    package init(name: String, createStatements: [String]) {
        self.name = name
        self.createStatements = createStatements
    }
}

extension ModelContainer {
    /// Creates a component's tables in the store when missing and records them under `owner`,
    /// in one transaction: from then on no migration drops or changes them, whatever the schema
    /// becomes. Refuses a name that is one of the store's own tables or one the schema uses.
    package func createComponentTables(_ tables: [StoreComponentTable], owner: String) throws {
        let reserved = StoreTableRegistry.storeTables.union(store.layout.tables.map(\.name)).union(store.layout.joinTables.map(\.name))
        if let clash = tables.first(where: { reserved.contains($0.name) }) {
            throw SwiftDataError(
                .storeFailure, "the table \(clash.name) that \(owner) keeps in the store has the name of one of the store's own tables")
        }
        try store.write { db in
            try db.execute(sql: StoreTableRegistry.createStatement)
            // A table recorded under another owner (a capture's, another component's) is theirs.
            let recorded = try StoreTableRegistry.tables(in: db, layoutFingerprint: nil)
            if let clash = tables.first(where: { recorded[$0.name].map { $0 != owner } ?? false }) {
                throw SwiftDataError(
                    .storeFailure,
                    "the table \(clash.name) that \(owner) keeps in the store is already kept by \(recorded[clash.name] ?? "another owner")")
            }
            for table in tables {
                for statement in table.createStatements { try db.execute(sql: statement) }
                try StoreTableRegistry.record(table.name, owner: owner, in: db)
            }
        }
    }
}
