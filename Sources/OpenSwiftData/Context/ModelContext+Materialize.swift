import Foundation
import GRDB

extension ModelContext {
    /// Makes the model of a fetched row for one layout: its storage, filled from the row, then
    /// the model around it (the model type's ``PersistentModel/_$materialize(_:)``), erased.
    struct ModelMaker {
        /// The layout of the model type `make` builds.
        let layout: EntityLayout
        let make: (_$FetchedRow) throws -> Registration
    }

    /// The maker of `T`'s models from rows of `layout`. The one generic step of a row's
    /// materialisation: the rest runs in non-generic code (generic code that is not specialized
    /// would look type metadata up for every row). Checks once that `layout` is `T`'s, which is
    /// what lets `_$materialize` trust the rows it is given.
    static func maker<T: PersistentModel>(_ type: T.Type, layout: EntityLayout) throws -> ModelMaker {
        guard ObjectIdentifier(layout.modelType) == ObjectIdentifier(T.self) else {
            throw SwiftDataError(.loadIssueModelContainer, "cannot read \(layout.name) rows as \(T.self) models")
        }
        return ModelMaker(layout: layout) { row in
            let model = try T._$materialize(row)
            guard let storage = row.storage else {
                throw SwiftDataError(.loadIssueModelContainer, "\(T.self)._$materialize did not make the row's storage")
            }
            return Registration(model: model, storage: storage)
        }
    }

    /// Runs a query and turns its rows into models, reusing instances already registered here.
    /// `columns` are the selected columns after the primary key (nil: all of them).
    func materialize<T: PersistentModel>(_ type: T.Type, layout: EntityLayout, query: SelectQuery, columns: [PropertyLayout]? = nil) throws -> [T] {
        let models = ModelCollector()
        try materializeRows(query: query, columns: columns, make: Self.maker(T.self, layout: layout), isInstance: { $0 is T }) { registration in
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

    /// ``materializeRows(query:columns:make:isInstance:collect:)`` for the layout's own
    /// model type and all of its columns.
    func materializeRows(layout: EntityLayout, query: SelectQuery, collect: (Registration) -> Void) throws {
        func open<T: PersistentModel>(_ type: T.Type) throws {
            try materializeRows(query: query, columns: nil, make: Self.maker(T.self, layout: layout), isInstance: { $0 is T }, collect: collect)
        }
        try open(layout.modelType)
    }

    /// Turns a query's rows into models and hands each to `collect`, in row order, while it is
    /// still in the cache: the instance registered here for a row when there is one (and
    /// `isInstance` accepts it), else a new model made by `make` and registered.
    private func materializeRows(
        query: SelectQuery, columns: [PropertyLayout]?,
        make maker: ModelMaker, isInstance: (any PersistentModel) -> Bool, collect: (Registration) -> Void
    ) throws {
        let layout = maker.layout
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
        let reader = RowReader(
            layout: layout, columns: columns, deferredColumns: container.store.deferredColumns[layout.table.name],
            attachments: container.store.attachments)
        let generation = container.generation
        let container = self.container
        let link = self.link
        try container.store.read { db in
            let statement = try db.cachedStatement(sql: query.sql)
            statement.setUncheckedArguments(query.arguments)
            let cursor = try Row.fetchCursor(statement)
            let row = _$FetchedRow(layout: layout, reader: reader, statement: statement)
            try Materialization.run(for: layout.modelType) {
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
                    row.primaryKey = primaryKey
                    let registration = try maker.make(row)
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
