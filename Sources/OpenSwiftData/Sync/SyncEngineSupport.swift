import Foundation
import GRDB
import OpenSwiftDataSyncProtocol

// What the sync engine (the OpenSwiftDataSync module) needs from the store beyond capture and
// apply: its own statements in a store transaction, the shape of the synced entities, and the
// consumer cursor moved inside such a transaction. `package` API: visible to the package's own
// modules, never to an app.

/// One synced field of an entity, as capture records it.
package struct SyncEntityField: Sendable, Hashable {
    /// The property's name (its sync name).
    public var name: String
    /// What it holds.
    public var kind: SyncValueKind
    /// For a to-one relationship, the entity it points at.
    public var destination: String?
    /// Whether it may be nil.
    public var optional: Bool
    /// For a to-one relationship, what happens to this record when its destination is
    /// deleted: the delete rule of the destination's inverse relationship (nil: no inverse).
    public var destinationDeleteRule: Schema.Relationship.DeleteRule? = nil
    /// How it merges (nil: written whole).
    public var merge: MergeKind? = nil
    /// Whether its value is kept in a file beside the store (`.externalStorage`) on this device,
    /// so that it can hold a blob whose bytes follow.
    public var externalStorage = false
}

/// The synced shape of one entity: its fields and its many-to-many link sets.
package struct SyncEntityShape: Sendable, Hashable {
    /// The entity's name.
    public var name: String
    /// The synced column fields, in column order.
    public var fields: [SyncEntityField]
    /// The many-to-many relationships captured as links: name and destination entity.
    public var links: [(name: String, destination: String)] { zip(linkNames, linkDestinations).map { ($0, $1) } }
    var linkNames: [String]
    var linkDestinations: [String]

    /// The kind of a field (nil when the entity has no such synced field).
    public func kind(of field: String) -> SyncValueKind? { fields.first { $0.name == field }?.kind }

    /// A synced field by name (nil when the entity has no such synced field).
    public func field(_ name: String) -> SyncEntityField? { fields.first { $0.name == name } }

    /// Whether a field is a `.counter`.
    public func isCounter(_ field: String) -> Bool { fields.contains { $0.name == field && $0.merge == .counter } }

    /// Whether a field is a `.set`.
    public func isSet(_ field: String) -> Bool { fields.contains { $0.name == field && $0.merge == .set } }

    /// Whether a field is a `.text`.
    public func isText(_ field: String) -> Bool { fields.contains { $0.name == field && $0.merge == .text } }

    /// Whether the entity has a `.text` field.
    public var hasTexts: Bool { fields.contains { $0.merge == .text } }

    /// Whether a field merges, as a counter, a set or a text.
    public func isMerged(_ field: String) -> Bool { fields.contains { $0.name == field && $0.merge != nil } }
}

extension ModelContainer {
    /// The synced shape of an entity while capture is on (nil when the entity does not sync).
    package func syncEntityShape(_ entity: String) -> SyncEntityShape? {
        guard let plan = syncCapture?.plan(entity) else { return nil }
        var fields: [SyncEntityField] = []
        for (position, column) in plan.fieldColumns.enumerated() {
            var rule: Schema.Relationship.DeleteRule?
            if let relationship = plan.layout.columns[column].relationship, let inverse = relationship.inverseName {
                rule = layout(named: relationship.destinationName)?.relationships.first { $0.name == inverse }?.relationship?.deleteRule
            }
            fields.append(
                SyncEntityField(
                    name: plan.fieldNames[position], kind: plan.fieldKinds[position], destination: plan.fieldTargets[position],
                    optional: plan.layout.columns[column].codec.isOptional, destinationDeleteRule: rule,
                    merge: plan.counterColumns.contains(column)
                        ? .counter : plan.setColumns.contains(column) ? .set : plan.textColumns.contains(column) ? .text : nil,
                    externalStorage: plan.layout.columns[column].isExternallyStored
                ))
        }
        return SyncEntityShape(
            name: entity, fields: fields,
            linkNames: plan.links.map(\.name),
            linkDestinations: plan.links.map { $0.relationship?.destinationName ?? "" }
        )
    }

