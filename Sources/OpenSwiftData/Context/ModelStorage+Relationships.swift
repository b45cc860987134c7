/// Relationship values of one model: reading them (turning stored keys into models on first
/// read), and writing them with their inverses kept in step on both sides.
///
/// A to-one slot holds ``ToOneSlot``, a to-many slot ``ToManySlot``. Reading a fault asks the
/// context, which returns the registered instance or loads the row(s). Before a side is changed,
/// it is loaded, so an unloaded side always equals what the store holds.
extension AnyModelStorage {
    // MARK: Slots

    final func toOneSlot(_ property: PropertyLayout) -> ToOneSlot {
        guard let values, values.isInitialized(property.index) else { return .loaded(nil) }
        return values.withSlot(property.index) { $0.load(as: ToOneSlot.self) }
    }

    final func toManySlot(_ property: PropertyLayout) -> ToManySlot {
        guard let values, values.isInitialized(property.index) else {
            return .loaded(property.relationship?.isOptional == true ? nil : [])
        }
        return values.withSlot(property.index) { $0.load(as: ToManySlot.self) }
    }

    /// Writes a slot. A change is recorded (and copies the values if they are shared with the
    /// committed ones); a load is not: what it writes is what the store holds.
    final func writeSlot<Slot>(_ property: PropertyLayout, _ value: Slot, change: Bool) {
        if change {
            context?.journalWillChange(self)
            guard let buffer = writableValues() else { return }
            buffer.store(property.index, value)
            noteChange(property.index)
        } else {
            values?.store(property.index, value)
        }
    }

    // MARK: Reading

    /// The related model of a to-one relationship, loading it on first read. A model whose
    /// deletion has been saved reads as nil.
    final func relatedOne(_ property: PropertyLayout) -> RelatedRef? {
        switch toOneSlot(property) {
        case let .loaded(ref):
            guard let ref, ref.base.state != .removed else { return nil }
            return ref
        case .fault(nil):
            writeSlot(property, ToOneSlot.loaded(nil), change: false)
            return nil
        case let .fault(key?):
            guard let context = loadingContext(), let relationship = property.relationship else { return nil }
            let ref = context.registeredOrLoaded(entity: relationship.destinationName, primaryKey: key)
            writeSlot(property, ToOneSlot.loaded(ref), change: false)
            return ref
        case .notLoaded:
            guard let context = loadingContext() else { return nil }
            let ref = context.loadRelated(of: self, property).first
            writeSlot(property, ToOneSlot.loaded(ref), change: false)
            return ref
        }
    }

    /// The related models of a to-many relationship (nil for the `nil` of an optional
    /// collection), loading them on first read. Models whose deletion has been saved are left out.
    final func relatedMany(_ property: PropertyLayout) -> [RelatedRef]? {
        storedMany(property).map(RelatedRef.withoutRemoved)
    }

    /// The references a to-many relationship holds (nil for the `nil` of an optional
    /// collection), loading them on first read; models whose deletion has been saved are still
    /// in (readers leave them out).
    final func storedMany(_ property: PropertyLayout) -> [RelatedRef]? {
        switch toManySlot(property) {
        case let .loaded(refs):
            return refs
        case .notLoaded:
            guard let context = loadingContext() else { return [] }
            let refs = context.loadRelated(of: self, property)
            writeSlot(property, ToManySlot.loaded(refs), change: false)
            return refs
        }
    }

    /// The inverse property on a related model's entity.
    final func inverse(of property: PropertyLayout, on related: AnyModelStorage) -> PropertyLayout? {
        guard let index = property.relationship?.inverseIndex, let layout = related.layout, index < layout.properties.count else { return nil }
        return layout.properties[index]
    }

    /// The properties of `related` that may hold this storage's model as the inverse of
    /// `property`: its inverse, or, for a to-one relationship that several collections of
    /// `related`'s entity share as their inverse, every one of them.
    final func inverses(of property: PropertyLayout, on related: AnyModelStorage) -> [PropertyLayout] {
        guard let shared = property.relationship?.sharingCollections, !shared.isEmpty, let layout = related.layout else {
            return inverse(of: property, on: related).map { [$0] } ?? []
        }
        return shared.filter { $0 < layout.properties.count }.map { layout.properties[$0] }
    }

