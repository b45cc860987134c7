import Foundation
import GRDB

extension ModelContext {
    /// Loads the relationships a descriptor names in `relationshipKeyPathsForPrefetching` for
    /// every fetched model, with one query per relationship (the keys travel as one JSON array
    /// argument), instead of one query per model on first read.
    ///
    /// `wholeTable` says that `models` are every row of the entity (a fetch without predicate,
    /// limit or offset): a relationship kept by the other side's foreign key (to-many, or the
    /// to-one side without the column) is then read in one pass over the related table, in
    /// primary-key order, instead of one index lookup per model (SQLite reads 50,000 children
    /// of 10,000 parents about four times faster so). Each model's related models come in
    /// primary-key order either way, as lazy loading gives them.
    func prefetch<T: PersistentModel>(_ keyPaths: [PartialKeyPath<T>], of models: [T], layout: EntityLayout, wholeTable: Bool = false) {
        guard !keyPaths.isEmpty, !models.isEmpty else { return }
        let storages = models.map { $0.storageBase }
        for keyPath in keyPaths {
            guard let index = layout.propertyIndex(of: keyPath) else { continue }
            load(layout.properties[index], of: storages, wholeTable: wholeTable, includingDeleted: false)
        }
    }

    /// Loads, with one query per relationship, the relationships `properties` name of models of
    /// one entity that are not loaded yet, models marked for deletion included: what applying
    /// delete rules to many models reads, instead of one query per model. A failure is logged,
    /// and the models then load their relationships one by one.
    func preload(_ properties: [PropertyLayout], of storages: [AnyModelStorage]) {
        guard storages.count > 1 else { return }
        for property in properties {
            load(property, of: storages, wholeTable: false, includingDeleted: true)
        }
    }

    /// Loads one relationship for all `storages` with one query (see `prefetch(_:of:layout:wholeTable:)`
    /// and `preload(_:of:)`); a failure is logged, and the models then load it one by one.
    private func load(_ property: PropertyLayout, of storages: [AnyModelStorage], wholeTable: Bool, includingDeleted: Bool) {
        guard let relationship = property.relationship, let destination = container.layout(named: relationship.destinationName) else { return }
        do {
            if relationship.isToMany || relationship.storage != .foreignKey {
                try prefetchCollections(
                    property, relationship, of: storages, destination: destination, wholeTable: wholeTable, includingDeleted: includingDeleted)
            } else {
                try prefetchTargets(property, of: storages, destination: destination)
            }
        } catch {
            log("loading \(storages.first?.entityName ?? "?").\(property.name) for \(storages.count) models at once failed: \(error)")
        }
    }

    /// To-one relationships stored as foreign keys: loads every referenced row not registered yet.
    private func prefetchTargets(_ property: PropertyLayout, of storages: [AnyModelStorage], destination: EntityLayout) throws {
        var missing = Set<Int64>()
        for storage in storages {
            if case let .fault(key?) = storage.toOneSlot(property), registered(key, in: destination) == nil { missing.insert(key) }
        }
        try materialize(missing, of: destination)
        for storage in storages {
            guard case let .fault(key) = storage.toOneSlot(property) else { continue }
            let ref = key.flatMap { registered($0, in: destination) }.map(RelatedRef.init)
            storage.writeSlot(property, ToOneSlot.loaded(ref), change: false)
        }
    }

    /// To-many relationships and to-one relationships stored on the other side: loads the related
    /// rows of every model whose side is not loaded yet, and fills each model's slot. With
    /// `includingDeleted`, models marked for deletion (whose rows still exist) count too.
    private func prefetchCollections(
        _ property: PropertyLayout, _ relationship: RelationshipLayout, of storages: [AnyModelStorage], destination: EntityLayout, wholeTable: Bool,
        includingDeleted: Bool
    ) throws {
        // The key a model's row has in the store.
        func key(_ storage: AnyModelStorage) -> Int64? {
            guard includingDeleted else { return storage.rowKey }
            return storage.state == .removed ? nil : storage.primaryKey
        }
        let waiting = storages.filter { storage in
            guard key(storage) != nil else { return false }
            if relationship.isToMany, case .notLoaded = storage.toManySlot(property) { return true }
            if !relationship.isToMany, case .notLoaded = storage.toOneSlot(property) { return true }
            return false
        }
        guard !waiting.isEmpty else { return }
        // Scanning is worth it when most of the table's rows wait for their related rows; the
        // related rows of the others are read and skipped.
        let scans = wholeTable && waiting.count * 2 >= storages.count
        let keys = { jsonKeyArray(waiting.compactMap(key)) }
        // The position in `waiting` of each owner's key, and each related model's owner position.
        let positions = OwnerPositions(keys: waiting.map(key))
        var related = RelatedGroups(owners: waiting.count)
        switch relationship.storage {
        case .foreignKey:
            return
        case .inverseForeignKey:
            guard let inverseName = relationship.inverseName,
                let inverse = destination.properties.first(where: { $0.name == inverseName })
            else { return }
            // Each related model's owner is read as the model is made, while it is in the cache.
            // The destination's subclasses inherit the foreign key, in tables of their own.
            let ownerKeys = scans ? "" : keys()
            for table in [destination] + container.descendants(of: destination) {
                let query =
                    scans
                    ? SelectBuilder.rows(table.table, referencing: inverseName)
                    : SelectBuilder.rows(table.table, groupedBy: inverseName, in: ownerKeys)
                try materializeRows(layout: table, query: query) { registration in
                    let owner: Int64?
                    switch registration.storage.toOneSlot(inverse) {
                    case let .fault(key): owner = key
                    case let .loaded(target): owner = target.flatMap { key($0.base) }
                    case .notLoaded: owner = nil
                    }
                    if let owner, let position = positions[owner] { related.add(RelatedRef(registration), owner: position) }
                }
            }
        case let .joinTable(table, isSource, _):
            let query = SelectBuilder.joinPairs(table, fromSource: isSource, in: keys())
            let pairs = try container.store.read { db in
                try Row.fetchAll(db, sql: query.sql, arguments: query.arguments)
                    .map { (near: $0[0] as Int64, far: $0[1] as Int64) }
            }
            try materialize(Set(pairs.map(\.far)).filter { registered($0, in: destination) == nil }, of: destination)
            for pair in pairs {
                if let position = positions[pair.near], let registration = registered(pair.far, in: destination) {
                    related.add(RelatedRef(registration), owner: position)
                }
            }
        }
        var groups = related.finish()
        for (position, storage) in waiting.enumerated() {
            if relationship.isToMany {
                storage.writeSlot(property, ToManySlot.loaded(groups[position]), change: false)
            } else {
                storage.writeSlot(property, ToOneSlot.loaded(groups[position].first), change: false)
            }
            groups[position] = []
        }
    }
}

