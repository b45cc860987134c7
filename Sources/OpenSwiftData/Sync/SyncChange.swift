import Foundation

/// One record's change inside a sync log entry, as it was at save time.
package struct SyncChange: Sendable, Hashable {
    /// What happened to the record.
    public enum Kind: UInt8, Sendable, Hashable {
        /// A new record: `fields` holds every stored field as saved, `links` its many-to-many
        /// links.
        case insert = 1
        /// A changed record: `fields` holds the changed fields with their new values, `links`
        /// the links added and removed.
        case update = 2
        /// A deleted record: no fields.
        case delete = 3
    }

    /// What happened.
    public var kind: Kind
    /// The entity's name.
    public var entity: String
    /// The record's global id.
    public var recordID: String
    /// The record's scope, computed at save time (nil: the pushing user's private scope).
    public var scope: String?
    /// The server version the record had locally when the change was saved (nil: never synced).
    public var baseVersion: Int64?
    /// The fields: all of them for an insert, the changed ones for an update, none for a delete.
    public var fields: [SyncField]
    /// Many-to-many link additions and removals, per relationship.
    public var links: [SyncLinkChange]
    /// Merged fields' contributions, such a field not being in `fields`: an update's difference
    /// per `.counter` field it changed, and per `.set` field the JSON text of its ``SetChange``
    /// (`{"add": [...], "remove": [...]}`, kind `json`).
    public var counterDeltas: [SyncField]

    /// A change.
    public init(
        kind: Kind, entity: String, recordID: String, scope: String?, baseVersion: Int64?, fields: [SyncField] = [], links: [SyncLinkChange] = [],
        counterDeltas: [SyncField] = []
    ) {
        self.kind = kind
        self.entity = entity
        self.recordID = recordID
        self.scope = scope
        self.baseVersion = baseVersion
        self.fields = fields
        self.links = links
        self.counterDeltas = counterDeltas
    }

    /// The value of a field, when the change carries it.
    public func value(of field: String) -> SyncFieldValue? {
        fields.first { $0.name == field }?.value
    }
}

/// One entry of the sync log: the synced changes of one committed save.
package struct SyncLogEntry: Sendable, Hashable {
    /// The entry's position in the log: strictly increasing, never reused (also after pruning).
    public var sequence: Int64
    /// The save's hybrid-logical-clock stamp (see ``HybridLogicalClock``).
    public var stamp: UInt64
    /// The author of the context that saved.
    public var author: String?
    /// The wall-clock time of the save, from the capture's clock.
    public var timestamp: Date
    /// The changes, in the order the save wrote them (deletions, insertions, updates).
    public var changes: [SyncChange]
}
