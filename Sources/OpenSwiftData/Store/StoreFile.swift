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
                        try db.execute(
                            sql: "INSERT OR REPLACE INTO \(quoted(SQLiteStore.metadataTable)) (key, value) VALUES (?, ?)", arguments: [key, value])
                    } else {
                        try db.execute(sql: "DELETE FROM \(quoted(SQLiteStore.metadataTable)) WHERE key = ?", arguments: [key])
                    }
                }
            }
        }
    }

    /// The metadata key of a store in the middle of a migration stage that runs code (see
    /// `MigrationRunner`), and the suffix of the copy made before it.
    static let stageMarkerKey = "migrationInProgress"
    static let stageBackupSuffix = "-stage-backup"

    private static let activeLock = NSLock()
    // Guarded by `activeLock`: the stores whose stage is running in this process right now.
    nonisolated(unsafe) private static var activeStages: Set<String> = []

    /// Marks the stage of the store at `path` as running here (its own opens must not treat
    /// the marker as a crash), or no longer running.
    static func setStageRunning(_ running: Bool, at path: String) {
        activeLock.withLock {
            if running { activeStages.insert(path) } else { activeStages.remove(path) }
        }
    }

    /// Whether a stage that runs code is running on the store at `path` in this process.
    static func isStageRunning(at path: String) -> Bool {
        activeLock.withLock { activeStages.contains(path) }
    }

    /// Puts back the copy made before a stage that did not complete because the process died:
    /// the store then is exactly at the version before that stage. Does nothing when no stage
    /// was interrupted, or when the stage is running in this process.
    static func recoverInterruptedStage(at path: String, readOnly: Bool) throws {
        guard !activeLock.withLock({ activeStages.contains(path) }),
            (try? metadata(at: path))?[stageMarkerKey] != nil
        else { return }
        let backup = path + stageBackupSuffix
        if readOnly {
            throw SwiftDataError(
                .loadIssueModelContainer,
                "the store at \(path) was left in the middle of a migration stage; open it once with allowsSave so that it can be put back")
        }
        guard FileManager.default.fileExists(atPath: backup) else {
            throw SwiftDataError(
                .loadIssueModelContainer,
                "the store at \(path) was left in the middle of a migration stage and its copy \(backup) is missing; restore the store from a backup")
        }
        try copy(from: backup, to: path)
        removeDatabase(at: backup)
    }

    /// Removes a database file and its write-ahead log files.
    static func removeDatabase(at path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
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
