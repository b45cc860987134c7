import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol

/// Which models sync and how: each entity's scope rule and conflict policy.
///
/// ```swift
/// var configuration = SyncConfiguration()
/// configuration.sync(Folder.self)                                   // the user's private scope
/// configuration.sync(Note.self, scope: { note in note.folder.map { "folder:\($0.name)" } })
/// configuration.sync(Reading.self, policy: .rejectStale)
/// ```
public struct SyncConfiguration: Sendable {
    /// One synced model type.
    public struct Entity: Sendable {
        /// The entity's name (its sync name).
        public let name: String
        /// The conflict policy the engine declares to the server.
        public let policy: ConflictPolicy
        let scope: (@Sendable (any PersistentModel) -> String?)?
        let register: @Sendable (inout SyncCaptureConfiguration) -> Void
    }

    /// A field declared to merge (``merge(_:_:)``).
    public struct Merge: Sendable {
        /// The entity's name.
        public let entity: String
        /// The property's name (nil when the key path names no persisted property of the model).
        public let property: String?
        /// How it merges.
        public let kind: MergeKind
        /// The key path as written, for errors that cannot name the property.
        let keyPathDescription: String
    }

    /// The synced entities, in the order they were added.
    public private(set) var entities: [Entity] = []
    /// The fields that merge instead of being written whole, in the order they were declared.
    public private(set) var merges: [Merge] = []
    /// The most mutations sent in one push request.
    public var maxMutationsPerPush: Int = 100
    /// The most changes asked for in one pull page (each page of the log is applied in one
    /// transaction).
    public var pullPageSize: Int = 1000
    /// Whether the next pull page is asked for while the engine processes the current one
    /// (the server reads it meanwhile). Off, the engine makes one request at a time, strictly in
    /// turn with its own work, which a deterministic simulation may prefer.
    public var prefetchesPullPages: Bool = true
    /// The most records asked for in one page of a snapshot (a first download, a new scope, a
    /// reset), whose pages are staged and applied together; the server caps it.
    public var snapshotPageSize: Int = 10_000
    /// How many settled mutations the engine keeps after the server acknowledged them, to send
    /// them again if the server is restored from a backup older than they are. Older ones are
    /// reported as ``SyncEvent/lostInServerRestore(_:)`` when that happens.
    public var acknowledgedMutationRetention: Int = 1000
    /// Retry timing for failed requests.
    public var backoff = SyncBackoff()
    /// How often to pull while the live channel is down (stretched by backoff on failures).
    public var pollInterval: Duration = .seconds(30)

    /// An empty configuration.
    public init() {}

    /// Syncs a model type. `scope` picks each record's scope when it is saved (`"kind:id"`, for
    /// example `"folder:\(folder.id)"`); nil, or no rule, is the signed-in user's private scope.
    public mutating func sync<T: PersistentModel>(
        _ type: T.Type, policy: ConflictPolicy = .fieldLastWriterWins, scope: (@Sendable (T) -> String?)? = nil
    ) {
        let name = Schema.entityName(for: type)
        var erased: (@Sendable (any PersistentModel) -> String?)?
        if let scope {
            erased = { @Sendable (model: any PersistentModel) -> String? in
                guard let typed = model as? T else { return nil }
                return scope(typed)
            }
        }
        entities.removeAll { $0.name == name }
        entities.append(Entity(name: name, policy: policy, scope: erased, register: { capture in capture.sync(type, scope: scope) }))
    }

    /// Syncs a model type whose scope is the value of a key path (nil: the user's private scope).
    public mutating func sync<T: PersistentModel>(
        _ type: T.Type, policy: ConflictPolicy = .fieldLastWriterWins, scope keyPath: KeyPath<T, String?> & Sendable
    ) {
        sync(type, policy: policy, scope: { model in model[keyPath: keyPath] })
    }