    /// The other collections of `storage`'s entity that share `property`'s to-one inverse.
    final func collections(sharingInverseWith property: PropertyLayout, on storage: AnyModelStorage) -> [PropertyLayout] {
        guard let shared = property.relationship?.collectionsSharingInverse, !shared.isEmpty, let layout = storage.layout else { return [] }
        return shared.filter { $0 != property.index && $0 < layout.properties.count }.map { layout.properties[$0] }
    }

    // MARK: Releasing

    /// Turns the loaded relationships of a model whose context is going away back into faults.
    ///
    /// Related models reference each other both ways (an item its list, the list its items),
    /// and every model holds its container strongly; without this, a graph of related models
    /// that nothing else holds would keep itself, its container and the container's open files
    /// alive after its context is gone. A model still held elsewhere reads the same values:
    /// a fault loads what the store holds through the container, and only slots that hold what
    /// the store holds are faulted (a relationship the context's unsaved changes wrote is kept).
    final func releaseLoadedRelationships() {
        guard let layout, let values, state == .registered || state == .deleted else { return }
        for property in layout.relationships {
            if !changedProperties.contains(property.index) { Self.unload(property, in: values) }
            if let saved = committedCopy { Self.unload(property, in: saved) }
        }
    }

    /// Replaces a loaded relationship slot holding the store's value with the fault of it.
    private static func unload(_ property: PropertyLayout, in buffer: some SlotBuffer) {
        guard let relationship = property.relationship, buffer.isInitialized(property.index) else { return }
        let offset = buffer.slotLayout.slotInfo[property.index].offset
        if relationship.isToMany {
            guard case .loaded = buffer.load(offset: offset, as: ToManySlot.self) else { return }
            buffer.store(property.index, ToManySlot.notLoaded)
            return
        }
        guard case let .loaded(ref) = buffer.load(offset: offset, as: ToOneSlot.self) else { return }
        if case .foreignKey = relationship.storage {
            // The row's column holds the related row's key; a related model whose deletion
            // was saved is gone from the store (the column was cleared or the row deleted).
            let key = ref.flatMap { $0.base.state == .removed ? nil : $0.base.primaryKey }
            buffer.store(property.index, ToOneSlot.fault(key))
        } else {
            buffer.store(property.index, ToOneSlot.notLoaded)
        }
    }

    // MARK: Writing

    /// Sets a to-one relationship and updates the inverse on the old and the new related model.
    /// `owner` is this storage's own model.
    final func setRelatedOne(_ property: PropertyLayout, to new: RelatedRef?, owner: RelatedRef) {
        guard let relationship = property.relationship else { return }
        let old = relatedOne(property)
        if old?.storage === new?.storage, old != nil || new != nil { return }
        writeSlot(property, ToOneSlot.loaded(new), change: true)
        if let old { unlinkInverse(property, of: old, from: owner, inverseIsToMany: relationship.inverseIsToMany) }
        if let new {
            linkInverse(property, of: new, to: owner, inverseIsToMany: relationship.inverseIsToMany)
            insertLinked(new, owner: owner)
        }
    }

    /// Sets a to-many relationship and updates the inverse on every model that left or joined it.
    final func setRelatedMany(_ property: PropertyLayout, to new: [RelatedRef]?, owner: RelatedRef) {
        guard let relationship = property.relationship else { return }
        let old = relatedMany(property) ?? []
        var seen = Set<ObjectIdentifier>()
        let unique = new.map { list in list.filter { seen.insert(ObjectIdentifier($0.storage)).inserted } }
        let oldIDs = Set(old.map { ObjectIdentifier($0.storage) })
        writeSlot(property, ToManySlot.loaded(unique), change: true)
        for removed in old where !seen.contains(ObjectIdentifier(removed.storage)) {
            unlinkInverse(property, of: removed, from: owner, inverseIsToMany: relationship.inverseIsToMany)
        }
        for added in unique ?? [] where !oldIDs.contains(ObjectIdentifier(added.storage)) {
            linkInverse(property, of: added, to: owner, inverseIsToMany: relationship.inverseIsToMany)
            insertLinked(added, owner: owner)
        }
    }

    /// Inserts a model that is in no context into the context of the model it was just linked
    /// to, from either side, as SwiftData does: `inbox.letters.append(Letter())` (or
    /// `letter.mailbox = inbox`) with `inbox` in a context makes the letter a pending insert of
    /// that context at once, with its `modelContext` set. Unlinking it again does not take the
    /// insert back (nor does it in SwiftData); deleting it does.
    private func insertLinked(_ related: RelatedRef, owner: RelatedRef) {
        let target = related.base
        if target.state == .unregistered, state == .inserted || state == .registered, let context {
            context.insert(related.model)
        } else if state == .unregistered, target.state == .inserted || target.state == .registered, let context = target.context {
            context.insert(owner.model)
        }
    }

