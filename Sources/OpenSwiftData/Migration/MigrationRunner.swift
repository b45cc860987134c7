import Foundation

/// Runs the stages of a migration plan on a store file, from the version it records to the
/// target version, before the container opens it.
///
/// A lightweight stage is one transaction (see ``LightweightMigration``). A custom stage runs
/// code on two contexts, so it is made atomic another way: the store is first copied to
/// `<store>-stage-backup` and marked as in migration; if the stage throws, or the process dies
/// before it completes, the copy is put back (at once, or when the store is next opened), so the
/// store is exactly at the last completed version and the next open resumes from there.
enum MigrationRunner {
    static let markerKey = "migrationInProgress"

    static func run(_ plan: any SchemaMigrationPlan.Type, at url: URL, target: Schema, configuration: ModelConfiguration) throws {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else { return }
        try recoverInterruptedStage(at: path)
        var metadata = try StoreFile.metadata(at: path)
        guard let stored = metadata["schemaVersion"].flatMap(Schema.Version.init(parsing:)) else { return }
        if stored > target.version {
            throw SwiftDataError(.backwardMigration, "the store at \(path) was written by schema version \(stored), newer than this app's \(target.version); it was not changed")
        }
        var current = stored
        while current < target.version {
            guard let stage = plan.stages.first(where: { $0.fromVersion.versionIdentifier == current }) else {
                // No stage from here: the container infers what it can (or refuses).
                return
            }
            try run(stage, at: path, configuration: configuration)
            metadata = try StoreFile.metadata(at: path)
            current = metadata["schemaVersion"].flatMap(Schema.Version.init(parsing:)) ?? stage.toVersion.versionIdentifier
        }
    }

    private static func run(_ stage: MigrationStage, at path: String, configuration: ModelConfiguration) throws {
        let from = stage.fromVersion
        let to = stage.toVersion
        switch stage {
        case .lightweight:
            // Opening the container of the next version migrates the tables and records the
            // version, in one transaction.
            _ = try ModelContainer(for: Schema(versionedSchema: to), configurations: [configuration])
        case let .custom(_, _, willMigrate, didMigrate):
            let backup = path + "-stage-backup"
            try? FileManager.default.removeItem(atPath: backup)
            try StoreFile.copy(from: path, to: backup)
            try StoreFile.setMetadata([markerKey: "\(from.versionIdentifier) -> \(to.versionIdentifier)"], at: path)
            do {
                if let willMigrate {
                    let container = try ModelContainer(for: Schema(versionedSchema: from), configurations: [configuration])
                    let context = ModelContext(container)
                    context.autosaveEnabled = false
                    try willMigrate(context)
                    try context.save()
                }
                let container = try ModelContainer(for: Schema(versionedSchema: to), configurations: [configuration])
                if let didMigrate {
                    let context = ModelContext(container)
                    context.autosaveEnabled = false
                    try didMigrate(context)
                    try context.save()
                }
                try StoreFile.setMetadata([markerKey: nil], at: path)
            } catch {
                try StoreFile.copy(from: backup, to: path)
                try? FileManager.default.removeItem(atPath: backup)
                let reason = (error as? SwiftDataError)?.detail ?? "\(error)"
                throw SwiftDataError(.loadIssueModelContainer, "the migration stage from \(from.versionIdentifier) to \(to.versionIdentifier) failed, and the store was put back at version \(from.versionIdentifier): \(reason)")
            }
            try? FileManager.default.removeItem(atPath: backup)
        }
    }

    /// Puts back the copy made before a custom stage that did not complete (the process died).
    static func recoverInterruptedStage(at path: String) throws {
        let backup = path + "-stage-backup"
        guard (try? StoreFile.metadata(at: path))?[markerKey] != nil else { return }
        guard FileManager.default.fileExists(atPath: backup) else {
            throw SwiftDataError(.loadIssueModelContainer, "the store at \(path) was left in the middle of a migration stage and its copy \(backup) is missing; restore the store from a backup")
        }
        try StoreFile.copy(from: backup, to: path)
        try? FileManager.default.removeItem(atPath: backup)
    }
}

extension Schema.Version {
    /// Parses `major.minor.patch`.
    init?(parsing text: String) {
        let parts = text.split(separator: ".").compactMap { Int($0) }
        guard parts.count == 3 else { return nil }
        self.init(parts[0], parts[1], parts[2])
    }
}

extension ModelContainer {
    /// Opens (or creates) the store for some model types, migrating it with `migrationPlan`.
    public convenience init(for forTypes: any PersistentModel.Type..., migrationPlan: (any SchemaMigrationPlan.Type)?, configurations: ModelConfiguration...) throws {
        try self.init(for: Schema(forTypes), migrationPlan: migrationPlan, configurations: configurations)
    }

    /// Opens (or creates) the store for a schema, first running the stages of `migrationPlan`
    /// from the version the store records to the schema's version (see ``SchemaMigrationPlan``).
    public convenience init(for givenSchema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?, configurations: [ModelConfiguration]) throws {
        if let migrationPlan, let configuration = configurations.first, configurations.count == 1,
           !configuration.isStoredInMemoryOnly, configuration.allowsSave {
            try MigrationRunner.run(migrationPlan, at: configuration.url, target: givenSchema, configuration: configuration)
        }
        try self.init(for: givenSchema, configurations: configurations)
    }
}
