import Foundation
import GRDB
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol

/// The simulated server: the real `SyncService` over the real SQLite storage in a file, which
/// the simulator restarts, snapshots, restores from an older snapshot and compacts.
final class SimServer {
    let path: String
    let clock: SimClock
    let configuration: SyncServiceConfiguration
    private(set) var storage: SQLiteSyncStorage
    private(set) var service: SyncService
    private var snapshot: String?
    /// A fixed cursor key, so that cursors are the same bytes in every run of a seed.
    private static let cursorKey = Data(repeating: 7, count: 32)

    init(directory: URL, clock: SimClock) async throws {
        path = directory.appendingPathComponent("server.sqlite").path
        self.clock = clock
        // A short retention: a compaction after two simulated minutes passes clients' cursors.
        configuration = SyncServiceConfiguration(retention: 60, policies: ["SimCounter": .rejectStale])
        storage = try SQLiteSyncStorage(path: path, cursorKey: Self.cursorKey)
        service = try await SyncService(storage: storage, configuration: configuration, now: { [clock] in clock.now() })
    }

    /// Closes and reopens the storage and the service (a server process restarted).
    func restart() async throws {
        try await storage.close()
        storage = try SQLiteSyncStorage(path: path, cursorKey: Self.cursorKey)
        service = try await SyncService(storage: storage, configuration: configuration, now: { [clock] in clock.now() })
    }

    /// Copies the database file aside (a backup); the later restore goes back to it.
    func takeSnapshot() async throws {
        try await storage.close()
        let copy = path + ".snapshot"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        snapshot = copy
        storage = try SQLiteSyncStorage(path: path, cursorKey: Self.cursorKey)
        service = try await SyncService(storage: storage, configuration: configuration, now: { [clock] in clock.now() })
    }

    var hasSnapshot: Bool { snapshot != nil }

    /// Replaces the database with the last snapshot (an operator's restore from backup). With
    /// `newEpoch`, the restore also gives the database a new epoch (as SYNC.md's restore
    /// expects, so that clients' cursors reset); without, it is a plain copy of the file.
    func restoreSnapshot(newEpoch: String?) async throws {
        guard let snapshot else { return }
        try await storage.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: snapshot, toPath: path)
        if let newEpoch {
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in try db.execute(sql: "UPDATE osd_metadata SET value = ? WHERE key = 'epoch'", arguments: [newEpoch]) }
            try queue.close()
        }
        storage = try SQLiteSyncStorage(path: path, cursorKey: Self.cursorKey)
        service = try await SyncService(storage: storage, configuration: configuration, now: { [clock] in clock.now() })
    }

    /// Compacts history older than the retention window.
    func compact() async throws -> CompactionResult {
        try await service.compact()
    }

    /// Reads the server's file directly (every commit is in it: the simulator is idle).
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(body)
    }
}
