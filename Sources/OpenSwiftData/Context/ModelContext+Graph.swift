import Foundation

/// A model's state before a save changed it, put back when the save fails, so that a failed save
/// leaves the context exactly as it was.
struct StorageSnapshot {
    let storage: AnyModelStorage
    /// A copy of the values, taken before the save first writes one (nil while it has not, and
    /// for a storage without values): most models a save touches only change state.
    private(set) var values: ValueBuffer?
    let committed: AnyModelStorage.Committed
    let changedProperties: Set<Int>
    let state: AnyModelStorage.State
    let primaryKey: Int64?
    let context: ModelContext?

    init(_ storage: AnyModelStorage) {
        self.storage = storage
        committed = storage.committed
        changedProperties = storage.changedProperties
        state = storage.state
        primaryKey = storage.primaryKey
        context = storage.context
    }

    /// Copies the values, unless they were copied already.
    mutating func captureValues() {
        if values == nil { values = storage.values?.copyValues() }
    }

    func restore() {
        if let values { storage.values?.assignValues(from: values) }
        storage.committed = committed
        storage.changedProperties = changedProperties
        storage.state = state
        storage.primaryKey = primaryKey
        storage.context = context
    }
}

extension ModelContext {
    // MARK: The save journal

    /// Records a model's state before a save changes it (only while a save runs), and its
    /// values too when the save is about to write one of them.
    func journalWillChange(_ storage: AnyModelStorage, values: Bool = false) {
        guard journal != nil else { return }
        let key = ObjectIdentifier(storage)
        if journal?[key] == nil { journal?[key] = StorageSnapshot(storage) }
        if values { journal?[key]?.captureValues() }
    }

    // MARK: Loading related models

    /// The registered instance of a row, or the row loaded and registered; nil when the row is
    /// gone or cannot be read (logged).
    func registeredOrLoaded(entity: String, primaryKey: Int64) -> RelatedRef? {
        if let registration = identityMap[entity]?[primaryKey] { return RelatedRef(registration) }
        guard let layout = container.layout(named: entity) else { return nil }
        // A foreign key to a superclass may name a subclass's row (one key space per hierarchy).
        let subclasses = container.descendants(of: layout)
        for subclass in subclasses {
            if let registration = identityMap[subclass.name]?[primaryKey] { return RelatedRef(registration) }
        }
        do {
            for candidate in [layout] + subclasses {
                if try load(layout: candidate, primaryKey: primaryKey) != nil {
                    return identityMap[candidate.name]?[primaryKey].map(RelatedRef.init)
                }
            }
        } catch {
            log("loading \(entity) row \(primaryKey) failed: \(error)")
        }
        return identityMap[entity]?[primaryKey].map(RelatedRef.init)
    }

    /// The models a relationship of a saved model holds in the store, in row order, as
    /// registered instances. Errors are logged and read as no models.
    func loadRelated(of storage: AnyModelStorage, _ property: PropertyLayout) -> [RelatedRef] {
        // `primaryKey`, not `rowKey`: the relationships of a model being deleted are loaded to
        // apply its delete rules.
        guard let relationship = property.relationship, let key = storage.primaryKey, storage.state != .removed,
            let destination = container.layout(named: relationship.destinationName)
        else { return [] }
        let query: SelectQuery
        switch relationship.storage {
        case .foreignKey:
            return []
        case .inverseForeignKey:
            guard let inverseName = relationship.inverseName else { return [] }
            query = SelectBuilder.rows(destination.table, whereColumn: inverseName, equals: key)
            // The destination's subclasses inherit the foreign key, in tables of their own.
            let subclasses = container.descendants(of: destination)
            if !subclasses.isEmpty {
                do {
                    var refs = try materializeRefs(destination, query: query)
                    for subclass in subclasses {
                        refs += try materializeRefs(subclass, query: SelectBuilder.rows(subclass.table, whereColumn: inverseName, equals: key))
                    }
                    return refs
                } catch {
                    log("loading \(storage.entityName).\(property.name) failed: \(error)")
                    return []
                }
            }
        case let .joinTable(table, isSource, _):
            query = SelectBuilder.rows(destination.table, joinedThrough: table, fromSource: isSource, key: key)
            // A link's key names a row of the destination's table or of a subclass's (one key
            // space per hierarchy): each table is joined with the links in turn.
            let subclasses = container.descendants(of: destination)
            if !subclasses.isEmpty {
                do {
                    var refs = try materializeRefs(destination, query: query)
                    for subclass in subclasses {
                        refs += try materializeRefs(
                            subclass, query: SelectBuilder.rows(subclass.table, joinedThrough: table, fromSource: isSource, key: key))
                    }
                    // In primary-key order over the tables, as prefetching gives them.
                    return refs.sorted { ($0.base.primaryKey ?? 0) < ($1.base.primaryKey ?? 0) }
                } catch {
                    log("loading \(storage.entityName).\(property.name) failed: \(error)")
                    return []
                }
            }
        }
        do {
            return try materializeRefs(destination, query: query)
        } catch {
            log("loading \(storage.entityName).\(property.name) failed: \(error)")
            return []
        }
    }

