import Foundation
import GRDB
import Synchronization

/// The store of a schema's models, and the factory of the contexts that read and write it.
///
/// ```swift
/// let container = try ModelContainer(for: Trip.self, Visit.self)
/// let context = ModelContext(container)
/// ```
///
/// A container is `Sendable`: share it between actors and give each actor its own context.
/// Two containers opened on the same file share its data; in-memory containers share nothing.
public final class ModelContainer: Equatable, @unchecked Sendable {
    // @unchecked Sendable: `schema`, `configurationList`, `migrationPlan`, `store` and `layouts` are
    // immutable after
    // init (the store serialises access to SQLite through GRDB); `_mainContext` is only read and
    // written on the main actor, as its isolation says.

    /// The schema of the models this container stores.
    public let schema: Schema
    /// The configurations of the container's stores (a set, as SwiftData declares it).
    public var configurations: Set<ModelConfiguration> { Set(configurationList) }
    /// The configurations in the order they were given.
    let configurationList: [ModelConfiguration]
    /// The migration plan the container was opened with, if any.
    public let migrationPlan: (any SchemaMigrationPlan.Type)?
    let store: SQLiteStore
    private let layouts: [String: EntityLayout]
    /// For each entity with subclasses in the schema: their layouts, at any depth, by name.
    private let subclassLayouts: [String: [EntityLayout]]
    /// Incremented by every save of any context of this container: a registered model read
    /// under an older generation may be stale, and is refreshed when fetched again.
    private let saveGeneration = Atomic<Int>(0)
    /// Where saves are announced (see `saveEvents()`).
    let broadcaster = SaveBroadcaster()
    /// What makes each save's captures beside its history (``SaveCaptureSource``): sync
    /// capture's, when it is on. Empty for containers that never enabled one, whose saves then
    /// do no work for any.
    let captureSources = Mutex<[any SaveCaptureSource]>([])

    /// The current save generation, truncated as models store it (a wrap-around after four
    /// billion saves at worst skips one refresh).
    var generation: UInt32 { UInt32(truncatingIfNeeded: saveGeneration.load(ordering: .acquiring)) }

    /// Records that a save committed.
    func didCommitSave() {
        saveGeneration.add(1, ordering: .releasing)
    }
    @MainActor private var _mainContext: ModelContext?

    /// Opens (or creates) the store for a schema, with no migration plan: what every public
    /// initializer comes to (the ones with `migrationPlan:` run its stages first).
    ///
    /// Throws a ``SwiftDataError`` (never traps) when a model type cannot be stored, when the
    /// file is not a store or is corrupt, or when the store was created with a different schema;
    /// the file is then left untouched.
    init(opening givenSchema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?, configurations: [ModelConfiguration]) throws {
        let configurations = configurations.isEmpty ? [ModelConfiguration()] : configurations
        var names = Set<String>()
        for configuration in configurations where !names.insert(configuration.name).inserted {
            throw SwiftDataError(.duplicateConfiguration, "two configurations are named \"\(configuration.name)\"")
        }
        for configuration in configurations { try configuration.validate() }
        var schema = givenSchema
        for own in configurations.compactMap(\.schema) {
            for entity in own.entities where givenSchema.entitiesByName[entity.name] == nil {
                throw SwiftDataError(
                    .configurationSchemaNotFoundInContainerSchema, "the configuration's entity \(entity.name) is not in the container's schema",
                    entity: entity.name)
            }
        }
        if givenSchema.entities.isEmpty, configurations.count == 1, let own = configurations.first?.schema { schema = own }
        let layout = try schema.storeLayout()
        self.schema = schema
        self.configurationList = configurations
        self.migrationPlan = migrationPlan
        let layouts = Dictionary(
            schema.entities.compactMap { entity in entity.layout.map { (entity.name, $0) } }, uniquingKeysWith: { first, _ in first })
        self.layouts = layouts
        var subclassLayouts: [String: [EntityLayout]] = [:]
        for entityLayout in layouts.values.sorted(by: { $0.name < $1.name }) {
            var ancestor = entityLayout.superLayout
            while let superLayout = ancestor {
                subclassLayouts[superLayout.name, default: []].append(entityLayout)
                ancestor = superLayout.superLayout
            }
        }
        self.subclassLayouts = subclassLayouts
        if configurations.count == 1, let configuration = configurations.first {
            self.store = try SQLiteStore.open(
                at: configuration.isStoredInMemoryOnly ? nil : configuration.url,
                layout: layout,
                schemaVersion: schema.version,
                readOnly: !configuration.allowsSave,
                migration: configuration.migrationOptions
            )
        } else {
            self.store = try SQLiteStore.open(
                parts: try Self.storeParts(of: schema, configurations, layout: layout), layout: layout, schemaVersion: schema.version)
        }
        try resumeSyncCapture()
    }

