// SwiftData's public API, named the way SwiftData code writes it (one declaration or overload of
// `../shared/design/swiftdata-reference.md` at a time, with its section's ID), so that a missing
// or misspelled declaration is a build failure of this target. The code is compiled, not run,
// except for the one test at the end; what OpenSwiftData deliberately does not provide (the
// SwiftUI-only API: `@Query`, `.modelContainer(for:)`, `.modelContext(_:)`, …) is listed in the
// README with its alternative, and is absent here.

import Foundation
import OpenSwiftData
import Testing

// MARK: - MAC, ATT, REL: the model macros

@Model
class SurfaceTrip {
    // ATT-1…ATT-9, ATT-2, ATT-3
    @Attribute(.unique) var name: String
    @Attribute(.externalStorage) var photo: Data?
    @Attribute(.ephemeral) var draft: String = ""
    @Attribute(.preserveValueOnDeletion) var code: String = ""
    @Attribute(.allowsCloudEncryption) var secret: String = ""
    @Attribute(.spotlight) var summary: String = ""
    @Attribute(.codable) var tagline: [String] = []
    @Attribute(originalName: "title", hashModifier: "v2") var label: String = ""
    @Attribute(.unique, originalName: "handle") var slug: String = ""
    var startDate: Date = Date.now
    var status: SurfaceStatus = SurfaceStatus.planned
    var tags: [String] = []
    // REL-1…REL-8
    @Relationship(deleteRule: .cascade, inverse: \SurfaceVisit.trip) var visits: [SurfaceVisit] = []
    @Relationship(.unique, deleteRule: .nullify, originalName: "guide", hashModifier: "h") var leader: SurfacePerson?
    @Relationship(deleteRule: .noAction, minimumModelCount: 0, maximumModelCount: 10) var companions: [SurfacePerson]? = []
    @Relationship(deleteRule: .deny) var owner: SurfaceOwner?
    // MAC-20
    @Transient var cache: Int = 0

    // MAC-21, MAC-22
    #Unique<SurfaceTrip>([\.name], [\.startDate, \.slug])
    #Index<SurfaceTrip>([\.name], [\.startDate, \.name])
    #Index<SurfaceTrip>(.binary([\.label]), .rtree([\.startDate]))

    init(name: String) {
        self.name = name
    }
}

enum SurfaceStatus: String, Codable {
    case planned, done
}

@Model
final class SurfaceVisit {
    var place: String
    var trip: SurfaceTrip?

    init(place: String) {
        self.place = place
    }
}

@Model
final class SurfacePerson {
    var name: String

    init(name: String) {
        self.name = name
    }
}

@Model
final class SurfaceOwner {
    var name: String
    var trips: [SurfaceTrip] = []

    init(name: String) {
        self.name = name
    }
}

// MARK: - MIG: versioned schemas, plans, stages

enum SurfaceSchemaV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [SurfaceTrip.self, SurfaceVisit.self, SurfacePerson.self, SurfaceOwner.self] }
}

enum SurfaceSchemaV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [SurfaceTrip.self, SurfaceVisit.self, SurfacePerson.self, SurfaceOwner.self] }
}

enum SurfacePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [SurfaceSchemaV1.self, SurfaceSchemaV2.self] }
    static var stages: [MigrationStage] { [lightweight, custom] }

    static let lightweight = MigrationStage.lightweight(fromVersion: SurfaceSchemaV1.self, toVersion: SurfaceSchemaV2.self)
    static let custom = MigrationStage.custom(
        fromVersion: SurfaceSchemaV1.self,
        toVersion: SurfaceSchemaV2.self,
        willMigrate: { context in try context.save() },
        didMigrate: nil
    )
}

// MARK: - ACT: model actors

@ModelActor
actor SurfaceImporter {
    func run(ids: [PersistentIdentifier]) throws -> Int {
        let context: ModelContext = modelContext
        let container: ModelContainer = modelContainer
        let executor: any ModelExecutor = modelExecutor
        _ = (container, executor)
        let trip: SurfaceTrip? = self[ids[0], as: SurfaceTrip.self]
        _ = trip
        return try context.fetchCount(FetchDescriptor<SurfaceTrip>())
    }
}