    /// The related models a slot already holds, without loading anything.
    func loadedRefs(_ storage: AnyModelStorage, _ property: PropertyLayout) -> [RelatedRef] {
        if property.relationship?.isToMany == true {
            if case let .loaded(refs?) = storage.toManySlot(property) { return refs }
            return []
        }
        if case let .loaded(ref?) = storage.toOneSlot(property) { return [ref] }
        return []
    }

    /// The related models of a relationship, loaded if needed.
    func currentRefs(_ storage: AnyModelStorage, _ property: PropertyLayout) -> [RelatedRef] {
        if property.relationship?.isToMany == true { return storage.relatedMany(property) ?? [] }
        return storage.relatedOne(property).map { [$0] } ?? []
    }

    // MARK: Inserting what is reachable

    /// Inserts every unregistered model reachable through the relationships of `start`, after
    /// updating the inverses of relationships their initializers set.
    func insertReachable(from start: [Registration]) {
        var queue = start
        var position = 0
        while position < queue.count {
            let registration = queue[position]
            position += 1
            registration.storage.applyPendingInverses(owner: RelatedRef(registration))
            guard let layout = registration.storage.layout else { continue }
            for property in layout.relationships {
                for ref in loadedRefs(registration.storage, property) where ref.base.state == .unregistered {
                    let reached = ref.registration
                    register(inserting: reached)
                    queue.append(reached)
                }
            }
        }
    }

    /// Registers an unregistered model as a pending insert.
    func register(inserting registration: Registration) {
        let storage = registration.storage
        journalWillChange(storage)
        storage.state = .inserted
        storage.context = self
        storage.container = container
        storage.captureConstants(of: registration.model)
        inserted.add(registration)
        storageDidChange(storage)
    }

    // MARK: Delete rules

    /// Applies the delete rules of every model marked for deletion, transitively: cascades mark
    /// more models, `.deny` throws while a denied relationship still holds a model that stays,
    /// and `.nullify` removes the deleted models from the loaded inverse sides of the models
    /// that stay. Nothing changes when it throws.
    func applyDeleteRules() throws {
        var closure = deleted.all
        var members = Set(closure.map { ObjectIdentifier($0.storage) })
        var denials: [(Registration, PropertyLayout, [RelatedRef])] = []
        var nullified: [(Registration, PropertyLayout)] = []
        var position = 0
        while position < closure.count {
            // Wave by wave: the relationships the rules read are loaded for the whole wave with
            // one query each, not one per model.
            let waveEnd = closure.count
            preloadDeleteRuleRelationships(closure[position..<waveEnd])
            while position < waveEnd {
                let registration = closure[position]
                position += 1
                guard let layout = registration.storage.layout else { continue }
                for property in layout.relationships {
                    guard let relationship = property.relationship else { continue }
                    switch relationship.deleteRule {
                    case .cascade:
                        for ref in currentRefs(registration.storage, property) where members.insert(ObjectIdentifier(ref.storage)).inserted {
                            closure.append(ref.registration)
                        }
                    case .deny:
                        denials.append((registration, property, currentRefs(registration.storage, property)))
                    case .nullify:
                        nullified.append((registration, property))
                    case .noAction:
                        break
                    }
                }
            }
        }
        for (registration, property, related) in denials {
            let staying = related.filter { !members.contains(ObjectIdentifier($0.storage)) }
            guard staying.isEmpty else {
                throw SwiftDataError(
                    .modelValidationFailure,
                    "\(registration.storage.entityName) \(registration.storage.ensureIdentifier()) cannot be deleted: its relationship \(property.name) has delete rule .deny and still holds \(staying.count) \(property.relationship?.destinationName ?? "model")(s)",
                    entity: registration.storage.entityName, property: property.name
                )
            }
        }
        for registration in closure { markDeleted(registration) }
        for (registration, property) in nullified {
            let owner = RelatedRef(registration)
            // Only loaded sides need updating (the store clears foreign keys itself), unless the
            // inverse is a required to-one: then every related model is loaded, so that
            // validation refuses the save instead of the store leaving it without a model.
            let related =
                requiresInverse(property, of: registration.storage)
                ? currentRefs(registration.storage, property) : loadedRefs(registration.storage, property)
            for ref in related where !members.contains(ObjectIdentifier(ref.storage)) {
                let target = ref.base
                for inverse in registration.storage.inverses(of: property, on: target) {
                    if inverse.relationship?.isToMany == true {
                        if case .loaded = target.toManySlot(inverse) { target.removeFromMany(inverse, owner) }
                    } else if target.relatedOne(inverse)?.storage === registration.storage {
                        target.writeSlot(inverse, ToOneSlot.loaded(nil), change: true)
                    }
                }
            }
        }
    }