    /// The main actor's context, created on first use, with autosave on.
    @MainActor public var mainContext: ModelContext {
        if let context = _mainContext { return context }
        let context = ModelContext(mainContextOf: self)
        _mainContext = context
        return context
    }

    /// Deletes every row of every entity; the container stays usable.
    public func deleteAllData() {
        do {
            try erase()
        } catch {
            FileHandle.standardError.write(Data("OpenSwiftData: deleteAllData failed: \(error)\n".utf8))
        }
    }

    /// Deletes every row of every entity; the container stays usable and empty.
    public func erase() throws {
        try erase(author: nil)
    }

    /// Deletes every row of every entity, recorded like a save by a context with this author:
    /// one history transaction with a deletion (and its tombstone values) per row, a deletion
    /// per synced record in the sync log when capture is on (unless `author` is the sync
    /// engine's), and a ``SaveEvent`` carrying the author and the history token.
    public func erase(author: String?) throws {
        let (history, captures) = makeCaptures(author: author, context: nil, expectedInsertions: 0)
        let store = self.store
        let removed = try store.write { db -> [PersistentIdentifier] in
            var removed: [PersistentIdentifier] = []
            for table in store.layout.joinTables { try db.execute(sql: "DELETE FROM \(quoted(table.name))") }
            for table in store.layout.tables {
                guard let layout = layout(named: table.name) else {
                    try db.execute(sql: "DELETE FROM \(quoted(table.name))")
                    continue
                }
                for capture in captures { try capture.willDelete(layout, rows: .all, in: db) }
                let preserved = layout.preservedColumns
                let returning = ([TableDescription.primaryKey] + preserved.map(\.name)).map(quoted).joined(separator: ", ")
                for row in try Row.fetchAll(db, sql: "DELETE FROM \(quoted(table.name)) RETURNING \(returning)") {
                    let key: Int64 = row[0]
                    for capture in captures {
                        capture.deleted(layout, row: key) { property in
                            preserved.firstIndex { $0 === property }.map { row[$0 + 1] as DatabaseValue }
                        }
                    }
                    removed.append(PersistentIdentifier(storeIdentifier: store.identifier, entityName: layout.name, key: .row(key)))
                }
            }
            for capture in captures { try capture.finish(author: author, in: db) }
            return removed
        }
        let historyID = history.transaction
        didCommitSave()
        broadcaster.publish(
            SaveEvent(
                entities: Set(removed.map(\.entityName)), inserted: [], updated: [], deleted: removed,
                author: author, historyToken: historyID.map { DefaultHistoryToken(storeIdentifier: store.identifier, transaction: $0) }
            ))
    }

    /// Containers are equal only to themselves.
    public static func == (lhs: ModelContainer, rhs: ModelContainer) -> Bool { lhs === rhs }

    func layout(named name: String) -> EntityLayout? { layouts[name] }

    /// The layout of a model type, or a typed error when the schema lacks it.
    func requireLayout<T: PersistentModel>(for type: T.Type) throws -> EntityLayout {
        let name = Schema.entityName(of: type)
        guard let layout = layouts[name], layout.modelType == type else {
            throw SwiftDataError(.loadIssueModelContainer, "\(name) is not part of the container's schema", entity: name)
        }
        return layout
    }

    /// The layouts of the schema's model classes that inherit from `layout`'s, at any depth,
    /// by name (empty for a class without subclasses in the schema).
    func descendants(of layout: EntityLayout) -> [EntityLayout] {
        subclassLayouts[layout.name] ?? []
    }

    /// The subclass layouts of the entity named `entity` (empty for a class without subclasses).
    func descendants(ofEntity entity: String) -> [EntityLayout] {
        subclassLayouts[entity] ?? []
    }

    /// The entities whose rows share `layout`'s primary-key space: its class hierarchy's, root
    /// first (just its own for a class outside any hierarchy).
    func keyFamily(of layout: EntityLayout) -> [String] {
        var root = layout
        while let superLayout = root.superLayout { root = superLayout }
        return [root.name] + descendants(of: root).map(\.name)
    }
}
