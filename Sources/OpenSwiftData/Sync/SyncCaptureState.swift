import Foundation

/// A container's sync capture while it is on: the configuration and each synced entity's plan.
/// Immutable; `enableSyncCapture` replaces it as a whole.
final class SyncCaptureState: Sendable {
    let configuration: SyncCaptureConfiguration
    let plans: [String: SyncEntityPlan]

    /// Validates the configuration against the container's entities. With `lenient`, entities
    /// the schema no longer has or whose identity no longer fits are left out instead of refused
    /// (a store reopened with a newer schema).
    init(_ configuration: SyncCaptureConfiguration, container: ModelContainer, lenient: Bool = false) throws {
        self.configuration = configuration
        let names = Set(configuration.entities.map(\.name))
        var plans: [String: SyncEntityPlan] = [:]
        for entity in configuration.entities {
            guard let layout = container.layout(named: entity.name) else {
                if lenient { continue }
                throw SyncCaptureError.unknownEntity(entity.name)
            }
            do {
                plans[entity.name] = try SyncEntityPlan(layout: layout, scope: entity.scope, synced: names)
            } catch where lenient {
                continue
            }
        }
        self.plans = plans
    }

    var engineAuthor: String { configuration.engineAuthor }

    func plan(_ entity: String) -> SyncEntityPlan? { plans[entity] }
}