    /// Whether the container's schema has an entity of this name.
    package func hasEntity(named name: String) -> Bool { layout(named: name) != nil }

    /// Runs the sync engine's own statements in one write transaction of the store (committed
    /// when `body` returns, rolled back when it throws). Never captured: it writes no model rows.
    package func performSyncTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try store.write { db in try body(db) }
    }

    /// Reads through the store's connection.
    package func performSyncRead<T>(_ body: (Database) throws -> T) throws -> T {
        try store.read { db in try body(db) }
    }

    /// Moves a registered consumer's cursor forward inside the caller's transaction (never back).
    package static func advanceSyncConsumer(_ name: String, to sequence: Int64, in db: Database) throws {
        _ = try SyncLog.advance(consumer: name, to: sequence, in: db)
    }

    /// The log entries after `sequence` read inside the caller's transaction.
    package static func syncLogEntries(after sequence: Int64, limit: Int?, in db: Database) throws -> [SyncLogEntry] {
        try SyncLog.entries(after: sequence, limit: limit, in: db)
    }
}

/// One synced record known locally: its entity, id and the scope it was last captured or
/// applied with.
package struct SyncRecordEntry: Sendable, Hashable {
    /// The entity's name.
    public var entity: String
    /// The record's global id.
    public var recordID: String
    /// Its scope (nil: the user's private scope).
    public var scope: String?
}

extension ModelContainer {
    /// Every synced record that has a local row, read inside the caller's transaction.
    package static func syncRecordEntries(in db: Database) throws -> [SyncRecordEntry] {
        guard try SyncRecords.exist(in: db) else { return [] }
        // record_id holds UUID ids as 16 bytes and others as text (SyncRecords.storedID):
        // decoded here, and ordered after decoding.
        return try Row.fetchAll(
            db,
            sql: """
                SELECT e.name, r.record_id, r.scope FROM \(quoted(SyncRecords.table)) r \
                JOIN \(quoted(SyncRecords.entitiesTable)) e ON e.code = r.entity_code
                """
        ).compactMap { row -> SyncRecordEntry? in
            guard let recordID = SyncRecords.recordID(stored: row[1]) else { return nil }
            return SyncRecordEntry(entity: row[0], recordID: recordID, scope: row[2])
        }.sorted { ($0.entity, $0.recordID) < ($1.entity, $1.recordID) }
    }

    /// Applies changes like ``applyRemoteChanges(_:)`` but as an ordinary local save under
    /// `author`: captured into the sync log and pushed (the sync engine writes a conflict's
    /// resolution this way). Each change's `serverVersion` is kept as the record's base version.
    @discardableResult
    package func applyChangesAsLocalSave(_ batch: [RemoteRecordChange], author: String? = nil) throws -> RemoteApplyResult {
        guard let state = syncCapture else { throw SyncCaptureError.notEnabled }
        let context = ModelContext(self)
        context.author = author == state.engineAuthor ? nil : author
        var apply = RemoteApply(state: state, context: context)
        return try apply.run(batch)
    }
}

extension ModelContainer {
    /// A registered consumer's cursor read inside the caller's transaction (0 when not registered).
    package static func syncConsumerCursor(_ name: String, in db: Database) throws -> Int64 {
        try SyncLog.cursor(of: name, in: db) ?? 0
    }

    /// How many log entries come after `sequence`, read inside the caller's transaction.
    package static func syncLogCount(after sequence: Int64, in db: Database) throws -> Int {
        try SyncLog.count(after: sequence, in: db)
    }

    /// The sequence of the last log entry ever appended, read inside the caller's transaction.
    package static func lastSyncLogSequence(in db: Database) throws -> Int64 {
        try SyncLog.lastSequence(in: db)
    }
}
