import OpenSwiftDataSyncProtocol

/// A record's identity on the server: entity and record id (across every scope).
public struct RecordKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The entity's sync name.
    public var entity: SyncName
    /// The record's id.
    public var recordID: RecordID

    /// Makes a key.
    public init(entity: SyncName, recordID: RecordID) {
        self.entity = entity
        self.recordID = recordID
    }

    public static func < (lhs: RecordKey, rhs: RecordKey) -> Bool {
        (lhs.entity, lhs.recordID) < (rhs.entity, rhs.recordID)
    }

    public var description: String { "\(entity) \(recordID.debugDescription)" }
}

/// One field as the server keeps it: the value, the kind the field holds, and the write that
/// set it (stamp and client), which per-field last-writer-wins compares.
public struct StoredField: Hashable, Sendable, Codable {
    /// The value.
    public var value: SyncValue
    /// The kind the field holds (kept when the value is nil).
    public var kind: SyncValueKind?
    /// The stamp of the write that set it.
    public var stamp: HLCTimestamp
    /// The client whose write set it.
    public var client: ClientID

    /// Makes a stored field.
    public init(value: SyncValue, kind: SyncValueKind?, stamp: HLCTimestamp, client: ClientID) {
        self.value = value
        self.kind = kind
        self.stamp = stamp
        self.client = client
    }

    private enum CodingKeys: String, CodingKey {
        case value = "v", kind = "k", stamp = "s", client = "c"
    }
}

/// One element of a to-many relationship: present or removed, with the write that decided it,
/// so that additions and removals from several devices merge element by element.
public struct StoredLink: Hashable, Sendable {
    /// Whether the target is linked.
    public var present: Bool
    /// The stamp of the write that decided it.
    public var stamp: HLCTimestamp
    /// The client whose write decided it.
    public var client: ClientID

    /// Makes a link element.
    public init(present: Bool, stamp: HLCTimestamp, client: ClientID) {
        self.present = present
        self.stamp = stamp
        self.client = client
    }
}

/// A record as the server stores it.
public struct StoredRecord: Hashable, Sendable {
    /// The entity's sync name.
    public var entity: SyncName
    /// The record's id.
    public var recordID: RecordID
    /// The scope it is in.
    public var scope: ScopeID
    /// The server version of its last change.
    public var version: ServerVersion
    /// Whether it is a tombstone.
    public var deleted: Bool
    /// Its fields.
    public var fields: [SyncName: StoredField]
    /// The latest write's stamp (record-level last-writer-wins compares it).
    public var stamp: HLCTimestamp
    /// The latest write's client.
    public var writer: ClientID
    /// Its to-many relationships' elements, by relationship and target.
    public var links: [SyncName: [RecordID: StoredLink]]

    /// Makes a stored record.
    public init(entity: SyncName, recordID: RecordID, scope: ScopeID, version: ServerVersion, deleted: Bool, fields: [SyncName: StoredField], stamp: HLCTimestamp, writer: ClientID, links: [SyncName: [RecordID: StoredLink]] = [:]) {
        self.entity = entity
        self.recordID = recordID
        self.scope = scope
        self.version = version
        self.deleted = deleted
        self.fields = fields
        self.stamp = stamp
        self.writer = writer
        self.links = links
    }

    /// The record's key.
    public var key: RecordKey { RecordKey(entity: entity, recordID: recordID) }

    /// The values of its fields.
    public var values: [SyncName: SyncValue] { fields.mapValues(\.value) }

    /// The targets present in each relationship, sorted; relationships without any are left out.
    public var presentLinks: [SyncName: [RecordID]] {
        var result: [SyncName: [RecordID]] = [:]
        for (name, elements) in links {
            let present = elements.filter(\.value.present).map(\.key).sorted()
            if !present.isEmpty { result[name] = present }
        }
        return result
    }

    /// The record as the protocol shows it.
    public var state: RecordState {
        RecordState(entity: entity, recordID: recordID, scope: scope, version: version, deleted: deleted, fields: deleted ? [:] : values, links: deleted ? [:] : presentLinks)
    }
}

/// A scope's owner and the users it was granted to.
public struct ScopeRecord: Hashable, Sendable {
    /// The scope.
    public var scope: ScopeID
    /// Its owner.
    public var owner: String
    /// The users granted it.
    public var members: Set<String>

    /// Makes a scope record.
    public init(scope: ScopeID, owner: String, members: Set<String> = []) {
        self.scope = scope
        self.owner = owner
        self.members = members
    }

    /// Every user who may read and write it.
    public var readers: Set<String> { members.union([owner]) }
}

/// A client installation as the server knows it.
public struct ClientRecord: Hashable, Sendable {
    /// The client's id.
    public var clientID: ClientID
    /// The user it belongs to (the one who first pushed with it).
    public var user: String
    /// The last mutation id processed (applied or rejected).
    public var lastMutationID: MutationID
    /// The content hash of that mutation.
    public var lastHash: String
    /// The schema descriptor the client last sent, if any.
    public var schema: SchemaDescriptor?

    /// Makes a client record.
    public init(clientID: ClientID, user: String, lastMutationID: MutationID, lastHash: String, schema: SchemaDescriptor?) {
        self.clientID = clientID
        self.user = user
        self.lastMutationID = lastMutationID
        self.lastHash = lastHash
        self.schema = schema
    }
}

/// A processed mutation's answer, kept for the retention window so that a replayed batch is
/// answered the same without being applied again.
public struct StoredResult: Hashable, Sendable {
    /// The mutation's id.
    public var id: MutationID
    /// Its content hash.
    public var hash: String
    /// The answer given.
    public var result: MutationResult

    /// Makes a stored result.
    public init(id: MutationID, hash: String, result: MutationResult) {
        self.id = id
        self.hash = hash
        self.result = result
    }
}

/// One entry of the change log.
public struct LogEntry: Hashable, Sendable {
    /// Its sequence number (the record's version after it).
    public var seq: ServerVersion
    /// The sequence of the first entry of the same mutation: pages break only between
    /// different values.
    public var txn: ServerVersion
    /// The change, as pulls show it.
    public var change: PulledChange
    /// When it was written, in milliseconds since 1970 (from the injected clock).
    public var createdAt: Int64

    /// Makes a log entry.
    public init(seq: ServerVersion, txn: ServerVersion, change: PulledChange, createdAt: Int64) {
        self.seq = seq
        self.txn = txn
        self.change = change
        self.createdAt = createdAt
    }
}