    /// Declares that a property of a synced model merges concurrent writes instead of keeping
    /// the last one; the model's code stays plain SwiftData:
    ///
    /// ```swift
    /// configuration.sync(FAQEntity.self)
    /// configuration.merge(\FAQEntity.usageCount, .counter)
    /// ```
    ///
    /// A `.counter` (`Int`, `Int64`, `Double`, not optional) syncs each save's
    /// difference: the new value minus the value the saving context had read. Setting it
    /// outright (`unreadCount = 0` after reading 5) is a difference too (−5): a concurrent +1 on
    /// another device ends at 1. Every device shows the sum of all applied contributions, its
    /// own unpushed ones included.
    ///
    /// A `.set` (an array or a `Set` of `Codable & Hashable` elements, not optional) syncs the
    /// elements each save added and removed: concurrent adds are all kept, every remove of an
    /// element the device had seen applies, and an add concurrent with a remove wins. An
    /// array's order is the order in which the server took the adds, the same on every device.
    ///
    /// A `.text` (a `String`, not optional) syncs each save's edit: the characters it inserted
    /// and deleted, by identity, so that two devices editing the same text offline keep both
    /// edits. Text typed at the same place is kept whole, one run after the other, in the same
    /// order on every device; a deletion removes only what the device saw; a character made of
    /// several scalars (an emoji, a letter with its accent) is never split.
    ///
    /// ``SyncEngine/init(container:transport:user:configuration:)`` checks the declarations: a
    /// kind that does not fit the property throws
    /// ``SyncEngineError/mergeKindMismatch(entity:property:kind:reason:)`` naming it (`.counter`
    /// on a `Bool`, `.text` on an `Int`, `.set` on a `String`). An engine with merged fields
    /// speaks protocol version 2, and version 3 when a text merges.
    public mutating func merge<T: PersistentModel, V>(_ keyPath: KeyPath<T, V>, _ kind: MergeKind) {
        let entity = Schema.entityName(for: T.self)
        let property = T.schemaMetadata.first { $0.keypath == keyPath }?.name
        merges.removeAll { $0.entity == entity && $0.property != nil && $0.property == property }
        merges.append(Merge(entity: entity, property: property, kind: kind, keyPathDescription: "\(keyPath)"))
    }

    /// When the bytes of a synced `.externalStorage` property arrive on a device that did not
    /// save them (see ``attachments(_:download:)``).
    public enum AttachmentDownload: Sendable, Hashable {
        /// As soon as the record has arrived: the engine downloads them after each sync.
        case eager
        /// Only when asked for, with ``SyncEngine/downloadAttachment(_:of:)``; they may be
        /// evicted again with ``SyncEngine/evictAttachment(_:of:)``.
        case onDemand
    }

    /// The synced `.externalStorage` properties downloaded on demand, as `Entity.property`.
    private(set) var onDemandAttachments: Set<String> = []

    /// Says when the bytes of a synced `.externalStorage` property arrive on other devices:
    /// ``AttachmentDownload/eager`` (the default) or ``AttachmentDownload/onDemand``.
    ///
    /// ```swift
    /// configuration.sync(Photo.self)
    /// configuration.attachments(\Photo.original, download: .onDemand)
    /// ```
    ///
    /// The record arrives either way. Until its bytes do, the property reads as absent: `nil`,
    /// or an empty `Data` when it is not optional.
    public mutating func attachments<T: PersistentModel, V>(_ keyPath: KeyPath<T, V>, download: AttachmentDownload) {
        let entity = Schema.entityName(for: T.self)
        guard let property = T.schemaMetadata.first(where: { $0.keypath == keyPath })?.name else { return }
        switch download {
        case .eager: onDemandAttachments.remove(entity + "." + property)
        case .onDemand: onDemandAttachments.insert(entity + "." + property)
        }
    }

    /// The entity of a name, if it syncs.
    public func entity(named name: String) -> Entity? { entities.first { $0.name == name } }
}
