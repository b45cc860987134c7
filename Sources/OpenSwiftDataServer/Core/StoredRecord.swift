import Foundation
import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol

/// A record's identity on the server: entity and record id (across every scope).
package struct RecordKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The entity's sync name.
    package var entity: SyncName
    /// The record's id.
    package var recordID: RecordID

    /// Makes a key.
    package init(entity: SyncName, recordID: RecordID) {
        self.entity = entity
        self.recordID = recordID
    }

    package static func < (lhs: RecordKey, rhs: RecordKey) -> Bool {
        (lhs.entity, lhs.recordID) < (rhs.entity, rhs.recordID)
    }

    package var description: String { "\(entity) \(recordID.debugDescription)" }
}

/// One field as the server keeps it: the value, the kind the field holds, the write that set it
/// (stamp and client), which per-field last-writer-wins compares, and whether it merges.
package struct StoredField: Hashable, Sendable, Codable {
    /// The value.
    package var value: SyncValue
    /// The kind the field holds (kept when the value is nil).
    package var kind: SyncValueKind?
    /// The stamp of the write that set it.
    package var stamp: HLCTimestamp
    /// The client whose write set it.
    package var client: ClientID
    /// How the field merges, once a client's schema declared it (sticky: a client whose schema
    /// does not declare it, an older app, cannot overwrite the merged value unseen).
    package var merge: MergeKind?
    /// A merged set's tags (nil for other fields), from which `value` is computed.
    package var set: SetState?
    /// A merged text's state (``TextDocument/encoded()``; nil for other fields), whose text is
    /// `value`.
    package var text: Data?

    /// Makes a stored field.
    package init(
        value: SyncValue, kind: SyncValueKind?, stamp: HLCTimestamp, client: ClientID, merge: MergeKind? = nil, set: SetState? = nil,
        text: Data? = nil
    ) {
        self.value = value
        self.kind = kind
        self.stamp = stamp
        self.client = client
        self.merge = merge
        self.set = set
        self.text = text
    }

    private enum CodingKeys: String, CodingKey {
        case value = "v", kind = "k", stamp = "s", client = "c", merge = "m", set = "t", text = "x"
    }
}

/// One element of a to-many relationship: present or removed, with the write that decided it,
/// so that additions and removals from several devices merge element by element.
package struct StoredLink: Hashable, Sendable {
    /// Whether the target is linked.
    package var present: Bool
    /// The stamp of the write that decided it.
    package var stamp: HLCTimestamp
    /// The client whose write decided it.
    package var client: ClientID

    /// Makes a link element.
    package init(present: Bool, stamp: HLCTimestamp, client: ClientID) {
        self.present = present
        self.stamp = stamp
        self.client = client
    }
}

