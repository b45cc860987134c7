import Foundation

/// One version of an app's models, as SwiftData declares them: a type (usually an enum) with
/// the models of that version nested inside. An entity's name is its unqualified class name, so
/// `V1.Trip` and `V2.Trip` are two versions of the entity `Trip`.
///
/// ```swift
/// enum TripsV1: VersionedSchema {
///     static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
///     static var models: [any PersistentModel.Type] { [Trip.self] }
///     @Model final class Trip { var name: String; init(name: String) { self.name = name } }
/// }
/// ```
public protocol VersionedSchema {
    /// The version of this schema.
    static var versionIdentifier: Schema.Version { get }
    /// The model types of this version.
    static var models: [any PersistentModel.Type] { get }
}

extension Schema {
    /// The schema of one version of the models.
    public convenience init(versionedSchema: any VersionedSchema.Type) {
        self.init(versionedSchema.models, version: versionedSchema.versionIdentifier)
    }
}

/// How a store moves from one schema version to the next: the versions in order, and one stage
/// per step.
public protocol SchemaMigrationPlan {
    /// Every version, oldest first.
    static var schemas: [any VersionedSchema.Type] { get }
    /// The stages, each from one version to the next.
    static var stages: [MigrationStage] { get }
}

/// One step of a migration plan.
public enum MigrationStage: @unchecked Sendable {
    // @unchecked Sendable: as in SwiftData; the closures are run by the container on the thread
    // that opens it, once each, and capture what the plan declares.

    /// A step whose changes are inferred (see the README's lightweight migrations).
    case lightweight(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type)
    /// A step with code: `willMigrate` runs on a context of the old version before the tables
    /// change, `didMigrate` on a context of the new version after; their changes are saved.
    ///
    /// A non-optional property of the new version that existing rows have no value for (added
    /// without a default, or made non-optional while rows hold nil) is for `didMigrate` to
    /// fill: every row must have a value when it returns, or the stage fails (naming the
    /// entity, the property and how many rows lack it) and the store is put back.
    case custom(
        fromVersion: any VersionedSchema.Type,
        toVersion: any VersionedSchema.Type,
        willMigrate: ((ModelContext) throws -> Void)?,
        didMigrate: ((ModelContext) throws -> Void)?
    )

    var fromVersion: any VersionedSchema.Type {
        switch self {
        case let .lightweight(from, _), let .custom(from, _, _, _): return from
        }
    }

    var toVersion: any VersionedSchema.Type {
        switch self {
        case let .lightweight(_, to), let .custom(_, to, _, _): return to
        }
    }
}