/// Every declaration, used as SwiftData code uses it. Never called: this target is checked by
/// compiling it.
func surface(url: URL, id: PersistentIdentifier) async throws {
    // PM-2…PM-8
    let trip = SurfaceTrip(name: "Lisbon")
    let data: any BackingData<SurfaceTrip> = trip.persistentBackingData
    _ = data.persistentModelID
    _ = data.metadata
    let fresh: some BackingData<SurfaceTrip> = SurfaceTrip.createBackingData()
    _ = SurfaceTrip(backingData: fresh)
    let name: String = trip.getValue(forKey: \.name)
    trip.setValue(forKey: \.name, to: name)
    let visits: [SurfaceVisit] = trip.getValue(forKey: \.visits)
    trip.setValue(forKey: \.visits, to: visits)
    let leader: SurfacePerson? = trip.getValue(forKey: \.leader)
    trip.setValue(forKey: \.leader, to: leader)
    let context: ModelContext? = trip.modelContext
    let modelID: PersistentIdentifier = trip.persistentModelID
    let changed: Bool = trip.hasChanges
    let deleted: Bool = trip.isDeleted
    _ = (context, modelID, changed, deleted, trip.id, trip.hashValue, trip == trip)
    let metadata: [Schema.PropertyMetadata] = SurfaceTrip.schemaMetadata
    let _: SurfaceTrip.Root.Type = SurfaceTrip.self
    _ = Schema.PropertyMetadata(name: "name", keypath: \SurfaceTrip.name, defaultValue: nil, metadata: nil)
    _ = Schema.PropertyMetadata(name: "name", keypath: \SurfaceTrip.name)
    _ = metadata

    // PID-1…PID-6
    let identifierID: PersistentIdentifier.ID = id.id
    let entityName: String = id.entityName
    let storeIdentifier: String? = id.storeIdentifier
    let temporary: Bool = id.isTemporary
    _ = (identifierID, entityName, storeIdentifier, temporary, id < id)
    _ = try JSONDecoder().decode(PersistentIdentifier.self, from: JSONEncoder().encode(id))
    _ = try PersistentIdentifier.identifier(for: "store", entityName: "SurfaceTrip", primaryKey: Int64(1))

    // CFG-1…CFG-6
    let configurations: [ModelConfiguration] = [
        ModelConfiguration(),
        ModelConfiguration(isStoredInMemoryOnly: true),
        ModelConfiguration(schema: Schema([SurfaceTrip.self])),
        ModelConfiguration(schema: Schema([SurfaceTrip.self]), isStoredInMemoryOnly: true),
        ModelConfiguration(url: url),
        ModelConfiguration(schema: Schema([SurfaceTrip.self]), url: url),
        ModelConfiguration("name", schema: Schema([SurfaceTrip.self])),
        ModelConfiguration(for: SurfaceTrip.self, SurfaceVisit.self),
        ModelConfiguration(for: SurfaceTrip.self, isStoredInMemoryOnly: true),
        ModelConfiguration(
            "name", schema: nil, isStoredInMemoryOnly: false, allowsSave: true, groupContainer: .automatic, cloudKitDatabase: .automatic),
        ModelConfiguration("name", schema: nil, url: url, allowsSave: false, cloudKitDatabase: .none),
        ModelConfiguration(groupContainer: .identifier("group"), cloudKitDatabase: .private("db")),
        ModelConfiguration(groupContainer: .none),
    ]
    let configuration = configurations[0]
    let configurationURL: URL = configuration.url
    let configurationName: String = configuration.name
    let groupID: String? = configuration.groupAppContainerIdentifier
    let cloudID: String? = configuration.cloudKitContainerIdentifier
    let group: ModelConfiguration.GroupContainer = configuration.groupContainer
    let cloud: ModelConfiguration.CloudKitDatabase = configuration.cloudKitDatabase
    let configurationSchema: Schema? = configuration.schema
    let allowsSave: Bool = configuration.allowsSave
    let inMemory: Bool = configuration.isStoredInMemoryOnly
    let configurationID: URL = configuration.id
    _ = (configurationURL, configurationName, groupID, cloudID, group, cloud, configurationSchema, allowsSave, inMemory, configurationID)

    // CON-1…CON-6: every initializer, variadic and array `configurations:`, with and without
    // `migrationPlan:`
    let schema = Schema(versionedSchema: SurfaceSchemaV2.self)
    let containers: [ModelContainer] = [
        try ModelContainer(for: SurfaceTrip.self),
        try ModelContainer(for: SurfaceTrip.self, SurfaceVisit.self),
        try ModelContainer(for: SurfaceTrip.self, configurations: configuration),
        try ModelContainer(for: SurfaceTrip.self, configurations: configuration, configuration),
        try ModelContainer(for: SurfaceTrip.self, migrationPlan: SurfacePlan.self),
        try ModelContainer(for: SurfaceTrip.self, migrationPlan: SurfacePlan.self, configurations: configuration),
        try ModelContainer(for: SurfaceTrip.self, migrationPlan: nil, configurations: configuration),
        try ModelContainer(for: schema),
        try ModelContainer(for: schema, configurations: configuration),
        try ModelContainer(for: schema, configurations: configuration, configuration),
        try ModelContainer(for: schema, configurations: [configuration]),
        try ModelContainer(for: schema, configurations: []),
        try ModelContainer(for: schema, migrationPlan: SurfacePlan.self),
        try ModelContainer(for: schema, migrationPlan: SurfacePlan.self, configurations: ModelConfiguration(url: url)),
        try ModelContainer(for: schema, migrationPlan: SurfacePlan.self, configurations: configuration, configuration),
        try ModelContainer(for: schema, migrationPlan: SurfacePlan.self, configurations: [configuration]),
        try ModelContainer(for: schema, migrationPlan: nil, configurations: [configuration]),
    ]
    let container = containers[0]
    let containerSchema: Schema = container.schema
    let plan: (any SchemaMigrationPlan.Type)? = container.migrationPlan
    let configurationSet: Set<ModelConfiguration> = container.configurations
    _ = (containerSchema, plan, configurationSet, container.configurations.first?.url, container == container)
    await surfaceOnMainActor(container)
    container.deleteAllData()
    try container.erase()

    // CTX-1…CTX-29
    let modelContext = ModelContext(container)
    let owner: ModelContainer = modelContext.container
    _ = owner
    modelContext.insert(trip)
    modelContext.delete(trip)
    try modelContext.save()
    _ = modelContext.hasChanges
    modelContext.rollback()
    try modelContext.transaction {
        modelContext.insert(SurfaceTrip(name: "x"))
    }
    let descriptor = FetchDescriptor<SurfaceTrip>(
        predicate: #Predicate { $0.name == "Lisbon" }, sortBy: [SortDescriptor(\.startDate, order: .reverse)])
    let trips: [SurfaceTrip] = try modelContext.fetch(descriptor)
    let count: Int = try modelContext.fetchCount(descriptor)
    let identifiers: [PersistentIdentifier] = try modelContext.fetchIdentifiers(descriptor)
    try modelContext.enumerate(descriptor) { (model: SurfaceTrip) in _ = model.name }
    try modelContext.enumerate(descriptor, batchSize: 10, allowEscapingMutations: true) { _ in }
    // Remote changes (Core Data's notification, as CloudKit-synced SwiftData apps observe it)
    let remoteChange: Notification.Name = .NSPersistentStoreRemoteChange
    let remoteKeys: [String] = [NSStoreUUIDKey, NSPersistentStoreURLKey, NSPersistentHistoryTokenKey]
    _ = (remoteChange == ModelContainer.remoteChangeNotification, remoteKeys)
    // CTX-12, CTX-13
    let batched: FetchResultsCollection<SurfaceTrip> = try modelContext.fetch(descriptor, batchSize: 100)
    let batchedIDs: FetchResultsCollection<PersistentIdentifier> = try modelContext.fetchIdentifiers(descriptor, batchSize: 100)
    let first: SurfaceTrip? = batched.first
    let position: Int = batched.startIndex
    _ = (first, position, batched.count, batchedIDs.map { $0 }, batched[batched.index(before: batched.endIndex)])
    try modelContext.delete(model: SurfaceTrip.self)
    try modelContext.delete(model: SurfaceTrip.self, where: #Predicate { $0.name == "x" }, includeSubclasses: false)
    let any: any PersistentModel = modelContext.model(for: id)
    let registered: SurfaceTrip? = modelContext.registeredModel(for: id)
    let inserted: [any PersistentModel] = modelContext.insertedModelsArray
    let changedModels: [any PersistentModel] = modelContext.changedModelsArray
    let deletedModels: [any PersistentModel] = modelContext.deletedModelsArray
    _ = (trips, count, identifiers, any, registered, inserted, changedModels, deletedModels)
    modelContext.processPendingChanges()
    modelContext.autosaveEnabled = true
    modelContext.undoManager = UndoManager()
    modelContext.author = "importer"
    let willSave: Notification.Name = ModelContext.willSave
    let didSave: Notification.Name = ModelContext.didSave
    let keys: [ModelContext.NotificationKey] = [
        .queryGeneration, .invalidatedAllIdentifiers, .insertedIdentifiers, .updatedIdentifiers, .deletedIdentifiers,
    ]
    _ = (willSave, didSave, keys.map(\.rawValue), modelContext == modelContext)

    // FD-1…FD-8
    var fetch = FetchDescriptor<SurfaceTrip>()
    fetch = FetchDescriptor(predicate: nil, sortBy: [])
    fetch.predicate = #Predicate { $0.status == .done }
    fetch.sortBy = [SortDescriptor(\.name)]
    // PRD-37: Foundation's string comparators, named as Foundation names them.
    fetch.sortBy = [
        SortDescriptor(\.name, comparator: .localizedStandard),
        SortDescriptor(\.name, comparator: .localized, order: .reverse),
        SortDescriptor(\.name, comparator: .lexical),
        SortDescriptor(\.name, order: .reverse),
    ]
    fetch.fetchLimit = 10
    fetch.fetchOffset = 5
    fetch.includePendingChanges = false
    fetch.propertiesToFetch = [\.name]
    fetch.relationshipKeyPathsForPrefetching = [\.visits]

    // SCH-1…SCH-11
    let schemas: [Schema] = [
        Schema(),
        Schema([SurfaceTrip.self, SurfaceVisit.self]),
        Schema([SurfaceTrip.self], version: Schema.Version(1, 2, 3)),
        Schema(versionedSchema: SurfaceSchemaV1.self),
    ]
    let someSchema = schemas[1]
    let entities: [Schema.Entity] = someSchema.entities
    let byName: [String: Schema.Entity] = someSchema.entitiesByName
    let version: Schema.Version = someSchema.version
    let entity: Schema.Entity? = someSchema.entity(for: SurfaceTrip.self)
    let tripEntityName: String = Schema.entityName(for: SurfaceTrip.self)
    _ = (entities, byName, version, entity, tripEntityName, version.major, version.minor, version.patch, version.description, version < version)
    // SCH-10
    try someSchema.save(to: url)
    let reloaded: Schema = try Schema.load(from: url)
    _ = reloaded
    // SCH-5
    let composite = Schema.CompositeAttribute(name: "c", valueType: Int.self, properties: [Schema.Attribute(name: "a", valueType: Int.self)])
    let members: [Schema.Attribute] = composite.properties
    let asAttribute: Schema.Attribute = composite
    _ = (members, asAttribute, composite == asAttribute)
    // Not provided yet (README, "Not provided"): `.transformable(by:)` (no `ValueTransformer` on Linux), the custom
    // `DataStore` API (`DataStoreConfiguration`, `DataStoreError`, `ModelContext.editingState`),
    // `PersistentModel.Root` (26; an associated type would keep a model from declaring a
    // nested type named `Root`, and without inheritance it is always the model itself).
    _ = Schema.Entity(
        "E", properties: Schema.Attribute(name: "a", originalName: nil, options: [], valueType: Int.self, defaultValue: nil, hashModifier: nil))
    _ = Schema.Entity(
        "Base", subentities: Schema.Entity("Sub"),
        properties: Schema.Attribute(name: "a", originalName: nil, options: [], valueType: Int.self, defaultValue: nil, hashModifier: nil))
    let superentity: Schema.Entity? = entity?.superentity
    let superentityName: String? = entity?.superentityName
    let subentities: Set<Schema.Entity>? = entity?.subentities
    _ = (superentity, superentityName, subentities)
    _ = HistoryDescriptor<DefaultHistoryTransaction>(predicate: nil, sortBy: [])
    _ = entity?.inheritedProperties
    _ = entity?.inheritedPropertiesByName
    if let entity {
        let entityName: String = entity.name
        let properties: [any SchemaProperty] = entity.properties
        let attributes: Set<Schema.Attribute> = entity.attributes
        let relationships: Set<Schema.Relationship> = entity.relationships
        let attributesByName: [String: Schema.Attribute] = entity.attributesByName
        let relationshipsByName: [String: Schema.Relationship] = entity.relationshipsByName
        let stored: [any SchemaProperty] = entity.storedProperties
        let storedByName: [String: any SchemaProperty] = entity.storedPropertiesByName
        let superentity: Schema.Entity? = entity.superentity
        let superentityName: String? = entity.superentityName
        let subentities: Set<Schema.Entity> = entity.subentities
        let unique: [[String]] = entity.uniquenessConstraints
        let indices: [[String]] = entity.indices
        _ = (
            entityName, properties, attributes, relationships, attributesByName, relationshipsByName, stored, storedByName, superentity,
            superentityName, subentities, unique, indices
        )
        for attribute in attributes {
            _ = (
                attribute.name, attribute.originalName, attribute.options, attribute.valueType, attribute.defaultValue, attribute.isOptional,
                attribute.hashModifier, attribute.isUnique, attribute.isTransient, attribute.isAttribute, attribute.isRelationship,
                attribute.isCodable, attribute.isTransformable
            )
        }
        for relationship in relationships {
            _ = (
                relationship.name, relationship.keypath, relationship.destination, relationship.deleteRule, relationship.inverseName,
                relationship.inverseKeyPath, relationship.minimumModelCount, relationship.maximumModelCount, relationship.isToOneRelationship,
                relationship.options
            )
        }
    }
    _ = Schema.Entity("Empty")
    _ = Schema.Attribute(.unique, originalName: "old", hashModifier: nil)
    _ = Schema.Unique<SurfaceTrip>([\.name], [\.slug]).constraints
    _ = Schema.Index<SurfaceTrip>([\.name]).indices
    _ = Schema.Index<SurfaceTrip>(.binary([\.name]), .rtree([\.startDate]))
    let rules: [Schema.Relationship.DeleteRule] = [.nullify, .cascade, .deny, .noAction]
    _ = rules

    // HIS-1…HIS-7
    var history = HistoryDescriptor<DefaultHistoryTransaction>()
    history = HistoryDescriptor(predicate: #Predicate { $0.author == "importer" })
    history.fetchLimit = 10
    let transactions: [DefaultHistoryTransaction] = try modelContext.fetchHistory(history)
    for transaction in transactions {
        let token: DefaultHistoryToken = transaction.token
        _ = (
            transaction.timestamp, transaction.author, transaction.storeIdentifier, transaction.transactionIdentifier, transaction.bundleIdentifier,
            transaction.processIdentifier, token.tokenValue
        )
        for change in transaction.changes {
            _ = change.changedPersistentIdentifier
            switch change {
            case .insert(let insert as DefaultHistoryInsert<SurfaceTrip>):
                _ = insert.changedPersistentIdentifier
            case .update(let update as DefaultHistoryUpdate<SurfaceTrip>):
                _ = update.updatedAttributes
            case .delete(let delete as DefaultHistoryDelete<SurfaceTrip>):
                _ = delete.tombstone[\.code]
            default:
                break
            }
        }
    }
    try modelContext.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>())

    // ACT-1…ACT-5
    let importer = SurfaceImporter(modelContainer: container)
    _ = try await importer.run(ids: [id])
    let executor = DefaultSerialModelExecutor(modelContext: modelContext)
    _ = (executor.modelContext, executor.asUnownedSerialExecutor())

    // ERR-1…ERR-4
    let errors: [SwiftDataError] = [
        .includePendingChangesWithBatchSize, .unsupportedPredicate, .unsupportedKeyPath,
        .sortingPendingChangesWithIdentifiers, .unsupportedSortDescriptor, .duplicateConfiguration,
        .configurationFileNameTooLong, .configurationFileNameContainsInvalidCharacters,
        .configurationSchemaNotFoundInContainerSchema, .loadIssueModelContainer,
        .modelValidationFailure, .missingModelContext, .backwardMigration, .unknownSchema,
        .historyTokenExpired, .invalidTransactionFetchRequest,
    ]
    do {
        try modelContext.save()
    } catch SwiftDataError.modelValidationFailure {
        _ = errors
    }
}

/// CON-4: the main actor's context.
@MainActor
func surfaceOnMainActor(_ container: ModelContainer) {
    let main: ModelContext = container.mainContext
    _ = main.autosaveEnabled
}

@Suite("SwiftData's API surface")
struct APISurfaceTests {
    @Test("the API surface compiled (this target fails to build when a declaration is missing)")
    func compiled() throws {
        // The real check is the build; this confirms the models it declares are real models,
        // and that the variadic form with a plan keeps the plan.
        #expect(SurfaceTrip.schemaMetadata.contains { $0.name == "name" })
        let container = try ModelContainer(
            for: Schema(versionedSchema: SurfaceSchemaV2.self),
            migrationPlan: SurfacePlan.self,
            configurations: ModelConfiguration(isStoredInMemoryOnly: true)
        )
        #expect(container.migrationPlan.map(ObjectIdentifier.init) == ObjectIdentifier(SurfacePlan.self))
        #expect(container.schema.version == Schema.Version(2, 0, 0))
        #expect(try ModelContainer(for: SurfaceTrip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true)).migrationPlan == nil)
    }
}
