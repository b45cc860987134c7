import Foundation

/// How the server resolves concurrent writes to one entity's records.
public enum ConflictPolicy: String, Codable, Sendable, CaseIterable {
    /// Each field keeps the write with the latest (HLC stamp, client id). The default.
    case fieldLastWriterWins
    /// The latest write, by (HLC stamp, client id), decides every field it knows.
    case recordLastWriterWins
    /// A write based on an older version than the record's, changed since by another client,
    /// is rejected with both versions returned.
    case rejectStale
}

/// What happens to records that refer to a deleted one.
public enum SyncDeleteRule: String, Codable, Sendable {
    /// The reference becomes nil (the link is removed).
    case nullify
    /// The referring records are deleted too.
    case cascade
    /// The delete is refused while references exist.
    case deny
    /// Nothing: readers find the reference unresolved.
    case noAction
}

/// One field of a synced entity.
public struct FieldDescriptor: Hashable, Codable, Sendable {
    /// The field's sync name.
    public var name: SyncName
    /// Its kind (``SyncValueKind/reference`` for a to-one relationship).
    public var kind: SyncValueKind
    /// Whether it may be nil.
    public var optional: Bool
    /// For a reference, the entity it points at.
    public var destination: SyncName?
    /// For a reference, what happens to this record when the destination is deleted.
    public var deleteRule: SyncDeleteRule?
    /// How the field merges concurrent writes (nil: it is written whole). Encoded only when set,
    /// so the descriptor (and its hash) of an app without merged fields is unchanged.
    public var merge: MergeKind?

    /// Makes a field descriptor.
    public init(
        name: SyncName, kind: SyncValueKind, optional: Bool, destination: SyncName? = nil, deleteRule: SyncDeleteRule? = nil,
        merge: MergeKind? = nil
    ) {
        self.name = name
        self.kind = kind
        self.optional = optional
        self.destination = destination
        self.deleteRule = deleteRule
        self.merge = merge
    }
}

/// One to-many (link set) relationship of a synced entity.
public struct LinkDescriptor: Hashable, Codable, Sendable {
    /// The relationship's sync name.
    public var name: SyncName
    /// The entity its records belong to.
    public var destination: SyncName

    /// Makes a link descriptor.
    public init(name: SyncName, destination: SyncName) {
        self.name = name
        self.destination = destination
    }
}

/// One synced entity.
public struct EntityDescriptor: Hashable, Codable, Sendable {
    /// The entity's sync name.
    public var name: SyncName
    /// Its fields, sorted by name.
    public var fields: [FieldDescriptor]
    /// Its link sets, sorted by name.
    public var links: [LinkDescriptor]
    /// How concurrent writes are resolved.
    public var policy: ConflictPolicy

    /// Makes an entity descriptor.
    public init(name: SyncName, fields: [FieldDescriptor], links: [LinkDescriptor] = [], policy: ConflictPolicy = .fieldLastWriterWins) {
        self.name = name
        self.fields = fields.sorted { $0.name < $1.name }
        self.links = links.sorted { $0.name < $1.name }
        self.policy = policy
    }
}

/// The synced part of a client's schema: sync names, field kinds, references, delete rules
/// and policies. Travels with pushes so that the server knows what a field holds and what a
/// client of an older app version does not know.
public struct SchemaDescriptor: Hashable, Codable, Sendable {
    /// The entities, sorted by name.
    public var entities: [EntityDescriptor]

    /// Makes a descriptor.
    public init(entities: [EntityDescriptor]) {
        self.entities = entities.sorted { $0.name < $1.name }
    }

    /// The entity with a sync name.
    public func entity(named name: SyncName) -> EntityDescriptor? {
        entities.first { $0.name == name }
    }

    /// A stable 64-bit FNV-1a hash of the descriptor's canonical JSON, as 16 hex digits.
    public var hash: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = (try? encoder.encode(self)) ?? Data()
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            value ^= UInt64(byte)
            value = value &* 0x0000_0100_0000_01B3
        }
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
