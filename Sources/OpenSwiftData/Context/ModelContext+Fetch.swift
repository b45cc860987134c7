import Foundation
import GRDB

extension ModelContext {
    /// The models that match a descriptor, one instance per row.
    ///
    /// Sorting, limit and offset run in SQL when every sort key is a stored column (or a column
    /// reached through to-one relationships). The relationships named in
    /// `relationshipKeyPathsForPrefetching` are loaded for all results, one query each. With a
    /// predicate, or with pending changes of the entity (when `includePendingChanges` is true),
    /// the rows are filtered and ordered in memory with the predicate's and sort descriptors' own
    /// Swift semantics, so results always equal what evaluating them on each model would say.
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [T] {
        let layout = try container.requireLayout(for: T.self)
        let results = try fetchModels(descriptor, layout: layout)
        prefetch(descriptor.relationshipKeyPathsForPrefetching, of: results, layout: layout)
        return results
    }

    private func fetchModels<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, layout: EntityLayout) throws -> [T] {
        let table = layout.table
        let pending = descriptor.includePendingChanges && hasPendingChanges(entity: layout.name)
        let order = layout.orderTerms(for: descriptor.sortBy)
        if let order, descriptor.predicate == nil, !pending {
            let query = SelectBuilder.rows(table, order: order, limit: descriptor.fetchLimit, offset: descriptor.fetchOffset)
            return try materialize(T.self, layout: layout, query: query)
        }

        var candidates = try materialize(T.self, layout: layout, query: SelectBuilder.rows(table, order: order ?? [], limit: nil, offset: nil))
        if pending {
            candidates.removeAll { $0.storageBase.state == .deleted }
            for registration in inserted.all {
                if let model = registration.model as? T, registration.storage.state == .inserted { candidates.append(model) }
            }
        }
        if let predicate = descriptor.predicate {
            do {
                candidates = try candidates.filter { try predicate.evaluate($0) }
            } catch {
                throw SwiftDataError(.unsupportedPredicate, "evaluating the predicate of a \(layout.name) fetch failed: \(error)", entity: layout.name)
            }
        }
        if !descriptor.sortBy.isEmpty && (order == nil || pending) {
            candidates = stableSorted(candidates, using: descriptor.sortBy)
        }
        let start = min(max(descriptor.fetchOffset ?? 0, 0), candidates.count)
        let end = descriptor.fetchLimit.map { min(start + max($0, 0), candidates.count) } ?? candidates.count
        return Array(candidates[start..<end])
    }

    /// The number of models that match a descriptor (`COUNT(*)` in SQL when nothing needs to be
    /// evaluated in memory).
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> Int {
        let layout = try container.requireLayout(for: T.self)
        let pending = descriptor.includePendingChanges && hasPendingChanges(entity: layout.name)
        if descriptor.predicate == nil, !pending {
            let total = try container.store.read { db in
                try Int.fetchOne(db, sql: SelectBuilder.count(layout.table).sql) ?? 0
            }
            let afterOffset = max(total - max(descriptor.fetchOffset ?? 0, 0), 0)
            return descriptor.fetchLimit.map { min(max($0, 0), afterOffset) } ?? afterOffset
        }
        return try fetch(descriptor).count
    }

    /// The identifiers of the models that match a descriptor, without materialising models when
    /// the query can run entirely in SQL.
    public func fetchIdentifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [PersistentIdentifier] {
        let layout = try container.requireLayout(for: T.self)
        let pending = descriptor.includePendingChanges && hasPendingChanges(entity: layout.name)
        if let order = layout.orderTerms(for: descriptor.sortBy), descriptor.predicate == nil, !pending {
            let query = SelectBuilder.primaryKeys(layout.table, order: order, limit: descriptor.fetchLimit, offset: descriptor.fetchOffset)
            let storeIdentifier = container.store.identifier
            return try container.store.read { db in
                try Int64.fetchAll(db, sql: query.sql, arguments: query.arguments).map {
                    PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: layout.name, key: .row($0))
                }
            }
        }
        return try fetch(descriptor).map(\.persistentModelID)
    }

    /// Visits every model that matches a descriptor, in batches.
    public func enumerate<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, batchSize: Int = 5000, allowEscapingMutations: Bool = false, block: (T) throws -> Void) throws {
        for model in try fetch(descriptor) { try block(model) }
    }

    func hasPendingChanges(entity: String) -> Bool {
        guard hasChanges else { return false }
        return inserted.contains { $0.storage.entityName == entity }
            || changed.contains { $0.storage.entityName == entity }
            || deleted.contains { $0.storage.entityName == entity }
    }

    /// Runs a query and turns its rows into models, reusing instances already registered here.
    func materialize<T: PersistentModel>(_ type: T.Type, layout: EntityLayout, query: SelectQuery) throws -> [T] {
        let storeIdentifier = container.store.identifier
        var registered = identityMap.removeValue(forKey: layout.name) ?? [:]
        // With nothing registered yet (a fresh context), no row can be a known instance: skip the
        // lookups and register everything at the end, into a table sized once.
        let lookUp = !registered.isEmpty
        var fresh: [(primaryKey: Int64, registration: Registration)] = []
        defer {
            registered.reserveCapacity(registered.count + fresh.count)
            for (primaryKey, registration) in fresh { registered[primaryKey] = registration }
            identityMap[layout.name] = registered
        }
        let reader = RowReader(layout: layout)
        return try container.store.read { db in
            let statement = try db.cachedStatement(sql: query.sql)
            statement.setUncheckedArguments(query.arguments)
            let cursor = try Row.fetchCursor(statement)
            var results: [T] = []
            try Materialization.run {
                while try cursor.next() != nil {
                    let primaryKey = reader.primaryKey(statement)
                    if lookUp, let existing = registered[primaryKey], let model = existing.model as? T {
                        results.append(model)
                        continue
                    }
                    let values = try reader.values(statement, primaryKey: primaryKey)
                    let (model, created) = T._$materialize(layout: layout, values: values)
                    // `_$materialize` always returns the `ModelStorage<T>` it made.
                    let storage = unsafeDowncast(created, to: AnyModelStorage.self)
                    storage.primaryKey = primaryKey
                    storage.storeIdentifier = storeIdentifier
                    storage.state = .registered
                    storage.context = self
                    storage.container = container
                    let registration = Registration(model: model, storage: storage)
                    if lookUp {
                        registered[primaryKey] = registration
                    } else {
                        fresh.append((primaryKey, registration))
                    }
                    results.append(model)
                }
            }
            return results
        }
    }

    /// Loads one row by primary key, or returns nil when it does not exist.
    func load(layout: EntityLayout, primaryKey: Int64) throws -> (any PersistentModel)? {
        func open<T: PersistentModel>(_ type: T.Type) throws -> (any PersistentModel)? {
            try materialize(T.self, layout: layout, query: SelectBuilder.row(layout.table, primaryKey: primaryKey)).first
        }
        return try open(layout.modelType)
    }

    /// An unregistered instance for an identifier whose row is gone, holding declared defaults.
    func placeholder(layout: EntityLayout, id: PersistentIdentifier) -> any PersistentModel {
        func make<T: PersistentModel>(_ type: T.Type) -> any PersistentModel {
            let values = ValueBuffer.make(layout)
            for property in layout.properties {
                if let value = property.fallbackValue { values.storeBoxed(property.index, value) }
            }
            let storage = ModelStorage<T>(layout: layout, values: values)
            storage.primaryKey = id.rowID
            storage.storeIdentifier = id.storeIdentifier
            return T(backingData: storage)
        }
        return make(layout.modelType)
    }

    private func stableSorted<T>(_ models: [T], using descriptors: [SortDescriptor<T>]) -> [T] {
        models.enumerated().sorted { lhs, rhs in
            for descriptor in descriptors {
                switch descriptor.compare(lhs.element, rhs.element) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return lhs.offset < rhs.offset
        }.map(\.element)
    }
}