/// A record as the server stores it.
package struct StoredRecord: Hashable, Sendable {
    /// The entity's sync name.
    package var entity: SyncName
    /// The record's id.
    package var recordID: RecordID
    /// The scope it is in.
    package var scope: ScopeID
    /// The server version of its last change.
    package var version: ServerVersion
    /// Whether it is a tombstone.
    package var deleted: Bool
    /// Its fields.
    package var fields: [SyncName: StoredField]
    /// The latest write's stamp (record-level last-writer-wins compares it).
    package var stamp: HLCTimestamp
    /// The latest write's client.
    package var writer: ClientID
    /// Its to-many relationships' elements, by relationship and target.
    package var links: [SyncName: [RecordID: StoredLink]]

    /// Makes a stored record.
    package init(
        entity: SyncName, recordID: RecordID, scope: ScopeID, version: ServerVersion, deleted: Bool, fields: [SyncName: StoredField],
        stamp: HLCTimestamp, writer: ClientID, links: [SyncName: [RecordID: StoredLink]] = [:]
    ) {
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
    package var key: RecordKey { RecordKey(entity: entity, recordID: recordID) }

    /// The values of its fields.
    package var values: [SyncName: SyncValue] { fields.mapValues(\.value) }

    /// The targets present in each relationship, sorted; relationships without any are left out.
    package var presentLinks: [SyncName: [RecordID]] {
        var result: [SyncName: [RecordID]] = [:]
        for (name, elements) in links {
            let present = elements.filter(\.value.present).map(\.key).sorted()
            if !present.isEmpty { result[name] = present }
        }
        return result
    }

    /// The record as the protocol shows it.
    package var state: RecordState {
        RecordState(
            entity: entity, recordID: recordID, scope: scope, version: version, deleted: deleted, fields: deleted ? [:] : values,
            links: deleted ? [:] : presentLinks)
    }
}

/// A scope's owner and the users it was granted to, each with their role.
package struct ScopeRecord: Hashable, Sendable {
    /// The scope.
    package var scope: ScopeID
    /// Its owner.
    package var owner: String
    /// The users granted it, and what each may do.
    package var members: [String: ScopeGrantRole]

    /// Makes a scope record.
    package init(scope: ScopeID, owner: String, members: [String: ScopeGrantRole] = [:]) {
        self.scope = scope
        self.owner = owner
        self.members = members
    }

    /// Grants `member` the scope as `role`. The owner keeps owning it; a member granted again
    /// without a role keeps theirs, and a new one without a role is a writer (every grant was
    /// before roles).
    package mutating func grant(_ member: String, role: ScopeGrantRole?) {
        guard member != owner else { return }
        members[member] = role ?? members[member] ?? .writer
    }

    /// Every user who may read it: the owner and every member.
    package var readers: Set<String> { Set(members.keys).union([owner]) }

    /// The members granted it as writers, sorted.
    package var writerMembers: [String] { members.filter { $0.value == .writer }.map(\.key).sorted() }

    /// The members granted it as readers, sorted.
    package var readerMembers: [String] { members.filter { $0.value == .reader }.map(\.key).sorted() }

    /// The membership list the protocol answers with.
    package var response: ScopeMembersResponse {
        ScopeMembersResponse(scope: scope, owner: owner, members: writerMembers, readers: readerMembers)
    }
}

/// A client installation as the server knows it.
package struct ClientRecord: Hashable, Sendable {
    /// The client's id.
    package var clientID: ClientID
    /// The user it belongs to (the one who first pushed with it).
    package var user: String
    /// The last mutation id processed (applied or rejected).
    package var lastMutationID: MutationID
    /// The content hash of that mutation.
    package var lastHash: String
    /// The schema descriptor the client last sent, if any.
    package var schema: SchemaDescriptor?

    /// Makes a client record.
    package init(clientID: ClientID, user: String, lastMutationID: MutationID, lastHash: String, schema: SchemaDescriptor?) {
        self.clientID = clientID
        self.user = user
        self.lastMutationID = lastMutationID
        self.lastHash = lastHash
        self.schema = schema
    }
}

/// A processed mutation's answer, kept for the retention window so that a replayed batch is
/// answered the same without being applied again.
package struct StoredResult: Hashable, Sendable {
    /// The mutation's id.
    package var id: MutationID
    /// Its content hash.
    package var hash: String
    /// The answer given.
    package var result: MutationResult

    /// Makes a stored result.
    package init(id: MutationID, hash: String, result: MutationResult) {
        self.id = id
        self.hash = hash
        self.result = result
    }
}

/// One entry of the change log.
package struct LogEntry: Hashable, Sendable {
    /// Its sequence number (the record's version after it).
    package var seq: ServerVersion
    /// The sequence of the first entry of the same mutation: pages break only between
    /// different values.
    package var txn: ServerVersion
    /// The change, as pulls show it.
    package var change: PulledChange
    /// When it was written, in milliseconds since 1970 (from the injected clock).
    package var createdAt: Int64

    /// Makes a log entry.
    package init(seq: ServerVersion, txn: ServerVersion, change: PulledChange, createdAt: Int64) {
        self.seq = seq
        self.txn = txn
        self.change = change
        self.createdAt = createdAt
    }
}

extension ScopeGrantRole {
    /// A role as the `role` column of `osd_grants` holds it: a value this server does not know
    /// (written by a newer one) reads as a reader, the role that allows least.
    package init(stored: String) { self = ScopeGrantRole(rawValue: stored) ?? .reader }
}

extension StoredRecord {
    /// The blobs a live record's fields name (none for a tombstone), by digest.
    package var blobDigests: Set<String> { Set(blobReferences.map(\.digest)) }

    /// The blobs a live record's fields name, each with the client whose write set the field:
    /// a reference lets readers of the record read the blob only once that client's user has
    /// uploaded it (or proved they hold it), so that naming a digest is not a way to read it.
    package var blobReferences: [(digest: String, client: ClientID)] {
        guard !deleted else { return [] }
        var seen: Set<String> = []
        return fields.sorted { $0.key < $1.key }.compactMap { _, field in
            guard case .blob(let reference) = field.value, seen.insert(reference.digest).inserted else { return nil }
            return (reference.digest, field.client)
        }
    }
}
