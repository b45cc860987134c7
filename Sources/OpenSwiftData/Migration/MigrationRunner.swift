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
    static let markerKey = StoreFile.stageMarkerKey

    static func run(_ plan: any SchemaMigrationPlan.Type, at url: URL, target: Schema, configuration: ModelConfiguration) throws {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else { return }
        try StoreFile.recoverInterruptedStage(at: path, readOnly: false)
        var metadata = try StoreFile.metadata(at: path)
        guard let stored = metadata["schemaVersion"].flatMap(Schema.Version.init(parsing:)) else { return }
        if stored > target.version {
            throw SwiftDataError(
                .backwardMigration,
                "the store at \(path) was written by schema version \(stored), newer than this app's \(target.version); it was not changed")
        }
        var current = stored
        while current < target.version {
            guard let stage = plan.stages.first(where: { $0.fromVersion.versionIdentifier == current }) else {
                // No stage from here: the container infers what it can (or refuses).
                return
            }
            guard stage.toVersion.versionIdentifier > current else {
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "the migration plan has a stage from \(current) to \(stage.toVersion.versionIdentifier), which does not move forward")
            }
            // The store must hold the stage's starting version's tables: a store recorded as
            // version X with other tables would be migrated from the wrong starting point.
            let expected = try Schema(versionedSchema: stage.fromVersion).storeLayout().fingerprint
            guard metadata["layout"] == expected else {
                throw SwiftDataError(
                    .incompatibleSchema,
                    "the store at \(path) records version \(current), but its tables are not those of that version in the migration plan; it was not changed"
                )
            }
            try run(stage, at: path, configuration: configuration)
            metadata = try StoreFile.metadata(at: path)
            let reached = metadata["schemaVersion"].flatMap(Schema.Version.init(parsing:)) ?? current
            guard reached > current else {
                throw SwiftDataError(.loadIssueModelContainer, "the migration stage from \(current) did not advance the store's version")
            }
            current = reached
        }
    }

    private static func run(_ stage: MigrationStage, at path: String, configuration given: ModelConfiguration) throws {
        let from = stage.fromVersion
        let to = stage.toVersion
        // Progress of the rows this stage copies names the stage.
        var configuration = given
        if let report = given.migrationOptions.progress {
            let name = "\(from.versionIdentifier) -> \(to.versionIdentifier)"
            configuration.migrationOptions.progress = { report($0.during(stage: name)) }
        }
        switch stage {
        case .lightweight:
            // Opening the container of the next version migrates the tables and records the
            // version, in one transaction.
            _ = try ModelContainer(for: Schema(versionedSchema: to), configurations: [configuration])
        case let .custom(_, _, willMigrate, didMigrate):
            let backup = path + StoreFile.stageBackupSuffix
            StoreFile.removeDatabase(at: backup)
            try StoreFile.copy(from: path, to: backup)
            StoreFile.setStageRunning(true, at: path)
            defer { StoreFile.setStageRunning(false, at: path) }
            try StoreFile.setMetadata([markerKey: "\(from.versionIdentifier) -> \(to.versionIdentifier)"], at: path)
            do {
                if let willMigrate {
                    let container = try ModelContainer(for: Schema(versionedSchema: from), configurations: [configuration])
                    let context = ModelContext(container)
                    context.autosaveEnabled = false
                    try willMigrate(context)
                    try context.save()
                }
                // Non-optional columns that rows have no value for yet (added without a default,
                // or made non-optional over nils) stay nullable while didMigrate fills them;
                // every row must have a value before the stage completes.
                var target = configuration
                target.migrationOptions.defersRequiredColumns = true
                let container = try ModelContainer(for: Schema(versionedSchema: to), configurations: [target])
                if let didMigrate {
                    let context = ModelContext(container)
                    context.autosaveEnabled = false
                    try didMigrate(context)
                    try context.save()
                }
                try container.store.requireDeferredColumns(stage: "from \(from.versionIdentifier) to \(to.versionIdentifier)")
                try StoreFile.setMetadata([markerKey: nil], at: path)
            } catch {
                try StoreFile.copy(from: backup, to: path)
                StoreFile.removeDatabase(at: backup)
                let cause = error as? SwiftDataError
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "the migration stage from \(from.versionIdentifier) to \(to.versionIdentifier) failed, and the store was put back at version \(from.versionIdentifier): \(cause?.detail ?? "\(error)")",
                    entity: cause?.entityName, property: cause?.propertyName
                )
            }
            StoreFile.removeDatabase(at: backup)
        }
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

