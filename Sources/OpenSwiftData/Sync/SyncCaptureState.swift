import Foundation

/// A container's sync capture while it is on: the configuration and each synced entity's plan.
/// Immutable; `enableSyncCapture` replaces it as a whole.
final class SyncCaptureState: Sendable {
    let configuration: SyncCaptureConfiguration
    let plans: [String: SyncEntityPlan]
    /// For each synced entity with synced subclasses: itself, then those subclasses (a table per
    /// concrete class, one key space per hierarchy, so a key or record of the entity may be a
    /// subclass's). Absent for an entity without synced subclasses.
    let members: [String: [String]]
    /// For each synced subclass: its synced ancestors, nearest first.
    let ancestors: [String: [String]]
    /// The store's files of `.externalStorage` values: capture pins the file of each reference
    /// it logs, until the engine has uploaded it.
    let attachments: StoreAttachments?
    /// The documents of merged texts, and the replica this container's saves edit them as.
    let texts: SyncTexts

    /// Validates the configuration against the container's entities. With `lenient`, entities
    /// the schema no longer has or whose identity no longer fits are left out instead of refused
    /// (a store reopened with a newer schema).
    init(_ configuration: SyncCaptureConfiguration, container: ModelContainer, lenient: Bool = false) throws {
        self.configuration = configuration
        self.attachments = container.store.attachments
        self.texts = SyncTexts(replica: configuration.textReplica())
        let names = Set(configuration.entities.map(\.name))
        if !lenient, let entity = configuration.merges.keys.sorted().first(where: { !names.contains($0) }) {
            throw SyncCaptureError.unknownEntity(entity)
        }
        var plans: [String: SyncEntityPlan] = [:]
        for entity in configuration.entities {
            guard let layout = container.layout(named: entity.name) else {
                if lenient { continue }
                throw SyncCaptureError.unknownEntity(entity.name)
            }
            do {
                try SyncEntityPlan.checkSharedInverses(of: layout, container: container, synced: names)
                plans[entity.name] = try SyncEntityPlan(
                    layout: layout, scope: entity.scope, synced: names, merges: configuration.merges[entity.name] ?? [:], lenient: lenient)
            } catch  where lenient {
                continue
            }
        }
        self.plans = plans
        var members: [String: [String]] = [:]
        var ancestors: [String: [String]] = [:]
        for (name, plan) in plans {
            let below = container.descendants(of: plan.layout).map(\.name).filter { plans[$0] != nil }
            if !below.isEmpty { members[name] = [name] + below }
            var above: [String] = []
            var layout = plan.layout.superLayout
            while let current = layout {
                if plans[current.name] != nil { above.append(current.name) }
                layout = current.superLayout
            }
            if !above.isEmpty { ancestors[name] = above }
        }
        self.members = members
        self.ancestors = ancestors
    }

    /// The entities a record of `entity` may be in: itself, then its synced subclasses.
    func memberEntities(of entity: String) -> [String] { members[entity] ?? [entity] }

    var engineAuthor: String { configuration.engineAuthor }

    func plan(_ entity: String) -> SyncEntityPlan? { plans[entity] }
}
