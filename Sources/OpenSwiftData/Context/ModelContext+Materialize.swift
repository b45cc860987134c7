import Foundation
import GRDB

extension ModelContext {
    /// Makes the model of a fetched row: its storage, filled by the second argument, then the
    /// model around it (the model type's ``PersistentModel/_$materialize(layout:fill:)``), erased.
    typealias ModelMaker = (EntityLayout, (AnyModelStorage) throws -> Void) throws -> Registration

    /// The maker of `T`'s models. The one generic step of a row's materialisation: the rest runs
    /// in non-generic code (generic code that is not specialized would look type metadata up
    /// for every row).
    static func maker<T: PersistentModel>(_ type: T.Type) -> ModelMaker {
        { layout, fill in
            // `_$materialize` hands `fill` the `ModelStorage<T>` it makes, and returns it.
            let (model, storage) = try T._$materialize(layout: layout) { try fill(unsafeDowncast($0, to: AnyModelStorage.self)) }
            return Registration(model: model, storage: unsafeDowncast(storage, to: AnyModelStorage.self))
        }
    }

    /// Runs a query and turns its rows into models, reusing instances already registered here.
    /// `columns` are the selected columns after the primary key (nil: all of them).
    func materialize<T: PersistentModel>(_ type: T.Type, layout: EntityLayout, query: SelectQuery, columns: [PropertyLayout]? = nil) throws -> [T] {
        let models = ModelCollector()
        try materializeRows(layout: layout, query: query, columns: columns, make: Self.maker(T.self), isInstance: { $0 is T }) { registration in
            models.append(registration.model as AnyObject)
        }
        // Every model is a `T`: made by `T`'s maker, or a registered instance that passed the
        // `is T` check.
        return models.take(as: T.self)
    }

    /// Runs a query of any entity and returns references to the (registered) models.
    func materializeRefs(_ layout: EntityLayout, query: SelectQuery) throws -> [RelatedRef] {
        var refs: [RelatedRef] = []
        try materializeRows(layout: layout, query: query) { refs.append(RelatedRef($0)) }
        return refs
    }

    /// Loads one row by primary key, or returns nil when it does not exist.
    func load(layout: EntityLayout, primaryKey: Int64) throws -> (any PersistentModel)? {
        var model: (any PersistentModel)?
        try materializeRows(layout: layout, query: SelectBuilder.row(layout.table, primaryKey: primaryKey)) { registration in
            if model == nil { model = registration.model }
        }
        return model
    }

    /// ``materializeRows(layout:query:columns:make:isInstance:collect:)`` for the layout's own
    /// model type and all of its columns.
    func materializeRows(layout: EntityLayout, query: SelectQuery, collect: (Registration) -> Void) throws {
        func open<T: PersistentModel>(_ type: T.Type) throws {
            try materializeRows(layout: layout, query: query, columns: nil, make: Self.maker(T.self), isInstance: { $0 is T }, collect: collect)
        }
        try open(layout.modelType)
    }

    /// Turns a query's rows into models and hands each to `collect`, in row order, while it is
    /// still in the cache: the instance registered here for a row when there is one (and
    /// `isInstance` accepts it), else a new model made by `make` and registered.
    private func materializeRows(
        layout: EntityLayout, query: SelectQuery, columns: [PropertyLayout]?,
        make: ModelMaker, isInstance: (any PersistentModel) -> Bool, collect: (Registration) -> Void
    ) throws {
        var registered: RegistrationTable
        if let existing = identityMap[layout.name] {
            registered = existing
        } else {
            registered = RegistrationTable()
            identityMap[layout.name] = registered
        }
        // With nothing registered yet (a fresh context), no row can be a known instance: skip the
        // lookups, and append the new models without hashing them.
        let lookUp = !registered.isEmpty
        let reader = RowReader(layout: layout, columns: columns)
        let generation = container.generation
        let container = self.container
        let link = self.link
        try container.store.read { db in
            let statement = try db.cachedStatement(sql: query.sql)
            statement.setUncheckedArguments(query.arguments)
            let cursor = try Row.fetchCursor(statement)
            try Materialization.run {
                while try cursor.next() != nil {
                    let primaryKey = reader.primaryKey(statement)
                    if lookUp, let existing = registered[primaryKey], isInstance(existing.model) {
                        // Another context may have saved since this instance was read: an
                        // instance without unsaved changes takes the row's values (and tells its
                        // observers); one with unsaved changes keeps them (they win at its save).
                        let storage = existing.storage
                        if storage.loadedGeneration != generation, storage.state == .registered, !storage.hasChanges {
                            let fresh = try reader.values(statement, primaryKey: primaryKey)
                            let changed = storage.refresh(from: fresh, columns: reader.columnProperties)
                            storage.loadedGeneration = generation
                            for property in changed { existing.model._$notifyObservers(ofChangeTo: property.keyPath) }
                        }
                        collect(existing)
                        continue
                    }
                    let registration = try make(layout) { try reader.read(statement, primaryKey: primaryKey, into: $0) }
                    let storage = registration.storage
                    storage.primaryKey = primaryKey
                    storage.state = .registered
                    storage.contextLink = link
                    storage.container = container
                    storage.loadedGeneration = generation
                    collect(registration)
                    if lookUp {
                        registered[primaryKey] = registration
                    } else {
                        registered.appendNew(primaryKey, registration)
                    }
                }
            }
        }
    }
}