/// SwiftData's initializers, with its labels, defaults and overloads: a list of model types or a
/// ``Schema``, an optional migration plan, and configurations as a variadic list or an array.
extension ModelContainer {
    /// Opens (or creates) the store for some model types (and every model their relationships
    /// reach), first running the stages of `migrationPlan`, if any, from the version the store
    /// records.
    ///
    /// ```swift
    /// let container = try ModelContainer(for: Trip.self, Visit.self)
    /// ```
    public convenience init(
        for forTypes: any PersistentModel.Type..., migrationPlan: (any SchemaMigrationPlan.Type)? = nil, configurations: ModelConfiguration...
    ) throws {
        try self.init(for: Schema(forTypes), migrationPlan: migrationPlan, configurations: configurations)
    }

    /// Opens (or creates) the store for a schema, first running the stages of `migrationPlan`,
    /// if any, from the version the store records.
    ///
    /// ```swift
    /// let container = try ModelContainer(
    ///     for: Schema(versionedSchema: TripsV2.self),
    ///     migrationPlan: TripsPlan.self,
    ///     configurations: ModelConfiguration(url: storeURL)
    /// )
    /// ```
    public convenience init(
        for givenSchema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)? = nil, configurations: ModelConfiguration...
    ) throws {
        try self.init(for: givenSchema, migrationPlan: migrationPlan, configurations: configurations)
    }

    /// The schema with the version the plan gives its model types (a schema built from model
    /// types alone says 1.0.0).
    private static func versioned(_ schema: Schema, by plan: (any SchemaMigrationPlan.Type)?) -> Schema {
        guard let plan else { return schema }
        let types = Set(schema.entities.compactMap { $0.layout.map { ObjectIdentifier($0.modelType) } })
        guard let match = plan.schemas.last(where: { Set($0.models.map { ObjectIdentifier($0) }) == types }),
            match.versionIdentifier != schema.version
        else { return schema }
        return Schema(versionedSchema: match)
    }

    /// Opens (or creates) the store for a schema, first running the stages of `migrationPlan`,
    /// if any, from the version the store records to the schema's version (see
    /// ``SchemaMigrationPlan``).
    ///
    /// Throws a ``SwiftDataError`` (never traps) when a model type cannot be stored, when the
    /// file is not a store or is corrupt, or when the store was created with a different schema
    /// that no stage migrates from; the file is then left untouched.
    public convenience init(
        for givenSchema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)? = nil, configurations: [ModelConfiguration]
    ) throws {
        let givenSchema = Self.versioned(givenSchema, by: migrationPlan)
        if let migrationPlan, configurations.count > 1,
            migrationPlan.stages.count > 1 || migrationPlan.stages.contains(where: { if case .custom = $0 { true } else { false } })
        {
            // Each file of a split container migrates alone, by inference, straight to the last
            // version: no context spans the files before the container exists, and a chain of
            // renames needs each stage.
            throw SwiftDataError(
                .loadIssueModelContainer,
                "\(migrationPlan) has custom stages or more than one stage, which run for a container with one configuration; a container with several migrates each file by inference in one step"
            )
        }
        if let migrationPlan, let configuration = configurations.first, configurations.count == 1,
            !configuration.isStoredInMemoryOnly, configuration.allowsSave
        {
            try MigrationRunner.run(migrationPlan, at: configuration.url, target: givenSchema, configuration: configuration)
        }
        try self.init(opening: givenSchema, migrationPlan: migrationPlan, configurations: configurations)
    }
}
