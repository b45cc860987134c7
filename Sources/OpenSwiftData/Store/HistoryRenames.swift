import Foundation
import GRDB

/// What a migration renamed, for reading the history written before it.
///
/// The history log keeps the names each save used. A migration that renames an entity
/// (`originalEntityName`) or a column (`originalName:`) records here the renames and the last
/// transaction written before it, so that older entries are read under the new names, and
/// only those: a name reused by a later version (a new property named like an old one, or
/// two properties swapping names) keeps its meaning in newer entries.
struct HistoryRenames: Codable, Equatable {
    /// The last history transaction written before the migration.
    var through: Int64
    /// Entities renamed, old name → new name.
    var entities: [String: String] = [:]
    /// Columns renamed, by the entity's new name, old name → new name.
    var properties: [String: [String: String]] = [:]

    /// The metadata key holding the renames of every migration, oldest first (a JSON array).
    static let metadataKey = "historyRenames"

    var isEmpty: Bool { entities.isEmpty && properties.isEmpty }

    /// The renames recorded by earlier migrations, in the order they ran; none for a store
    /// without any. An unreadable record is a typed error (`storeFailure`), never skipped:
    /// reading older entries under the wrong names, or writing over the record, would lose them.
    static func all(in db: Database) throws -> [HistoryRenames] {
        guard
            let json = try String.fetchOne(db, sql: "SELECT value FROM \(quoted(SQLiteStore.metadataTable)) WHERE key = ?", arguments: [metadataKey])
        else { return [] }
        do {
            return try JSONDecoder().decode([HistoryRenames].self, from: Data(json.utf8))
        } catch {
            throw SwiftDataError(
                .storeFailure, "the store's record of renamed entities and properties (metadata \(metadataKey)) cannot be read: \(error)")
        }
    }

    /// Appends these renames, placed after the log's last transaction, to the store's record.
    func append(in db: Database) throws {
        var renames = self
        let logged = try HistoryLog.exists(in: db) && db.tableExists("sqlite_sequence")
        renames.through =
            logged ? try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [HistoryLog.table]) ?? 0 : 0
        let all = try Self.all(in: db) + [renames]
        let json = String(decoding: try JSONEncoder().encode(all), as: UTF8.self)
        try db.execute(
            sql: "INSERT OR REPLACE INTO \(quoted(SQLiteStore.metadataTable)) (key, value) VALUES (?, ?)", arguments: [Self.metadataKey, json])
    }

    /// Renames the entity and property names of the records of entries written before each
    /// migration, in the order the migrations ran.
    static func apply(_ renames: [HistoryRenames], to entries: inout [HistoryEntry]) {
        guard !renames.isEmpty else { return }
        for index in entries.indices {
            let id = entries[index].id
            guard renames.contains(where: { id <= $0.through }) else { continue }
            var records = entries[index].records
            for position in records.indices {
                for step in renames where id <= step.through {
                    let entity = step.entities[records[position].entity] ?? records[position].entity
                    records[position].entity = entity
                    if let columns = step.properties[entity] {
                        records[position].names = records[position].names.map { columns[$0] ?? $0 }
                    }
                }
            }
            entries[index].records = records
        }
    }
}
