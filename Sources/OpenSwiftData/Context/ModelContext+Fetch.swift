import Foundation
import GRDB

extension ModelContext {
    /// The models that match a descriptor, one instance per row.
    ///
    /// The predicate is translated to SQL (see `PredicateTranslator`), and sorting, limit and
    /// offset run in SQL when every sort key is a stored column (or a column reached through
    /// to-one relationships). What SQL cannot say is evaluated in memory with Foundation's own
    /// semantics: a predicate node without an SQL form (the rest of a top-level `&&` still
    /// filters in SQL), a sort key SQL does not order like Swift, and the context's unsaved
    /// changes of the entity when `includePendingChanges` is true (unsaved inserts are added,
    /// unsaved deletions removed, and changed models judged by their current values). The
    /// relationships named in `relationshipKeyPathsForPrefetching` are loaded for all results,
    /// one query each.
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [T] {
        let use = ExclusiveUse(self)
        defer { use.end() }
        let layout = try container.requireLayout(for: T.self)
        let subclasses = container.descendants(of: layout)
        guard subclasses.isEmpty else { return try fetchHierarchy(descriptor, layouts: [layout] + subclasses) }
        let results = try fetchModels(descriptor, layout: layout)
        let wholeTable = descriptor.predicate == nil && descriptor.fetchLimit == nil && (descriptor.fetchOffset ?? 0) == 0
        prefetch(descriptor.relationshipKeyPathsForPrefetching, of: results, layout: layout, wholeTable: wholeTable)
        return results
    }

    /// How a descriptor runs: what SQL filters and orders, and what memory must finish.
    struct FetchPlan {
        /// The predicate in SQL, or nil without a predicate.
        let filter: PredicateSQL?
        /// The `ORDER BY` terms, or nil when the sort runs in memory.
        let order: [OrderTerm]?
        /// Whether unsaved changes of the entity take part.
        let pending: Bool

        /// Whether SQL alone gives the exact result, window included.
        var runsInSQL: Bool { (filter?.isComplete ?? true) && order != nil && !pending }
        /// Whether SQL alone gives the exact set of matches (the order aside).
        var filtersInSQL: Bool { (filter?.isComplete ?? true) && !pending }
    }