    /// Loads, per entity, the `.cascade` and `.deny` relationships of the models of a wave of
    /// deletions, one query per relationship.
    private func preloadDeleteRuleRelationships(_ wave: ArraySlice<Registration>) {
        guard wave.count > 1 else { return }
        var groups: [String: (layout: EntityLayout, storages: [AnyModelStorage])] = [:]
        for registration in wave {
            guard let layout = registration.storage.layout else { continue }
            groups[layout.name, default: (layout, [])].storages.append(registration.storage)
        }
        for (layout, storages) in groups.values {
            let read = layout.relationships.filter { property in
                guard let rule = property.relationship?.deleteRule else { return false }
                return rule == .cascade || rule == .deny
            }
            if !read.isEmpty { preload(read, of: storages) }
        }
    }

    /// Whether the inverse of a relationship is a non-optional to-one.
    private func requiresInverse(_ property: PropertyLayout, of storage: AnyModelStorage) -> Bool {
        guard let relationship = property.relationship, let index = relationship.inverseIndex, !relationship.inverseIsToMany,
            let destination = container.layout(named: relationship.destinationName), index < destination.properties.count,
            let inverse = destination.properties[index].relationship
        else { return false }
        return !inverse.isOptional
    }

    /// Marks a model for deletion (a pending insert is simply forgotten).
    func markDeleted(_ registration: Registration) {
        let storage = registration.storage
        switch storage.state {
        case .inserted:
            journalWillChange(storage)
            inserted.remove(storage)
            storage.state = .unregistered
            storage.context = nil
        case .registered:
            journalWillChange(storage)
            storage.state = .deleted
            deleted.add(registration)
        case .deleted, .unregistered, .removed:
            break
        }
    }

    // MARK: Validation

    /// Checks the relationships that inserted and changed models set: a non-optional to-one
    /// must hold a model, to-many counts must respect `minimumModelCount`/`maximumModelCount`,
    /// and every related model must belong to this context.
    func validateRelationships() throws {
        for registration in inserted.all + changed.all {
            let storage = registration.storage
            guard storage.state == .inserted || storage.state == .registered, let layout = storage.layout else { continue }
            for property in layout.relationships {
                guard let relationship = property.relationship,
                    storage.state == .inserted || storage.changedProperties.contains(property.index)
                else { continue }
                for ref in loadedRefs(storage, property)
                where ref.base.context !== self && ref.base.state != .unregistered && ref.base.state != .removed {
                    throw SwiftDataError(
                        .modelValidationFailure,
                        "\(layout.name).\(property.name) holds a \(relationship.destinationName) that belongs to another context; pass its persistentModelID and load it with model(for:) here",
                        entity: layout.name, property: property.name
                    )
                }
                if !relationship.isToMany && !relationship.isOptional {
                    let missing: Bool
                    switch storage.toOneSlot(property) {
                    case .fault(nil), .loaded(nil): missing = true
                    case let .loaded(ref?): missing = ref.base.state == .deleted || ref.base.state == .removed
                    case .fault, .notLoaded: missing = false
                    }
                    if missing {
                        throw SwiftDataError(
                            .modelValidationFailure, "\(layout.name).\(property.name) is not optional but holds no \(relationship.destinationName)",
                            entity: layout.name, property: property.name)
                    }
                }
                if relationship.isToMany && (relationship.minimumModelCount > 0 || relationship.maximumModelCount > 0) {
                    let count = (storage.relatedMany(property) ?? []).filter { $0.base.state != .deleted }.count
                    if relationship.minimumModelCount > 0 && count < relationship.minimumModelCount {
                        throw SwiftDataError(
                            .modelValidationFailure,
                            "\(layout.name).\(property.name) holds \(count) models, fewer than its minimumModelCount of \(relationship.minimumModelCount)",
                            entity: layout.name, property: property.name)
                    }
                    if relationship.maximumModelCount > 0 && count > relationship.maximumModelCount {
                        throw SwiftDataError(
                            .modelValidationFailure,
                            "\(layout.name).\(property.name) holds \(count) models, more than its maximumModelCount of \(relationship.maximumModelCount)",
                            entity: layout.name, property: property.name)
                    }
                }
            }
        }
    }
}
