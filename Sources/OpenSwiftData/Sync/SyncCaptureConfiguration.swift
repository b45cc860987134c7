import Foundation
import OpenSwiftDataSyncProtocol

/// Which entities of a container sync, how each record's scope is chosen, the clock that stamps
/// saves, and the author under which the sync engine writes (whose saves are not captured).
///
/// ```swift
/// var configuration = SyncCaptureConfiguration()
/// configuration.sync(Trip.self) { trip in "trip:\(trip.name)" }
/// configuration.sync(Note.self)              // the pushing user's private scope
/// try container.enableSyncCapture(configuration)
/// ```
package struct SyncCaptureConfiguration: Sendable {
    /// One synced entity and its scope rule.
    public struct Entity: Sendable {
        /// The entity's name.
        public let name: String
        /// The scope rule, erased: called with a model of the entity at save time, on the thread
        /// of the saving context.
        let scope: (@Sendable (any PersistentModel) -> String?)?
    }

    /// The synced entities, in the order they were added.
    public private(set) var entities: [Entity] = []
    /// The fields that merge instead of being written whole, by entity and property name. A
    /// save records a merged field's contribution (for a counter, the difference from the value
    /// the saving context had) instead of its value.
    public private(set) var merges: [String: [String: MergeKind]] = [:]
    /// The wall clock that hybrid-logical-clock stamps start from (a simulator injects its own).
    public var clock: @Sendable () -> Date
    /// The author of the sync engine's own writes: saves by a context with this author are not
    /// captured, so applied remote changes never echo back.
    public var engineAuthor: String
    /// Draws the replica that a container's saves edit merged texts as, once per enabling of
    /// capture (random by default; a simulator gives a seeded one, so that its runs replay).
    public var textReplica: @Sendable () -> UInt64 = { UInt64.random(in: 1...UInt64.max) }

    /// The author the sync engine writes under, unless configured otherwise.
    public static let defaultEngineAuthor = "OpenSwiftDataSync"

    /// An empty configuration with the system clock.
    public init(engineAuthor: String = SyncCaptureConfiguration.defaultEngineAuthor, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.engineAuthor = engineAuthor
        self.clock = clock
    }

    /// Adds a synced entity. `scope` is evaluated on the model each time a save captures a
    /// change of it; nil (or no rule) stands for the pushing user's private scope.
    public mutating func sync<T: PersistentModel>(_ type: T.Type, scope: (@Sendable (T) -> String?)? = nil) {
        let name = Schema.entityName(of: type)
        var erased: (@Sendable (any PersistentModel) -> String?)?
        if let scope {
            erased = { @Sendable (model: any PersistentModel) -> String? in
                guard let typed = model as? T else { return nil }
                return scope(typed)
            }
        }
        entities.removeAll { $0.name == name }
        entities.append(Entity(name: name, scope: erased))
    }

    /// Declares that a property of a synced entity merges as `kind`. Checked when capture is
    /// enabled: ``SyncCaptureError/mergeKindMismatch(entity:property:kind:reason:)`` for a kind
    /// that does not fit the property, ``SyncCaptureError/mergeNotSupported(entity:property:kind:)``
    /// for a kind not merged yet.
    public mutating func merge(entity: String, property: String, kind: MergeKind) {
        merges[entity, default: [:]][property] = kind
    }

    /// A configuration of entities without scope rules, with the system clock.
    public init(_ first: any PersistentModel.Type, _ more: any PersistentModel.Type...) {
        self.init(engineAuthor: SyncCaptureConfiguration.defaultEngineAuthor)
        for type in [first] + more { entities.append(Entity(name: Schema.entityName(of: type), scope: nil)) }
    }

    /// The names and merged fields only, as the store records them.
    init(entityNames: [String], merges: [String: [String: MergeKind]] = [:]) {
        self.init(engineAuthor: SyncCaptureConfiguration.defaultEngineAuthor)
        entities = entityNames.map { Entity(name: $0, scope: nil) }
        self.merges = merges
    }
}
