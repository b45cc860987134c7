import Foundation

/// The object through which you insert, fetch, change and delete models.
///
/// A context keeps one instance per row (fetching the same row twice yields the same object),
/// tracks changes until ``save()``, and writes them in one SQLite transaction. Contexts and the
/// models registered in them are not `Sendable`: use each from one actor, and pass
/// ``PersistentIdentifier``s between actors.
///
/// ```swift
/// let context = ModelContext(container)
/// context.insert(Trip(name: "Lisbon", startDate: .now))
/// try context.save()
/// let trips = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate)]))
/// ```
public final class ModelContext: Equatable {
    /// The container whose store this context reads and writes.
    public let container: ModelContainer

    /// Whether changes are saved automatically shortly after they are made. True for the
    /// container's ``ModelContainer/mainContext``, false for contexts you create.
    public var autosaveEnabled: Bool = false {
        didSet { if autosaveEnabled && hasChanges { scheduleAutosave() } }
    }

    /// The author recorded on the history transactions of this context's saves (see
    /// ``fetchHistory(_:)``); nil by default.
    public var author: String?

    /// Where each save registers the step that undoes it (nil, the default, records nothing).
    ///
    /// Each save is one undo step, or part of the group open in the undo manager, so a group
    /// spanning several saves undoes them together. Undoing puts the previous values back into
    /// the models as unsaved changes (inserted models are deleted, deleted ones inserted again);
    /// save to keep the result. Apple's platforms group every change of a run-loop event; Linux
    /// has no run loop, so unsaved changes are not undo steps (``rollback()`` discards them).
    public var undoManager: UndoManager?
    /// The models the last undo or redo changed and nothing changed since, until the next save
    /// or rollback: a save of only these registers no undo step of its own.
    var undoneModels: Set<ObjectIdentifier> = []

    /// The thread using the context now (see ``ContextUser``).
    let user = ContextUser()

    var identityMap: [String: RegistrationTable] = [:]
    var inserted = PendingList()
    var changed = PendingList()
    var deleted = PendingList()
    /// Deletions by predicate that the next save runs in SQL (see `delete(model:where:)`).
    var batchDeletes: [BatchDelete] = []
    /// While a component's own save runs (an apply of remote changes): what it adds to the
    /// save's transaction, read by its capture (``SaveCaptureSource``).
    var saveInput: (any SaveInput)?
    /// Models a batched read let go (``releaseUnchanged(_:entity:)``), weakly, by storage:
    /// one changed later is taken back.
    var releasedModels: [ObjectIdentifier: ReleasedModel] = [:]
    /// The history token of the last save that wrote a history transaction.
    var lastSaveHistoryToken: DefaultHistoryToken?
    /// While a save runs: the state of every model it changed, as it was before.
    var journal: [ObjectIdentifier: StorageSnapshot]?
    /// While a save runs: the primary key each inserted model had before the save gave it one
    /// (a list, not the journal: a save of many inserts changes nothing else of theirs, and
    /// hashing each into the journal was a tenth of the save).
    var journaledKeys: [(storage: AnyModelStorage, key: Int64?)] = []
    let isMainContext: Bool
    /// The weak reference to this context that its models' storages share.
    let link = ContextLink()
    private var autosaveScheduled = false
    /// Called with the error of a failed autosave (the error is also kept in ``lastAutosaveError``).
    public var autosaveErrorHandler: ((any Error) -> Void)?
    /// The error of the last failed autosave, if any.
    public private(set) var lastAutosaveError: (any Error)?

    /// Creates a context for a container, with autosave off.
    public init(_ container: ModelContainer) {
        self.container = container
        self.isMainContext = false
        link.context = self
    }

    init(mainContextOf container: ModelContainer) {
        self.container = container
        self.isMainContext = true
        self.autosaveEnabled = true
        link.context = self
    }

    /// Contexts are equal only to themselves.
    public static func == (lhs: ModelContext, rhs: ModelContext) -> Bool { lhs === rhs }

    // MARK: Pending changes

    /// Whether there are inserts, changes or deletions not yet saved.
    public var hasChanges: Bool { !inserted.isEmpty || !changed.isEmpty || !deleted.isEmpty || !batchDeletes.isEmpty }

    /// The models inserted since the last save.
    public var insertedModelsArray: [any PersistentModel] { inserted.all.map(\.model) }

    /// The registered models changed since the last save.
    public var changedModelsArray: [any PersistentModel] {
        changed.all.filter { $0.storage.state == .registered }.map(\.model)
    }

    /// The models marked for deletion at the next save.
    public var deletedModelsArray: [any PersistentModel] { deleted.all.map(\.model) }

    /// Settles pending changes: updates the inverses of relationships set by initializers and
    /// inserts every model reachable from inserted or changed models. ``save()`` does this (and
    /// applies delete rules) itself.
    public func processPendingChanges() {
        insertReachable(from: inserted.all + changed.all)
    }

    // MARK: Insert and delete

    /// Registers a model so that the next ``save()`` writes it. Inserting a model that is
    /// already registered here does nothing; a model that belongs to another context is left
    /// where it is.
    public func insert<T: PersistentModel>(_ model: T) {
        let use = ExclusiveUse(self)
        defer { use.end() }
        let storage = model.storageBase
        if !undoneModels.isEmpty { undoneModels.remove(ObjectIdentifier(storage)) }
        switch storage.state {
        case .unregistered, .removed:
            if storage.state == .removed { storage.primaryKey = nil }
            let registration = Registration(model: model, storage: storage)
            register(inserting: registration)
            // Models reachable through its relationships are inserted with it.
            insertReachable(from: [registration])
        case .deleted where storage.context === self:
            storage.state = .registered
            deleted.remove(storage)
        case .inserted, .registered, .deleted:
            if storage.context !== self {
                log("insert(_:) ignored: \(T.self) \(storage.ensureIdentifier()) belongs to another context")
            }
        }
    }

