import Foundation
import GRDB
import OpenSwiftDataServer

/// Backups, restores and epoch rotation of the SQLite storage: what `osd-server backup`,
/// `osd-server restore` and `osd-server epoch rotate` do.
///
/// A restored database holds less than the one clients last talked to; giving it a new epoch
/// makes every client's cursor from the old history a `reset: epochChanged`, on which the sync
/// engine resends what the copy lost. ``restore(backup:to:blobs:)`` does that itself;
/// ``rotateEpoch(databasePath:)`` is for a database put back by other means.
public enum SQLiteMaintenance {
    /// What a backup wrote.
    public struct BackupSummary: Sendable, Equatable {
        /// The backup file.
        public var path: String
        /// Its size in bytes.
        public var bytes: Int
        /// The epoch of the database when it was copied (the restore gives the copy a new one).
        public var epoch: String
        /// The log position the copy holds changes up to.
        public var head: Int64
        /// The blobs copied beside it (`<path>.blobs`).
        public var blobs: Int = 0
    }

    /// Copies the finished blobs of the folder `source` (a database's `.blobs`) into
    /// `destination`, leaving unfinished uploads out and blobs `destination` holds already as
    /// they are: as hard links when both are on one file system (a blob's file never changes),
    /// else as copies written under a temporary name. Returns how many it copied.
    static func copyBlobs(from source: String, to destination: String) throws -> Int {
        let files = FileManager.default
        guard let shards = try? files.contentsOfDirectory(atPath: source) else { return 0 }
        var copied = 0
        for shard in shards.sorted() where shard.count == 2 {
            let names = (try? files.contentsOfDirectory(atPath: source + "/" + shard)) ?? []
            try files.createDirectory(atPath: destination + "/" + shard, withIntermediateDirectories: true)
            for name in names.sorted() where name.count == 64 {
                let from = source + "/" + shard + "/" + name
                let to = destination + "/" + shard + "/" + name
                guard !files.fileExists(atPath: to) else { continue }
                do {
                    try files.linkItem(atPath: from, toPath: to)
                } catch {
                    let partial = to + ".partial-\(UUID().uuidString)"
                    try files.copyItem(atPath: from, toPath: partial)
                    try files.moveItem(atPath: partial, toPath: to)
                }
                copied += 1
            }
        }
        return copied
    }

    private static func failure(_ message: String) -> SyncServiceError {
        SyncServiceError(500, .internalError, message)
    }

    private static func configuration(readonly: Bool = false) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = readonly
        // A running server may hold the write lock for a moment; wait rather than fail.
        configuration.busyMode = .timeout(30)
        return configuration
    }

    /// The epoch and head of an osd-server database, or a failure naming what it is not.
    private static func describe(_ db: Database, path: String) throws -> (epoch: String, head: Int64) {
        guard try db.tableExists("osd_metadata"), try db.tableExists("osd_head"),
            let epoch = try String.fetchOne(db, sql: "SELECT CAST(value AS TEXT) FROM osd_metadata WHERE key = 'epoch'")
        else {
            throw failure("\(path) is not an osd-server database (it has no osd_metadata epoch)")
        }
        return (epoch, try Int64.fetchOne(db, sql: "SELECT seq FROM osd_head WHERE id = 1") ?? 0)
    }

    /// Copies the database at `databasePath` to a new file at `destination` while the server
    /// keeps serving: SQLite's online backup copies one consistent snapshot (every committed
    /// push up to a point, none in part), without stopping writers. The copy is one
    /// self-contained file (no `-wal`), written under a temporary name and renamed when
    /// complete. Refuses to overwrite an existing file. The server's blobs (`blobs`, by default
    /// `<databasePath>.blobs`) are copied beside the backup (`<destination>.blobs`), before the
    /// records and again after them, so every blob the copied records name and the server held
    /// is in it, whatever compaction deletes meanwhile.
    public static func backup(databasePath: String, to destination: String, blobs: String? = nil) throws -> BackupSummary {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw failure("there is no database at \(databasePath)")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw failure("\(destination) exists; back up to a new file")
        }
        let partial = destination + ".partial-\(UUID().uuidString)"
        let blobFolder = blobs ?? databasePath + ".blobs"
        do {
            var copiedBlobs = try copyBlobs(from: blobFolder, to: destination + ".blobs")
            let source = try DatabaseQueue(path: databasePath, configuration: configuration())
            let copy = try DatabaseQueue(path: partial, configuration: configuration())
            _ = try source.read { db in try describe(db, path: databasePath) }
            try source.backup(to: copy)
            let described = try copy.writeWithoutTransaction { db -> (epoch: String, head: Int64) in
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
                return try describe(db, path: destination)
            }
            try copy.close()
            try source.close()
            try FileManager.default.moveItem(atPath: partial, toPath: destination)
            let bytes = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int) ?? 0
            // The blobs again after the records: those finished while they were copied.
            copiedBlobs += try copyBlobs(from: blobFolder, to: destination + ".blobs")
            return BackupSummary(path: destination, bytes: bytes, epoch: described.epoch, head: described.head, blobs: copiedBlobs)
        } catch {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: partial + suffix) }
            throw error
        }
    }

    /// Installs the backup at `backup` as the database at `databasePath` (replacing what is
    /// there, or creating it) and gives it a new epoch, so that clients resend what the copy
    /// lost. The server must be stopped; the backup file is left as it was. The backup's blobs
    /// are copied into the server's (`blobs`, by default `<databasePath>.blobs`). Returns the
    /// backup's epoch and the new one.
    @discardableResult
    public static func restore(backup: String, to databasePath: String, blobs: String? = nil) throws -> EpochChange {
        guard FileManager.default.fileExists(atPath: backup) else {
            throw failure("there is no backup at \(backup)")
        }
        let source = try DatabaseQueue(path: backup, configuration: configuration(readonly: true))
        let previous = try source.read { db -> String in
            let check = try String.fetchAll(db, sql: "PRAGMA quick_check")
            guard check == ["ok"] else {
                throw failure("\(backup) is damaged: \(check.prefix(3).joined(separator: "; "))")
            }
            return try describe(db, path: backup).epoch
        }
        let target = try DatabaseQueue(path: databasePath, configuration: configuration())
        try source.backup(to: target)
        let current = UUID().uuidString
        try target.write { db in
            try db.execute(sql: "UPDATE osd_metadata SET value = ? WHERE key = 'epoch'", arguments: [current])
        }
        try target.close()
        try source.close()
        _ = try copyBlobs(from: backup + ".blobs", to: blobs ?? databasePath + ".blobs")
        return EpochChange(previous: previous, current: current)
    }

    /// Gives the database at `databasePath` a new epoch in place: for a database restored by
    /// other means (a file copy, a volume snapshot). The server must be stopped (it reads its
    /// epoch when it starts). Returns the old epoch and the new one.
    @discardableResult
    public static func rotateEpoch(databasePath: String) throws -> EpochChange {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw failure("there is no database at \(databasePath)")
        }
        let database = try DatabaseQueue(path: databasePath, configuration: configuration())
        let current = UUID().uuidString
        let previous = try database.write { db -> String in
            let previous = try describe(db, path: databasePath).epoch
            try db.execute(sql: "UPDATE osd_metadata SET value = ? WHERE key = 'epoch'", arguments: [current])
            return previous
        }
        try database.close()
        return EpochChange(previous: previous, current: current)
    }
}
