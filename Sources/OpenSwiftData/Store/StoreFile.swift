import Foundation
import GRDB

/// Operations on a store file as a whole, outside any open container: its metadata, and copies
/// made with SQLite's online backup (consistent whatever sits in the write-ahead log).
enum StoreFile {
    /// The metadata entries of the store at `path` (empty when it has none).
    static func metadata(at path: String) throws -> [String: String] {
        var configuration = Configuration()
        configuration.readonly = true
        return try SQLiteStore.wrap("reading the metadata of \(path)") {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                guard try db.tableExists(SQLiteStore.metadataTable) else { return [:] }
                let rows = try Row.fetchAll(db, sql: "SELECT key, value FROM \(quoted(SQLiteStore.metadataTable))")
                return Dictionary(rows.map { ($0["key"] as String? ?? "", $0["value"] as String? ?? "") }, uniquingKeysWith: { $1 })
            }
        }
    }

    /// Sets (or, for nil, removes) metadata entries of the store at `path`, in one transaction.
    static func setMetadata(_ entries: [String: String?], at path: String) throws {
        try SQLiteStore.wrap("writing the metadata of \(path)") {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            try queue.write { db in
                for (key, value) in entries {
                    if let value {
                        try db.execute(sql: "INSERT OR REPLACE INTO \(quoted(SQLiteStore.metadataTable)) (key, value) VALUES (?, ?)", arguments: [key, value])
                    } else {
                        try db.execute(sql: "DELETE FROM \(quoted(SQLiteStore.metadataTable)) WHERE key = ?", arguments: [key])
                    }
                }
            }
        }
    }

    /// Replaces the contents of the database at `destination` with those of `source`.
    static func copy(from source: String, to destination: String) throws {
        try SQLiteStore.wrap("copying \(source) to \(destination)") {
            let from = try DatabaseQueue(path: source)
            defer { try? from.close() }
            let to = try DatabaseQueue(path: destination)
            defer { try? to.close() }
            try from.backup(to: to)
        }
    }
}