    /// Marks a model for deletion at the next save. A model inserted and not yet saved is simply
    /// forgotten.
    public func delete<T: PersistentModel>(_ model: T) {
        let use = ExclusiveUse(self)
        defer { use.end() }
        let storage = model.storageBase
        if !undoneModels.isEmpty { undoneModels.remove(ObjectIdentifier(storage)) }
        guard storage.context === self else { return }
        switch storage.state {
        case .inserted:
            inserted.remove(storage)
            storage.state = .unregistered
            storage.context = nil
        case .registered:
            storage.state = .deleted
            deleted.add(Registration(model: model, storage: storage))
            storageDidChange(storage)
        case .deleted, .unregistered, .removed:
            break
        }
    }

    /// Runs `block`, then saves. If `block` throws, nothing is saved, the error is rethrown,
    /// and the changes it made stay pending.
    public func transaction(block: () throws -> Void) throws {
        try block()
        try save()
    }

    /// Puts every changed model back to its saved values, forgets unsaved inserts and cancels
    /// pending deletions.
    public func rollback() {
        let use = ExclusiveUse(self)
        defer { use.end() }
        undoneModels.removeAll()
        batchDeletes.removeAll()
        for registration in inserted.all {
            registration.storage.state = .unregistered
            registration.storage.context = nil
        }
        for registration in changed.all { registration.storage.revert() }
        for registration in deleted.all {
            registration.storage.state = .registered
            registration.storage.revert()
        }
        inserted.removeAll()
        changed.removeAll()
        deleted.removeAll()
    }

    // MARK: Looking models up

    /// The model registered here for an identifier, without touching the store.
    public func registeredModel<T: PersistentModel>(for persistentModelID: PersistentIdentifier) -> T? {
        let use = ExclusiveUse(self)
        defer { use.end() }
        if let row = persistentModelID.rowID {
            return identityMap[persistentModelID.entityName]?[row]?.model as? T
        }
        return inserted.all.first { $0.storage.ensureIdentifier() == persistentModelID }?.model as? T
    }

    /// The model for an identifier: the registered instance, or one loaded from the store.
    ///
    /// An identifier whose row no longer exists yields an instance holding the declared default
    /// (or empty) values, registered nowhere, and a log line, as SwiftData returns a fault.
    public func model(for persistentModelID: PersistentIdentifier) -> any PersistentModel {
        let use = ExclusiveUse(self)
        defer { use.end() }
        if let row = persistentModelID.rowID, let registration = identityMap[persistentModelID.entityName]?[row] {
            return registration.model
        }
        if persistentModelID.isTemporary,
            let registration = inserted.all.first(where: { $0.storage.ensureIdentifier() == persistentModelID })
        {
            return registration.model
        }
        if let layout = container.layout(named: persistentModelID.entityName) {
            if let row = persistentModelID.rowID, let model = try? load(layout: layout, primaryKey: row) {
                return model
            }
            log("model(for:) found no row for \(persistentModelID)")
            return placeholder(layout: layout, id: persistentModelID)
        }
        log("model(for:) got an identifier of entity \(persistentModelID.entityName), which the container's schema lacks")
        return PlaceholderModel(backingData: ModelStorage<PlaceholderModel>(for: PlaceholderModel.self))
    }

    // MARK: Change tracking

    /// Called by a model's storage the first time it changes after a save.
    func storageDidChange(_ storage: AnyModelStorage) {
        if storage.state == .registered, let row = storage.primaryKey {
            if let registration = identityMap[storage.entityName]?[row], registration.storage === storage {
                changed.add(registration)
            } else if let model = releasedModels.removeValue(forKey: ObjectIdentifier(storage))?.model {
                // A model a batched read let go, changed since: taken back, so the save writes it.
                let registration = Registration(model: model, storage: storage)
                if identityMap[storage.entityName]?[row] == nil { identityMap[storage.entityName, default: [:]][row] = registration }
                changed.add(registration)
            }
        }
        if autosaveEnabled { scheduleAutosave() }
    }

    /// Schedules an autosave for a change that no model carries (a batch deletion).
    func storageDidChangeWithoutModel() {
        if autosaveEnabled { scheduleAutosave() }
    }

    private func scheduleAutosave() {
        guard isMainContext, !autosaveScheduled else { return }
        autosaveScheduled = true
        // The main context is only reachable through `ModelContainer.mainContext`, which is
        // isolated to the main actor, so this context is only ever used there.
        nonisolated(unsafe) let context = self
        Task { @MainActor in context.autosave() }
    }

    private func autosave() {
        autosaveScheduled = false
        guard autosaveEnabled, hasChanges else { return }
        do {
            try save()
        } catch {
            lastAutosaveError = error
            log("autosave failed: \(error)")
            autosaveErrorHandler?(error)
        }
    }

    func log(_ message: String) {
        guard ProcessInfo.processInfo.environment["OSD_QUIET"] == nil else { return }
        FileHandle.standardError.write(Data("OpenSwiftData: \(message)\n".utf8))
    }

    deinit {
        for registration in inserted.all { registration.storage.context = nil }
        // Models related both ways keep each other (and the container) alive: give their
        // relationships back as faults (see `releaseLoadedRelationships()`).
        for (entity, table) in identityMap where container.layout(named: entity)?.relationships.isEmpty == false {
            for registration in table.values { registration.storage.releaseLoadedRelationships() }
        }
    }
}