    /// Makes `related`'s inverse of `property` point at (or include) `owner`. When the inverse is
    /// to-one, the model it pointed at before loses `related` from its own side.
    private func linkInverse(_ property: PropertyLayout, of related: RelatedRef, to owner: RelatedRef, inverseIsToMany: Bool) {
        let target = related.base
        guard let inverse = inverse(of: property, on: target) else { return }
        if inverseIsToMany {
            target.addToMany(inverse, owner)
            related.model._$notifyObservers(ofChangeTo: inverse.keyPath)
            return
        }
        let previous = target.relatedOne(inverse)
        // A collection sharing its inverse with others: the model leaves whichever of them held it.
        let sharing = collections(sharingInverseWith: property, on: self)
        guard previous?.storage !== owner.storage else {
            for other in sharing where storedMany(other)?.contains(where: { $0.storage === target }) == true {
                removeFromMany(other, related)
                owner.model._$notifyObservers(ofChangeTo: other.keyPath)
            }
            return
        }
        if let previous {
            let previousBase = previous.base
            if property.relationship?.isToMany == true {
                previousBase.removeFromMany(property, related)
                for other in collections(sharingInverseWith: property, on: previousBase) {
                    previousBase.removeFromMany(other, related)
                    previous.model._$notifyObservers(ofChangeTo: other.keyPath)
                }
            } else if previousBase.relatedOne(property)?.storage === target {
                previousBase.writeSlot(property, ToOneSlot.loaded(nil), change: true)
            }
            previous.model._$notifyObservers(ofChangeTo: property.keyPath)
        }
        target.writeSlot(inverse, ToOneSlot.loaded(owner), change: true)
        related.model._$notifyObservers(ofChangeTo: inverse.keyPath)
    }

    /// Removes `owner` from `related`'s inverse of `property`.
    private func unlinkInverse(_ property: PropertyLayout, of related: RelatedRef, from owner: RelatedRef, inverseIsToMany: Bool) {
        let target = related.base
        for inverse in inverses(of: property, on: target) {
            if inverseIsToMany {
                target.removeFromMany(inverse, owner)
            } else if target.relatedOne(inverse)?.storage === owner.storage {
                target.writeSlot(inverse, ToOneSlot.loaded(nil), change: true)
            }
            related.model._$notifyObservers(ofChangeTo: inverse.keyPath)
        }
    }

    /// Adds a model to a to-many relationship, in place, without touching inverses.
    final func addToMany(_ property: PropertyLayout, _ member: RelatedRef) {
        let current = relatedMany(property)
        if current?.contains(where: { $0.storage === member.storage }) == true { return }
        mutateList(property) { list in
            if list == nil { list = [] }
            list?.append(member)
        }
    }

    /// Removes a model from a to-many relationship, in place, without touching inverses.
    final func removeFromMany(_ property: PropertyLayout, _ member: RelatedRef) {
        guard let current = relatedMany(property), current.contains(where: { $0.storage === member.storage }) else { return }
        mutateList(property) { list in list?.removeAll { $0.storage === member.storage } }
    }

    /// Changes a loaded to-many slot in place (its array is uniquely referenced while `body`
    /// runs, so appending is not a copy).
    private func mutateList(_ property: PropertyLayout, _ body: (inout [RelatedRef]?) -> Void) {
        context?.journalWillChange(self)
        guard let buffer = writableValues() else { return }
        if !buffer.isInitialized(property.index) { buffer.store(property.index, toManySlot(property)) }
        buffer.withSlot(property.index) { raw in
            let slot = raw.assumingMemoryBound(to: ToManySlot.self)
            var list: [RelatedRef]?
            if case let .loaded(refs) = slot.move() { list = refs } else { list = [] }
            list = list.map(RelatedRef.withoutRemoved)
            body(&list)
            slot.initialize(to: .loaded(list))
        }
        noteChange(property.index)
    }

    /// The relationship property at a `schemaMetadata` position, or nil when there is none.
    final func relationshipProperty(at index: Int) -> PropertyLayout? {
        guard let layout, index >= 0, index < layout.properties.count, layout.properties[index].relationship != nil else { return nil }
        return layout.properties[index]
    }