    func plan<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, layout: EntityLayout) -> FetchPlan {
        var order = layout.orderTerms(for: descriptor.sortBy)
        // A sort through a to-one whose destination class has subclasses: the join would read
        // one table of the hierarchy (a subclass's row has its own), so memory sorts it.
        if let terms = order, terms.contains(where: { term in term.hops.contains { !container.descendants(ofEntity: $0.table).isEmpty } }) {
            order = nil
        }
        return FetchPlan(
            filter: descriptor.predicate.map { PredicateTranslator.translate($0, layout: layout) },
            order: order,
            pending: descriptor.includePendingChanges && hasPendingChanges(entity: layout.name)
        )
    }

    private func fetchModels<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, layout: EntityLayout) throws -> [T] {
        let table = layout.table
        let plan = plan(descriptor, layout: layout)
        let columns = fetchedColumns(descriptor, layout: layout)
        let names = columns?.map(\.name)
        if plan.runsInSQL {
            let query = SelectBuilder.rows(
                table, columns: names, filter: plan.filter, order: plan.order ?? [], limit: descriptor.fetchLimit, offset: descriptor.fetchOffset)
            return try materialize(T.self, layout: layout, query: query, columns: columns)
        }
        logMemoryWork(plan, descriptor, layout: layout)

        // Without pending changes, the SQL filter is exact or a superset (a conjunction's
        // translatable part); with them, a changed model may match in memory and not in its row,
        // so the context's changed and inserted models of the entity join the candidates.
        var candidates = try materialize(
            T.self, layout: layout,
            query: SelectBuilder.rows(table, columns: names, filter: plan.filter, order: plan.order ?? [], limit: nil, offset: nil), columns: columns)
        if plan.pending {
            candidates.removeAll { $0.storageBase.state == .deleted }
            var seen = Set(candidates.map { ObjectIdentifier($0) })
            for registration in changed.all + inserted.all {
                guard let model = registration.model as? T, registration.storage.state != .deleted,
                    seen.insert(ObjectIdentifier(model)).inserted
                else { continue }
                candidates.append(model)
            }
        }
        if let predicate = descriptor.predicate, !plan.filtersInSQL {
            do {
                candidates = try candidates.filter { try predicate.evaluate($0) }
            } catch {
                throw SwiftDataError(
                    .unsupportedPredicate, "evaluating the predicate of a \(layout.name) fetch failed: \(error)", entity: layout.name)
            }
        }
        if !descriptor.sortBy.isEmpty && (plan.order == nil || plan.pending) {
            candidates = stableSorted(candidates, using: descriptor.sortBy)
        }
        let start = min(max(descriptor.fetchOffset ?? 0, 0), candidates.count)
        let end = descriptor.fetchLimit.map { min(start + max($0, 0), candidates.count) } ?? candidates.count
        return Array(candidates[start..<end])
    }

    /// The models of a class and of its subclasses that match a descriptor, each row an
    /// instance of its own class, and the relationships the descriptor names prefetched.
    ///
    /// When every class's part runs in SQL (a predicate translated for each class's layout, which
    /// resolves the superclass's key paths; sort keys that are columns; no unsaved changes of the
    /// classes), one query sorts and windows the union of their tables' keys
    /// (``SelectBuilder/unionKeys(_:limit:offset:)``) and each table's rows are then read by key.
    /// Otherwise each table is read with what SQL can filter, and the rest (predicate, unsaved
    /// changes, sort, offset, limit) runs in memory. Ties go by primary key either way (one key
    /// space per hierarchy).
    private func fetchHierarchy<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, layouts: [EntityLayout]) throws -> [T] {
        let plans = layouts.map { plan(descriptor, layout: $0) }
        var results: [T]
        if let keys = try hierarchyKeys(descriptor, layouts: layouts, plans: plans) {
            results = try materialize(T.self, keys: keys, layouts: layouts)
        } else {
            results = try fetchHierarchyInMemory(descriptor, layouts: layouts, plans: plans)
        }
        // Prefetching per class: the superclass's key paths resolve in each layout.
        if !descriptor.relationshipKeyPathsForPrefetching.isEmpty {
            for layout in layouts {
                let ofClass = results.filter { $0.storageBase.entityName == layout.name }
                prefetch(descriptor.relationshipKeyPathsForPrefetching, of: ofClass, layout: layout)
            }
        }
        return results
    }

    /// The keys (and the position in `layouts` of each key's class) of a hierarchy fetch in
    /// order, read with one SQL query, or nil when part of the fetch must run in memory.
    private func hierarchyKeys<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, layouts: [EntityLayout], plans: [FetchPlan]
    ) throws -> [(key: Int64, part: Int)]? {
        guard plans.allSatisfy(\.runsInSQL) else { return nil }
        let parts = zip(layouts, plans).map { layout, plan in (table: layout.table, filter: plan.filter, order: plan.order ?? []) }
        let query = SelectBuilder.unionKeys(parts, limit: descriptor.fetchLimit, offset: descriptor.fetchOffset)
        return try container.store.read { db in
            try Row.fetchAll(db, sql: query.sql, arguments: query.arguments).map { (key: $0[0] as Int64, part: $0[1] as Int) }
        }
    }

    /// The models of `keys`, in that order: each table's rows read with one query.
    private func materialize<T: PersistentModel>(_ type: T.Type, keys: [(key: Int64, part: Int)], layouts: [EntityLayout]) throws -> [T] {
        var byKey: [Int64: T] = [:]
        byKey.reserveCapacity(keys.count)
        for (position, layout) in layouts.enumerated() {
            let ofClass = keys.filter { $0.part == position }.map(\.key)
            guard !ofClass.isEmpty else { continue }
            try materializeRows(layout: layout, query: SelectBuilder.rows(layout.table, primaryKeyIn: jsonKeyArray(ofClass))) { registration in
                if let model = registration.model as? T, let key = registration.storage.primaryKey { byKey[key] = model }
            }
        }
        return keys.compactMap { byKey[$0.key] }
    }

    /// A hierarchy fetch whose predicate, sort or unsaved changes need memory: each table read
    /// with what SQL filters, the rest applied to them together.
    private func fetchHierarchyInMemory<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, layouts: [EntityLayout], plans: [FetchPlan]
    ) throws -> [T] {
        var candidates: [T] = []
        var exact = true
        var pending = false
        for (layout, plan) in zip(layouts, plans) {
            exact = exact && plan.filtersInSQL
            pending = pending || plan.pending
            let query = SelectBuilder.rows(layout.table, columns: nil, filter: plan.filter, order: [], limit: nil, offset: nil)
            try materializeRows(layout: layout, query: query) { registration in
                if let model = registration.model as? T { candidates.append(model) }
            }
        }
        // Ties by primary key, as the SQL path breaks them (unsaved models last).
        candidates.sort { ($0.storageBase.primaryKey ?? .max) < ($1.storageBase.primaryKey ?? .max) }
        if pending {
            candidates.removeAll { $0.storageBase.state == .deleted }
            var seen = Set(candidates.map { ObjectIdentifier($0) })
            for registration in changed.all + inserted.all {
                guard let model = registration.model as? T, registration.storage.state != .deleted,
                    seen.insert(ObjectIdentifier(model)).inserted
                else { continue }
                candidates.append(model)
            }
        }
        if let predicate = descriptor.predicate, !exact {
            do {
                candidates = try candidates.filter { try predicate.evaluate($0) }
            } catch {
                throw SwiftDataError(
                    .unsupportedPredicate, "evaluating the predicate of a \(T.self) fetch failed: \(error)", entity: Schema.entityName(of: T.self))
            }
        }
        if !descriptor.sortBy.isEmpty {
            candidates = stableSorted(candidates, using: descriptor.sortBy)
        }
        let start = min(max(descriptor.fetchOffset ?? 0, 0), candidates.count)
        let end = descriptor.fetchLimit.map { min(start + max($0, 0), candidates.count) } ?? candidates.count
        return Array(candidates[start..<end])
    }

    /// The number of models that match a descriptor (`COUNT(*)` in SQL when nothing needs to be
    /// evaluated in memory).
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> Int {
        let use = ExclusiveUse(self)
        defer { use.end() }
        let layout = try container.requireLayout(for: T.self)
        // A class with subclasses counts the rows of every class's table.
        let plans = ([layout] + container.descendants(of: layout)).map { (layout: $0, plan: plan(descriptor, layout: $0)) }
        if plans.allSatisfy({ $0.plan.filtersInSQL }) {
            let total = try container.store.read { db in
                try plans.reduce(0) { sum, entry in
                    let query = SelectBuilder.count(entry.layout.table, filter: entry.plan.filter)
                    return sum + (try Int.fetchOne(db, sql: query.sql, arguments: query.arguments) ?? 0)
                }
            }
            let afterOffset = max(total - max(descriptor.fetchOffset ?? 0, 0), 0)
            return descriptor.fetchLimit.map { min(max($0, 0), afterOffset) } ?? afterOffset
        }
        return try fetch(descriptor).count
    }

    /// The identifiers of the models that match a descriptor, without materialising models when
    /// the query can run entirely in SQL.
    public func fetchIdentifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [PersistentIdentifier] {
        let use = ExclusiveUse(self)
        defer { use.end() }
        let layout = try container.requireLayout(for: T.self)
        let plan = plan(descriptor, layout: layout)
        let subclasses = container.descendants(of: layout)
        if !subclasses.isEmpty {
            // A hierarchy: the union query's keys, each under its own class's entity.
            let layouts = [layout] + subclasses
            if let keys = try hierarchyKeys(descriptor, layouts: layouts, plans: layouts.map { self.plan(descriptor, layout: $0) }) {
                let storeIdentifier = container.store.identifier
                return keys.map { PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: layouts[$0.part].name, key: .row($0.key)) }
            }
        } else if plan.runsInSQL {
            let query = SelectBuilder.primaryKeys(
                layout.table, filter: plan.filter, order: plan.order ?? [], limit: descriptor.fetchLimit, offset: descriptor.fetchOffset)
            let storeIdentifier = container.store.identifier
            return try container.store.read { db in
                try Int64.fetchAll(db, sql: query.sql, arguments: query.arguments).map {
                    PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: layout.name, key: .row($0))
                }
            }
        }
        return try fetch(descriptor).map(\.persistentModelID)
    }

    /// Visits every model that matches a descriptor, reading `batchSize` rows at a time.
    ///
    /// When the fetch runs entirely in SQL, one batch is in memory at a time: with
    /// `allowEscapingMutations` false (the default), the models of a batch that the block left
    /// unchanged are released from the context before the next batch is read, so memory stays
    /// bounded however many rows match (do not keep references to them). Models the block
    /// changed stay registered, and the next save writes them. With `allowEscapingMutations`
    /// true, every visited model stays registered. A fetch that needs memory (an untranslatable
    /// predicate, a sort SQL cannot do, unsaved changes of the entity) is read whole first.
    public func enumerate<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, batchSize: Int = 5000, allowEscapingMutations: Bool = false, block: (T) throws -> Void
    ) throws {
        let use = ExclusiveUse(self)
        defer { use.end() }
        let layout = try container.requireLayout(for: T.self)
        let plan = plan(descriptor, layout: layout)
        guard plan.runsInSQL, batchSize > 0, container.descendants(of: layout).isEmpty else {
            for model in try fetch(descriptor) { try block(model) }
            return
        }
        var offset = max(descriptor.fetchOffset ?? 0, 0)
        var remaining = descriptor.fetchLimit.map { max($0, 0) }
        let columns = fetchedColumns(descriptor, layout: layout)
        while true {
            let size = min(batchSize, remaining ?? batchSize)
            guard size > 0 else { return }
            let query = SelectBuilder.rows(
                layout.table, columns: columns?.map(\.name), filter: plan.filter, order: plan.order ?? [], limit: size, offset: offset)
            let batch = try materialize(T.self, layout: layout, query: query, columns: columns)
            prefetch(descriptor.relationshipKeyPathsForPrefetching, of: batch, layout: layout)
            for model in batch { try block(model) }
            if !allowEscapingMutations { releaseUnchanged(batch, entity: layout.name) }
            guard batch.count == size else { return }
            offset += size
            remaining = remaining.map { $0 - size }
        }
    }

    /// Unregisters the models of a batch that have no unsaved changes (of `entity`, or of
    /// each model's own when nil), so that memory holds one batch at a time. Their loaded
    /// relationships go back to faults, so that models related both ways do not keep each other
    /// (and the container) alive. A released model that is changed later is taken back by
    /// ``storageDidChange(_:)``, so its change is saved.
    func releaseUnchanged<T: PersistentModel>(_ batch: [T], entity: String?) {
        // Released models nobody kept are gone: forget them, so the table stays about a batch.
        if !releasedModels.isEmpty { releasedModels = releasedModels.filter { $0.value.model != nil } }
        for model in batch {
            let storage = model.storageBase
            let entity = entity ?? storage.entityName
            guard storage.state == .registered, !storage.hasChanges, let row = storage.primaryKey,
                identityMap[entity]?[row]?.storage === storage
            else { continue }
            identityMap[entity]?[row] = nil
            storage.releaseLoadedRelationships()
            releasedModels[ObjectIdentifier(storage)] = ReleasedModel(model)
        }
    }

    func hasPendingChanges(entity: String) -> Bool {
        guard hasChanges else { return false }
        return inserted.contains { $0.storage.entityName == entity }
            || changed.contains { $0.storage.entityName == entity }
            || deleted.contains { $0.storage.entityName == entity }
    }

    /// The columns a descriptor's `propertiesToFetch` selects (nil: all), always with the
    /// foreign keys of to-one relationships.
    func fetchedColumns<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, layout: EntityLayout) -> [PropertyLayout]? {
        guard !descriptor.propertiesToFetch.isEmpty else { return nil }
        let wanted = Set(descriptor.propertiesToFetch.compactMap { layout.propertyIndex(of: $0) })
        // A `let` is set once, by `init(backingData:)`, so its column is always read.
        let columns = layout.columns.filter { wanted.contains($0.index) || $0.relationship != nil || $0.isConstant }
        return columns.count == layout.columns.count ? nil : columns
    }

    /// An unregistered instance for an identifier whose row is gone, holding declared defaults.
    func placeholder(layout: EntityLayout, id: PersistentIdentifier) -> any PersistentModel {
        func make<T: PersistentModel>(_ type: T.Type) -> any PersistentModel {
            let storage = ModelStorage<T>.fetched(layout)
            for property in layout.properties {
                if let value = property.fallbackValue { storage.storeBoxed(property.index, value) }
            }
            storage.primaryKey = id.rowID
            storage.storeIdentifier = id.storeIdentifier
            return T(backingData: storage)
        }
        return make(layout.modelType)
    }

    /// `models` sorted by `descriptors`, ties kept in their order.
    func stableSorted<T>(_ models: [T], using descriptors: [SortDescriptor<T>]) -> [T] {
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