extension ModelContext {
    /// The registered model of the row `key` of `destination`'s table or of one of its
    /// subclasses' (one key space per hierarchy), if any.
    fileprivate func registered(_ key: Int64, in destination: EntityLayout) -> Registration? {
        if let registration = identityMap[destination.name]?[key] { return registration }
        for subclass in container.descendants(of: destination) {
            if let registration = identityMap[subclass.name]?[key] { return registration }
        }
        return nil
    }

    /// Registers the rows `keys` names, from `destination`'s table and its subclasses' (where
    /// each key is in exactly one of them).
    fileprivate func materialize(_ keys: Set<Int64>, of destination: EntityLayout) throws {
        guard !keys.isEmpty else { return }
        let array = jsonKeyArray(keys)
        for table in [destination] + container.descendants(of: destination) {
            try materializeRows(layout: table, query: SelectBuilder.rows(table.table, primaryKeyIn: array)) { _ in }
        }
    }
}

/// The position of each owner in a list of models, by the owner's primary key: one lookup per
/// related row. Keys of one table are usually dense (a whole table's are, less what was deleted),
/// so they index an array directly; sparse keys go through a dictionary.
private struct OwnerPositions {
    /// Position + 1 by `key - base` (0: no owner with that key), when the keys are dense.
    private var table: [Int32] = []
    private var base: Int64 = 0
    private var dictionary: [Int64: Int]?

    /// The positions of `keys` (nil: a model without a row, which owns nothing).
    init(keys: [Int64?]) {
        let present = keys.compactMap { $0 }
        guard let low = present.min(), let high = present.max() else { return }
        // A table at most a few times longer than the keys, and positions that fit in 32 bits.
        let (span, overflow) = high.subtractingReportingOverflow(low)
        if !overflow, span < Int64(present.count) * 4 + 64, keys.count < Int(Int32.max) {
            base = low
            table = [Int32](repeating: 0, count: Int(span) + 1)
            for (position, key) in keys.enumerated() {
                if let key { table[Int(key - low)] = Int32(position + 1) }
            }
        } else {
            var positions: [Int64: Int] = [:]
            positions.reserveCapacity(present.count)
            for (position, key) in keys.enumerated() {
                if let key { positions[key] = position }
            }
            dictionary = positions
        }
    }

    /// The position of the owner whose key is `key`, if any.
    subscript(key: Int64) -> Int? {
        if let dictionary { return dictionary[key] }
        let (offset, overflow) = key.subtractingReportingOverflow(base)
        guard !overflow, offset >= 0, offset < Int64(table.count) else { return nil }
        let stored = table[Int(offset)]
        return stored == 0 ? nil : Int(stored) - 1
    }
}

/// The related models of each owner, gathered as they arrive, in runs of one owner's models:
/// an owner's first run is moved into its list whole (no model is copied from one array into
/// another), and the next run starts with room for as many as the last one had. Rows read
/// through the foreign key's index come grouped by owner, one run each; rows read by a scan
/// come in key order, often one owner's in a row, and a later run of an owner joins its list
/// (the run's buffer is kept for the next).
private struct RelatedGroups {
    private var groups: [[RelatedRef]]
    private var run: [RelatedRef] = []
    private var runOwner: Int?

    init(owners: Int) {
        groups = Array(repeating: [], count: owners)
    }

    /// Adds a related model of the owner at position `owner`.
    mutating func add(_ ref: consuming RelatedRef, owner: Int) {
        if owner != runOwner {
            flush()
            runOwner = owner
        }
        run.append(ref)
    }

    /// Each owner's models, in the order they arrived.
    mutating func finish() -> [[RelatedRef]] {
        flush()
        return groups
    }

    private mutating func flush() {
        guard let owner = runOwner else { return }
        if groups[owner].isEmpty {
            let size = run.count
            swap(&groups[owner], &run)
            run.reserveCapacity(size)
        } else {
            // The owner's models did not all come together: the run joins the earlier ones.
            groups[owner].append(contentsOf: run)
            run.removeAll(keepingCapacity: true)
        }
        runOwner = nil
    }
}
