import Foundation
import GRDB

extension ModelContext {
    /// Makes the model of a fetched row around its values: the model type's
    /// ``PersistentModel/_$materialize(layout:values:)``, erased.
    typealias ModelMaker = (EntityLayout, ValueBuffer) -> Registration

    /// The maker of `T`'s models. The one generic step of a row's materialisation: the rest runs
    /// in non-generic code (generic code that is not specialized would look type metadata up
    /// for every row).
    static func maker<T: PersistentModel>(_ type: T.Type) -> ModelMaker {
        { layout, values in
            let (model, storage) = T._$materialize(layout: layout, values: values)
            // `_$materialize` always returns the `ModelStorage<T>` it made.
            return Registration(model: model, storage: unsafeDowncast(storage, to: AnyModelStorage.self))
        }
    }

    /// Runs a query and turns its rows into models, reusing instances already registered here.
    /// `columns` are the selected columns after the primary key (nil: all of them).
    func materialize<T: PersistentModel>(_ type: T.Type, layout: EntityLayout, query: SelectQuery, columns: [PropertyLayout]? = nil) throws -> [T] {
        let registrations = try materializeRegistrations(layout: layout, query: query, columns: columns, make: Self.maker(T.self)) { $0 is T }
        let count = registrations.count
        guard count > 0 else { return [] }
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            registrations.withUnsafeBufferPointer { registrations in
                for index in 0..<count {
                    // Every model is `T`: made by `T`'s maker, or a registered instance that
                    // passed the `is T` check.
                    (base + index).initialize(to: unsafeDowncast(registrations[index].model as AnyObject, to: T.self))
                }
            }
            initialized = count
        }
    }

    /// Runs a query of any entity and returns references to the (registered) models.
    func materializeRefs(_ layout: EntityLayout, query: SelectQuery) throws -> [RelatedRef] {
        try materializeRegistrations(layout: layout, query: query).map(RelatedRef.init)
    }

    /// Loads one row by primary key, or returns nil when it does not exist.
    func load(layout: EntityLayout, primaryKey: Int64) throws -> (any PersistentModel)? {
        try materializeRegistrations(layout: layout, query: SelectBuilder.row(layout.table, primaryKey: primaryKey)).first?.model
    }

    /// ``materializeRegistrations(layout:query:columns:make:isInstance:)`` for the layout's own
    /// model type.
    private func materializeRegistrations(layout: EntityLayout, query: SelectQuery) throws -> ContiguousArray<Registration> {
        func open<T: PersistentModel>(_ type: T.Type) throws -> ContiguousArray<Registration> {
            try materializeRegistrations(layout: layout, query: query, columns: nil, make: Self.maker(T.self)) { $0 is T }
        }
        return try open(layout.modelType)
    }

    /// The models of a query's rows, in row order, as registrations: the instance registered here
    /// for a row when there is one (and `isInstance` accepts it), else a new model made by `make`
    /// and registered.
    private func materializeRegistrations(
        layout: EntityLayout, query: SelectQuery, columns: [PropertyLayout]?,
        make: ModelMaker, isInstance: (any PersistentModel) -> Bool
    ) throws -> ContiguousArray<Registration> {
        var registered = identityMap.removeValue(forKey: layout.name) ?? [:]
        // With nothing registered yet (a fresh context), no row can be a known instance: skip the
        // lookups, and register the new models once the rows are read, in a table sized for all
        // of them (growing it row by row rehashes it again and again).
        let lookUp = !registered.isEmpty
        defer { identityMap[layout.name] = registered }
        let reader = RowReader(layout: layout, columns: columns)
        let generation = container.generation
        let container = self.container
        let results = try container.store.read { db -> ContiguousArray<Registration> in
            let statement = try db.cachedStatement(sql: query.sql)
            statement.setUncheckedArguments(query.arguments)
            let cursor = try Row.fetchCursor(statement)
            var results = ContiguousArray<Registration>()
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
                        results.append(existing)
                        continue
                    }
                    let registration = make(layout, try reader.values(statement, primaryKey: primaryKey))
                    let storage = registration.storage
                    storage.primaryKey = primaryKey
                    storage.state = .registered
                    storage.context = self
                    storage.container = container
                    storage.loadedGeneration = generation
                    if lookUp { registered[primaryKey] = registration }
                    results.append(registration)
                }
            }
            return results
        }
        if !lookUp {
            registered.reserveCapacity(results.count)
            for registration in results {
                // Set by the loop above for every new model.
                if let primaryKey = registration.storage.primaryKey { registered[primaryKey] = registration }
            }
        }
        return results
    }
}