    /// The relationship property a key path names, or nil when it names none.
    final func relationshipProperty(for keyPath: AnyKeyPath) -> PropertyLayout? {
        layout?.propertyIndex(of: keyPath).flatMap(relationshipProperty(at:))
    }

    // MARK: Relationships set by an initializer

    /// Records a relationship value written by the class's initializer (through its init
    /// accessor), where the model itself cannot be named yet. Its inverse is updated by
    /// ``applyPendingInverses(owner:)``.
    final func initializeRelationship<Slot>(_ property: PropertyLayout, _ slot: Slot) {
        guard let buffer = writableValues() else { return }
        buffer.store(property.index, slot)
        noteChange(property.index)
        if property.relationship?.inverseIndex != nil { extensions().pendingInverses.append(property.index) }
    }

    /// Updates the inverses of the relationships the initializer set.
    final func applyPendingInverses(owner: RelatedRef) {
        guard let pending = extras?.pendingInverses, !pending.isEmpty, let layout else { return }
        extras?.pendingInverses = []
        for index in pending {
            let property = layout.properties[index]
            guard let relationship = property.relationship else { continue }
            if relationship.isToMany {
                for added in relatedMany(property) ?? [] {
                    linkInverse(property, of: added, to: owner, inverseIsToMany: relationship.inverseIsToMany)
                }
            } else if let added = relatedOne(property) {
                linkInverse(property, of: added, to: owner, inverseIsToMany: relationship.inverseIsToMany)
            }
        }
    }
}

extension RelatedRef {
    /// A reference to a model and its storage.
    init<Model: PersistentModel>(_ model: Model) {
        self.init(model: model, storage: model.storageBase)
    }

    /// References to the models of a relationship collection (nil for an optional collection's
    /// `nil`), each model once, in order.
    static func list<Collection: RelationshipCollection>(_ collection: Collection) -> [RelatedRef]? {
        var seen = Set<ObjectIdentifier>()
        return collection._$models.map { models in
            models.map(RelatedRef.init).filter { seen.insert(ObjectIdentifier($0.storage)).inserted }
        }
    }

    /// The references, without models whose deletion has been saved (the same array when there
    /// are none, so nothing is copied on the common path).
    static func withoutRemoved(_ refs: [RelatedRef]) -> [RelatedRef] {
        refs.contains { $0.base.state == .removed } ? refs.filter { $0.base.state != .removed } : refs
    }

    /// The models of references, as `Element`s (any model of another type left out). Inlined
    /// into the model's module from the to-many getter, so that the array is made by code
    /// specialized for `Element` (generic code looks the array's type metadata up on every call).
    @inlinable
    static func models<Element: PersistentModel>(_ refs: [RelatedRef], of type: Element.Type) -> [Element] {
        [Element](unsafeUninitializedCapacity: refs.count) { buffer, initialized in
            for ref in refs {
                let object = ref.model as AnyObject
                // The exact class is the common case: no dynamic cast.
                let isElement = ObjectIdentifier(Swift.type(of: object)) == ObjectIdentifier(Element.self)
                guard let model = isElement ? unsafeDowncast(object, to: Element.self) : object as? Element else { continue }
                buffer.initializeElement(at: initialized, to: model)
                initialized += 1
            }
        }
    }

    /// The related model's storage (always OpenSwiftData's: only the context makes references).
    var base: AnyModelStorage { unsafeDowncast(storage as AnyObject, to: AnyModelStorage.self) }

    init(_ registration: Registration) {
        self.init(model: registration.model, storage: registration.storage)
    }

    var registration: Registration { Registration(model: model, storage: base) }
}

extension AnyModelStorage {
    /// Takes the values `other` holds (the storage a superclass's initializer made for the
    /// inherited properties of a subclass instance, at the same positions) into the slots that
    /// have none yet, with the relationships whose inverses it still has to set.
    final func adoptValues(of other: AnyModelStorage) {
        guard let layout, let from = other.layout, from.slotCount <= layout.slotCount else { return }
        let witnesses = layout.slots.witnesses
        for index in 0..<from.slotCount where other.isInitialized(index) && !isInitialized(index) {
            guard ObjectIdentifier(witnesses[index].type) == ObjectIdentifier(from.slots.witnesses[index].type) else { continue }
            withSlot(index) { destination in
                other.withSlot(index) { source in witnesses[index].copy(UnsafeRawPointer(source), destination) }
            }
            markInitialized(index)
        }
        if let pending = other.extras?.pendingInverses, !pending.isEmpty {
            extensions().pendingInverses += pending
        }
    }
}
