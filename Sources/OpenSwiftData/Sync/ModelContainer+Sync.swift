import Foundation
import GRDB

extension ModelContainer {
    /// Turns sync capture on for the configuration's entities, from the next save on.
    ///
    /// Validates each entity's identity first: an entity that syncs has no uniqueness
    /// constraint (its records get UUIDs), or exactly one single-property unique attribute (its
    /// canonical text is the record id). Anything else throws
    /// ``SyncCaptureError/unsupportedIdentity(entity:reason:)`` and changes nothing. Then the
    /// store records that capture is on (its tables are created), so that a later open of the
    /// same store captures from its first save; until this is called again after such an open,
    /// changes are captured without scope rules (scope nil).
    package func enableSyncCapture(_ configuration: SyncCaptureConfiguration) throws {
        let state = try SyncCaptureState(configuration, container: self)
        try store.write { db in
            try SyncLog.enable(entities: configuration.entities.map(\.name), in: db)
            try SyncLog.recordMerges(configuration.merges, in: db)
        }
        setCaptureSource(state)
    }

    /// Sync capture, when it is on (see ``enableSyncCapture(_:)``).
    var syncCapture: SyncCaptureState? { captureSource(of: SyncCaptureState.self) }

    /// At open: a store on which capture was enabled captures from its first save: the entities
    /// are recorded in it; scope rules come back with the next ``enableSyncCapture(_:)``. Its
    /// capture tables are brought up to date first (``SyncLog/upgrade(in:)``).
    func resumeSyncCapture() throws {
        guard let names = try store.read({ db in try SyncLog.recordedEntities(in: db) }) else { return }
        if !store.isReadOnly, try store.read({ db in try SyncLog.needsUpgrade(in: db) }) {
            try store.write { db in try SyncLog.upgrade(in: db) }
        }
        let merges = try store.read { db in try SyncLog.recordedMerges(in: db) }
        let state = try? SyncCaptureState(SyncCaptureConfiguration(entityNames: names, merges: merges), container: self, lenient: true)
        setCaptureSource(state, of: SyncCaptureState.self)
    }

    /// Whether saves of this container capture synced changes.
    package var isSyncCaptureEnabled: Bool { syncCapture != nil }

    /// The author under which the sync engine writes (never captured), when capture is on.
    package var syncEngineAuthor: String? { syncCapture?.engineAuthor }

    // MARK: Reading the log

    /// The log entries after `sequence`, oldest first, at most `limit` of them. Each returns
    /// exactly what its save recorded, whatever happened to the rows since.
    package func syncLogEntries(after sequence: Int64 = 0, limit: Int? = nil) throws -> [SyncLogEntry] {
        try store.read { db in try SyncLog.entries(after: sequence, limit: limit, in: db) }
    }

    /// How many log entries come after `sequence`.
    package func syncLogCount(after sequence: Int64 = 0) throws -> Int {
        try store.read { db in try SyncLog.count(after: sequence, in: db) }
    }

    /// The sequence of the last entry ever appended (0 when none was).
    package func lastSyncLogSequence() throws -> Int64 {
        try store.read { db in try SyncLog.lastSequence(in: db) }
    }

    // MARK: Consumers

    /// Registers a consumer of the log (the sync engine's outbox reader) and returns its cursor
    /// (0 for a new one). ``pruneSyncLog(through:)`` never removes an entry a registered
    /// consumer has not read; the app's `deleteHistory` never touches the sync log at all.
    @discardableResult
    package func registerSyncConsumer(_ name: String) throws -> Int64 {
        try store.write { db in
            for statement in SyncLog.createStatements { try db.execute(sql: statement) }
            return try SyncLog.register(consumer: name, in: db)
        }
    }

    /// A registered consumer's cursor: the last sequence it has read (nil when not registered).
    package func syncConsumerCursor(_ name: String) throws -> Int64? {
        try store.read { db in try SyncLog.cursor(of: name, in: db) }
    }

    /// Records that a consumer has read the entries up to `sequence` (a cursor never moves
    /// back). Throws ``SyncCaptureError/unknownEntity(_:)`` naming the consumer when it is not
    /// registered.
    package func advanceSyncConsumer(_ name: String, to sequence: Int64) throws {
        let known = try store.write { db in try SyncLog.cursor(of: name, in: db) != nil && SyncLog.advance(consumer: name, to: sequence, in: db) }
        if !known { throw SyncCaptureError.unknownEntity("consumer \(name)") }
    }

    /// Forgets a consumer: pruning no longer waits for it.
    package func unregisterSyncConsumer(_ name: String) throws {
        try store.write { db in
            if try db.tableExists(SyncLog.consumersTable) { try SyncLog.unregister(consumer: name, in: db) }
        }
    }

    /// Deletes the log entries up to `sequence` that every registered consumer has read, and
    /// returns how many went. Sequences are never reused.
    @discardableResult
    package func pruneSyncLog(through sequence: Int64) throws -> Int {
        try store.write { db in try SyncLog.prune(through: sequence, in: db) }
    }

    // MARK: Clock

    /// The last hybrid-logical-clock stamp taken or received (0 before any).
    package func syncClockStamp() throws -> UInt64 {
        try store.read { db in try SyncLog.lastStamp(in: db) }
    }

    /// Advances the clock past a stamp received from elsewhere (a server response): every later
    /// save's stamp is greater. Returns the clock's stamp afterwards.
    @discardableResult
    package func advanceSyncClock(receivedStamp: UInt64) throws -> UInt64 {
        try store.write { db in
            for statement in SyncLog.createStatements { try db.execute(sql: statement) }
            try SyncLog.setLastStamp(receivedStamp, in: db)
            return try SyncLog.lastStamp(in: db)
        }
    }

    // MARK: Records

    /// The sync record id of a saved model's row (nil when the row has none).
    package func syncRecordID(for identifier: PersistentIdentifier) throws -> String? {
        guard let row = identifier.rowID else { return nil }
        return try store.read { db in
            guard try SyncRecords.exist(in: db) else { return nil }
            return try SyncRecords.record(entity: identifier.entityName, row: row, in: db)?.recordID
        }
    }

    /// The identifier of the local row of a record (nil when the record is not local).
    package func persistentIdentifier(forSyncRecord recordID: String, entity: String) throws -> PersistentIdentifier? {
        try store.read { db in
            guard try SyncRecords.exist(in: db), let row = try SyncRecords.row(entity: entity, recordID: recordID, in: db) else { return nil }
            return PersistentIdentifier(storeIdentifier: store.identifier, entityName: entity, key: .row(row))
        }
    }

    /// The server version last recorded for a local record (nil when never synced or not local).
    package func syncServerVersion(entity: String, recordID: String) throws -> Int64? {
        try store.read { db in
            guard try SyncRecords.exist(in: db), let row = try SyncRecords.row(entity: entity, recordID: recordID, in: db) else { return nil }
            return try SyncRecords.record(entity: entity, row: row, in: db)?.serverVersion
        }
    }

    /// How many references wait for a record that is not local yet.
    package func pendingSyncReferenceCount() throws -> Int {
        try store.read { db in try SyncRecords.pendingCount(in: db) }
    }
}
