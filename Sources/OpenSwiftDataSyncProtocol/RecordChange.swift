import Foundation

/// What a change does to a record.
public enum RecordOperation: String, Codable, Sendable, CaseIterable {
    /// Creates the record, or starts a new life for a deleted one: every field and link comes
    /// from the change (fields it leaves out are nil, links it leaves out are empty).
    case insert
    /// Changes the fields and links the change names; the others keep their values.
    case update
    /// Deletes the record (a tombstone stays on the server for the retention window).
    case delete
}

/// Additions to and removals from a to-many relationship's set of related records. Two
/// devices that each add a tag both keep theirs: links merge by addition and removal, never by
/// overwriting the whole set.
public struct LinkChange: Hashable, Codable, Sendable {
    /// Records linked by this change.
    public var added: [RecordID]
    /// Records unlinked by this change.
    public var removed: [RecordID]

    /// Makes a link change.
    public init(added: [RecordID] = [], removed: [RecordID] = []) {
        self.added = added
        self.removed = removed
    }

    /// Whether the change links or unlinks nothing.
    public var isEmpty: Bool { added.isEmpty && removed.isEmpty }
}

/// One record's change inside a client's mutation.
///
/// ```json
/// {"op": "update", "entity": "Note", "recordID": "6F1C…", "scope": "user:alice",
///  "baseVersion": 41, "fields": {"title": {"t": "string", "v": "Groceries"}},
///  "links": {"tags": {"added": ["work"], "removed": []}}}
/// ```
public struct RecordChange: Hashable, Codable, Sendable {
    /// What the change does.
    public var op: RecordOperation
    /// The entity's sync name.
    public var entity: SyncName
    /// The record's id.
    public var recordID: RecordID
    /// The scope the record belongs to after this change. For an update whose scope differs
    /// from the record's scope on the server, the record moves (authorized in both scopes).
    public var scope: ScopeID
    /// The server version of the record this change was based on (the last one the client had
    /// seen), or nil when the client never had it from the server.
    public var baseVersion: ServerVersion?
    /// The fields set, by sync name. Empty for a delete.
    public var fields: [SyncName: SyncValue]
    /// To-many relationships' link changes, by sync name.
    public var links: [SyncName: LinkChange]
    /// The contributions to merged fields (protocol version 2), by sync name: a field named here
    /// is not in ``fields``. The server applies each to the field's current value.
    public var merge: [SyncName: FieldMerge]

    /// Makes a change.
    public init(
        op: RecordOperation, entity: SyncName, recordID: RecordID, scope: ScopeID, baseVersion: ServerVersion? = nil,
        fields: [SyncName: SyncValue] = [:], links: [SyncName: LinkChange] = [:], merge: [SyncName: FieldMerge] = [:]
    ) {
        self.op = op
        self.entity = entity
        self.recordID = recordID
        self.scope = scope
        self.baseVersion = baseVersion
        self.fields = fields
        self.links = links
        self.merge = merge
    }

    private enum CodingKeys: String, CodingKey { case op, entity, recordID, scope, baseVersion, fields, links, merge }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        op = try container.decode(RecordOperation.self, forKey: .op)
        entity = try container.decode(SyncName.self, forKey: .entity)
        recordID = try container.decode(RecordID.self, forKey: .recordID)
        scope = try container.decode(ScopeID.self, forKey: .scope)
        baseVersion = try container.decodeIfPresent(ServerVersion.self, forKey: .baseVersion)
        fields = try container.decodeIfPresent([SyncName: SyncValue].self, forKey: .fields) ?? [:]
        links = try container.decodeIfPresent([SyncName: LinkChange].self, forKey: .links) ?? [:]
        merge = try container.decodeIfPresent([SyncName: FieldMerge].self, forKey: .merge) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(op, forKey: .op)
        try container.encode(entity, forKey: .entity)
        try container.encode(recordID, forKey: .recordID)
        try container.encode(scope, forKey: .scope)
        try container.encodeIfPresent(baseVersion, forKey: .baseVersion)
        if !fields.isEmpty { try container.encode(fields, forKey: .fields) }
        if !links.isEmpty { try container.encode(links, forKey: .links) }
        if !merge.isEmpty { try container.encode(merge, forKey: .merge) }
    }
}

/// One local save's synced changes: the unit the server applies exactly once, atomically, in
/// the client's order.
public struct Mutation: Hashable, Codable, Sendable {
    /// The mutation's number within its client: exactly one more than the previous one.
    public var id: MutationID
    /// The hybrid-logical-clock time of the save, taken in the save's own transaction.
    public var stamp: HLCTimestamp
    /// The records the save changed, in the order it changed them.
    public var changes: [RecordChange]

    /// Makes a mutation.
    public init(id: MutationID, stamp: HLCTimestamp, changes: [RecordChange]) {
        self.id = id
        self.stamp = stamp
        self.changes = changes
    }
}
