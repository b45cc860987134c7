import Foundation
import GRDB

extension ModelContainer {
    /// Applies a batch of remote changes in one transaction, through the save pipeline of a
    /// private context whose author is the sync engine's (so the changes are not captured back
    /// into the sync log, while delete rules, inverses, unique upserts, Observation, live
    /// queries and `didSave` see an ordinary save).
    ///
    /// Records are found by record id; an upsert of a record that is not local creates it under
    /// that record id. Fields are decoded from their stored form with the properties' own codecs;
    /// references and links name records by id. A reference to a record that is not local is
    /// kept pending (the relationship stays empty) and linked when a later batch brings the
    /// record. Each record's server version is kept as the base version of later local changes.
    ///
    /// A batch that names an entity or property that does not sync, carries a value of the wrong
    /// kind or one that cannot be decoded, or gives a unique-keyed record an id other than its
    /// unique value, throws a ``SyncCaptureError`` and changes nothing. An upsert of a record whose
    /// unique value a local row already has updates that row: a record id names one record.
    @discardableResult
    package func applyRemoteChanges(_ batch: [RemoteRecordChange]) throws -> RemoteApplyResult {
        try applyRemoteChanges(batch, alsoWriting: nil)
    }

    /// Applies a batch of remote changes like ``applyRemoteChanges(_:)``, and runs `alsoWriting`
    /// in the same transaction, after the batch's rows are written (the sync engine saves its
    /// cursor and rebase state there, so they commit or roll back with the batch). An error it
    /// throws rolls the whole batch back.
    ///
    /// With `localCascades` false, the batch's deletes do not cascade to local records the batch
    /// does not delete itself: their reference to the deleted record is cleared instead. The sync
    /// engine applies its server's pages so: the server enforces delete rules and its log holds
    /// every record a cascade deleted, so a local cascade would only reach records the server
    /// keeps, through a reference only a pending local edit made.
    @discardableResult
    package func applyRemoteChanges(
        _ batch: [RemoteRecordChange], localCascades: Bool = true, alsoWriting: ((Database) throws -> Void)?
    ) throws -> RemoteApplyResult {
        guard let state = syncCapture else { throw SyncCaptureError.notEnabled }
        let context = ModelContext(self)
        context.author = state.engineAuthor
        var apply = RemoteApply(state: state, context: context)
        apply.alsoWriting = alsoWriting
        apply.localCascades = localCascades
        let result = try apply.run(batch)
        // Only when models changed: a page that settles this device's own saves records server
        // versions, and its save writes no history.
        if let token = context.lastSaveHistoryToken { postRemoteChange(historyToken: token) }
        return result
    }
}

/// One application of a remote batch (see ``ModelContainer/applyRemoteChanges(_:)``).
struct RemoteApply {
    let state: SyncCaptureState
    let context: ModelContext
    private var propertiesByName: [String: [String: PropertyLayout]] = [:]
    private var rows: [String: [String: Int64]] = [:]
    private var models: [String: [String: any PersistentModel]] = [:]
    /// Per entity, the attribute lists of the last change prepared (see `prepare`).
    private var lastAttributes: [ObjectIdentifier: (properties: [PropertyLayout], fields: [Int])] = [:]
    private var deleted: Set<RecordKey> = []
    /// The storages of the models this batch deletes.
    private var deletedStorages: Set<ObjectIdentifier> = []
    /// The models this batch deletes, in order.
    private var deletedModels: [any PersistentModel] = []
    /// Whether earlier batches left references waiting (read with the batch's rows): without
    /// any, no record of this batch can satisfy one.
    private var hasPending = true
    /// The links this batch's changes add or remove, and the sets it replaces whole (with the
    /// targets they keep): a link an earlier batch left pending among them is decided by this
    /// batch, not linked when its record arrives (see `resolvePending`).
    private var linksDecided: Set<LinkKey> = []
    private var linkSetsReplaced: [LinkSetKey: Set<String>] = [:]
    private let work = SyncApplyWork()
    private var result = RemoteApplyResult()
    /// The caller's own writes, run in the batch's transaction (see `applyRemoteChanges(_:alsoWriting:)`).
    var alsoWriting: ((Database) throws -> Void)?
    /// Whether deletes cascade to local records the batch does not delete (see
    /// `applyRemoteChanges(_:localCascades:alsoWriting:)`).
    var localCascades = true

    private struct RecordKey: Hashable {
        let entity: String
        let recordID: String
    }

    /// One to-many relationship of one record.
    private struct LinkSetKey: Hashable {
        let entity: String
        let recordID: String
        let property: String
    }

    /// One link: a to-many relationship of one record, and the linked record's id.
    private struct LinkKey: Hashable {
        let set: LinkSetKey
        let target: String
    }

    /// A change checked against the schema, its attribute values decoded.
    private struct Prepared {
        let change: RemoteRecordChange
        let plan: SyncEntityPlan
        /// The attributes the change gives values, and the position in its fields of each
        /// one's value (arrays shared by the changes that list the same fields).
        var attributes: [PropertyLayout] = []
        var attributeFields: [Int] = []
        /// The decoded attribute values, in the slots of a new storage for the entity: the new
        /// model's own storage when the record is not local, else where its setters take them from.
        var staged: AnyModelStorage?
        var references: [(property: PropertyLayout, target: String, recordID: String?)] = []
        var links: [(property: PropertyLayout, target: String, added: [String], removed: [String], replacingExcept: [String]?)] = []
    }

    init(state: SyncCaptureState, context: ModelContext) {
        self.state = state
        self.context = context
    }

    mutating func run(_ batch: [RemoteRecordChange]) throws -> RemoteApplyResult {
        var prepared: [Prepared] = []
        prepared.reserveCapacity(batch.count)
        for change in batch { prepared.append(try prepare(change)) }
        try resolve(&prepared)
        var deferred: [(item: Int, model: any PersistentModel)] = []
        deferred.reserveCapacity(prepared.count)
        // The models this batch makes (their texts take the batch's changes before the save).
        var newModels: Set<ObjectIdentifier> = []
        // By index: a `for item in prepared` copied each change with its arrays.
        for position in prepared.indices {
            let change = prepared[position].change
            let key = RecordKey(entity: change.entity, recordID: change.recordID)
            switch change.kind {
            case .delete:
                if let model = try model(key) {
                    deletedStorages.insert(ObjectIdentifier(model.storageBase))
                    deletedModels.append(model)
                    context.delete(model)
                    result.deleted += 1
                }
                deleted.insert(key)
                work.deletedRecords.append((change.entity, change.recordID))
            case .upsert:
                // A record deleted earlier in this batch starts a new life as a new row (the
                // deleted model must not be reused: the save would delete it all the same).
                let deletedInBatch = !deleted.isEmpty && deleted.remove(key) != nil
                let model: any PersistentModel
                let isNew: Bool
                let existingModel = deletedInBatch ? nil : try self.model(key)
                // Texts alone (a rejected edit taken back) change a local record only.
                if existingModel == nil, change.fields.isEmpty, change.links.isEmpty, !change.texts.isEmpty { continue }
                if let existing = existingModel {
                    model = existing
                    isNew = false
                    result.updated += 1
                } else {
                    model = try makeModel(prepared[position].plan, staged: prepared[position].staged, recordID: change.recordID)
                    models[change.entity, default: [:]][change.recordID] = model
                    isNew = true
                    result.inserted += 1
                }
                let storage = model.storageBase
                // A nil scope keeps the record's scope (the sync engine writes back values it
                // held while a local edit was pending, without a scope of their own).
                if let scope = change.scope { work.scopes[ObjectIdentifier(storage)] = .some(scope) }
                let modelKey = ObjectIdentifier(storage)
                if isNew || work.versionsOfNew[modelKey] != nil {
                    // Written with the record the save inserts for the new model.
                    work.versionsOfNew[modelKey] = change.serverVersion
                } else {
                    work.versions.append((change.entity, change.recordID, change.serverVersion, change.scope.map { .some($0) } ?? .none))
                }
                // A new model's storage is the one its values were decoded into; an existing
                // model takes them through its setters (which record the change and tell
                // Observation).
                if !isNew, let staged = prepared[position].staged {
                    try setAttributes(model, prepared[position].attributes, from: staged, entity: change.entity)
                }
                if isNew { newModels.insert(modelKey) }
                if !change.texts.isEmpty {
                    // A batch may change a record's text several times: in order.
                    for (name, text) in change.texts { work.texts[modelKey, default: [:]][name, default: []].append(text) }
                    if !newModels.contains(modelKey) {
                        try markTexts(model, change)
                    } else if let plan = state.plan(change.entity) {
                        // A model this batch makes holds what its texts' changes make, in order
                        // (an update after the insert carries edits, not the value).
                        for (name, changes) in work.texts[modelKey] ?? [:] {
                            guard let position = plan.fieldNames.firstIndex(of: name), let document = try? SyncTexts.fold(changes) else { continue }
                            _ = ModelPropertyWriter.set(model, plan.layout.columns[plan.fieldColumns[position]].keyPath, to: document.text)
                        }
                    }
                }
                if !prepared[position].references.isEmpty || !prepared[position].links.isEmpty {
                    deferred.append((position, model))
                }
            }
        }
        // References and links once every record of the batch exists, then the earlier pending
        // references that the batch's new records satisfy.
        for (position, model) in deferred {
            // A record deleted later in the batch (or deleted and made again as a new model) is
            // not linked: setting a relationship or link of the deleted model would insert it
            // again through the inverse (seeds 262, 634, 811, 895, 899, 941: an item pulled with
            // its insert and its delete in one page stayed, pointing at its list or tagged).
            let change = prepared[position].change
            let key = RecordKey(entity: change.entity, recordID: change.recordID)
            guard !deleted.contains(key), models[key.entity]?[key.recordID] === model else { continue }
            try link(prepared[position], model)
        }
        try detachKeptRecords(prepared)
        if !localCascades { try detachCascadeTargets() }
        try resolvePending()
        work.alsoWriting = alsoWriting
        context.saveInput = work
        defer { context.saveInput = nil }
        if context.hasChanges {
            try context.save()
        } else {
            try context.container.store.write { db in try work.run(in: db) }
        }
        // Counted in the batch's transaction (no read of its own), else read now.
        result.pendingReferences = try work.pendingCount ?? context.container.pendingSyncReferenceCount()
        return result
    }

    // MARK: Checking

    private mutating func properties(of plan: SyncEntityPlan) -> [String: PropertyLayout] {
        if let known = propertiesByName[plan.layout.name] { return known }
        // By sync name (a renamed property's original name) and by name, the name winning.
        var byName = Dictionary(plan.layout.properties.map { ($0.syncName, $0) }, uniquingKeysWith: { first, _ in first })
        for property in plan.layout.properties { byName[property.name] = property }
        propertiesByName[plan.layout.name] = byName
        return byName
    }

    private mutating func prepare(_ change: RemoteRecordChange) throws -> Prepared {
        guard let plan = state.plan(change.entity) else { throw SyncCaptureError.unknownEntity(change.entity) }
        var prepared = Prepared(change: change, plan: plan)
        guard change.kind == .upsert else { return prepared }
        let properties = self.properties(of: plan)
        // The changes of a batch mostly list the same fields: they share one pair of attribute
        // arrays, the last one made for the entity, while the attributes match it.
        let key = ObjectIdentifier(plan)
        let last = lastAttributes[key]
        var shared = last != nil
        var count = 0
        var ownProperties: [PropertyLayout] = []
        var ownFields: [Int] = []
        // Changes list their fields in the plan's order (the log writes them so): the field at
        // the expected position is taken without a look-up by name.
        var expected = 0
        for (offset, field) in change.fields.enumerated() {
            let named: PropertyLayout?
            if expected < plan.fieldNames.count, plan.fieldNames[expected] == field.name {
                named = plan.layout.columns[plan.fieldColumns[expected]]
            } else {
                named = properties[field.name]
            }
            guard let property = named, let column = property.columnIndex, let position = plan.fieldOfColumn[column] else {
                throw SyncCaptureError.unknownProperty(entity: change.entity, property: field.name)
            }
            expected = position + 1
            let kind = plan.fieldKinds[position]
            guard field.value.kind == kind else {
                throw SyncCaptureError.wrongKind(entity: change.entity, property: field.name, expected: kind, got: field.value.kind)
            }
            guard field.value.storedFormFitsKind else {
                throw SyncCaptureError.undecodableValue(
                    entity: change.entity, property: field.name, reason: "its stored form \(field.value.stored) is not one a \(kind) column holds")
            }
            if let target = plan.fieldTargets[position] {
                guard case let .text(recordID) = field.value.stored else {
                    prepared.references.append((property, target, nil))
                    continue
                }
                prepared.references.append((property, target, recordID))
                continue
            }
            if column == plan.recordIDColumn {
                let unique = field.value.stored.canonicalRecordID(kind: plan.recordIDKind) ?? "nil"
                guard unique == change.recordID else {
                    throw SyncCaptureError.recordIDMismatch(entity: change.entity, recordID: change.recordID, uniqueValue: unique)
                }
            }
            if shared, let last, count < last.fields.count, last.fields[count] == offset, last.properties[count] === property {
                count += 1
                continue
            }
            if shared, let last {
                // The first difference: the attributes so far are the shared arrays' prefix.
                ownProperties = Array(last.properties[0..<count])
                ownFields = Array(last.fields[0..<count])
                shared = false
            }
            ownProperties.append(property)
            ownFields.append(offset)
            count += 1
        }
        if shared, let last, count == last.fields.count {
            prepared.attributes = last.properties
            prepared.attributeFields = last.fields
        } else {
            if shared, let last {
                ownProperties = Array(last.properties[0..<count])
                ownFields = Array(last.fields[0..<count])
            }
            if !ownFields.isEmpty {
                prepared.attributes = ownProperties
                prepared.attributeFields = ownFields
                lastAttributes[key] = (ownProperties, ownFields)
            }
        }
        for link in change.links {
            // Either side of a many-to-many relationship (the log names the side that writes the
            // join table; setting the other side keeps the inverse all the same).
            guard let property = properties[link.relationship], case .joinTable? = property.relationship?.storage,
                let target = property.relationship?.destinationName, state.plan(target) != nil
            else {
                throw SyncCaptureError.unknownProperty(entity: change.entity, property: link.relationship)
            }
            prepared.links.append((property, target, link.added, link.removed, link.replacingExcept))
        }
        return prepared
    }

    /// Finds the local rows of every record the batch names and decodes the attribute values,
    /// in one read.
    private mutating func resolve(_ prepared: inout [Prepared]) throws {
        var wanted: [String: Set<String>] = [:]
        for item in prepared {
            wanted[item.change.entity, default: []].insert(item.change.recordID)
            // A reference or link to a class with subclasses may name a subclass's record.
            for reference in item.references {
                guard let id = reference.recordID else { continue }
                for entity in state.memberEntities(of: reference.target) { wanted[entity, default: []].insert(id) }
            }
            for link in item.links {
                for entity in state.memberEntities(of: link.target) { wanted[entity, default: []].formUnion(link.added + link.removed) }
            }
        }
        var found: [String: [String: Int64]] = [:]
        var hasPending = true
        try context.container.store.read { db in
            hasPending = try SyncRecords.anyPending(in: db)
            let exists = try SyncRecords.exist(in: db)
            for (entity, ids) in wanted where exists {
                found[entity] = try SyncRecords.rows(entity: entity, recordIDs: Array(ids), in: db)
            }
            let decoder = StoredValueDecoder(db: db)
            for index in prepared.indices where !prepared[index].attributes.isEmpty {
                let staged = ModelPropertyWriter.makeStorage(prepared[index].plan.layout)
                try decoder.decode(
                    prepared[index].change.fields, at: prepared[index].attributeFields, as: prepared[index].attributes,
                    into: staged, entity: prepared[index].change.entity)
                prepared[index].staged = staged
            }
        }
        rows = found
        self.hasPending = hasPending
    }

    // MARK: Models

    /// The model of a record: made or loaded by this apply, or loaded from its row.
    private mutating func model(_ key: RecordKey) throws -> (any PersistentModel)? {
        guard deleted.isEmpty || !deleted.contains(key) else { return nil }
        if let known = models[key.entity]?[key.recordID] { return known }
        guard let row = rows[key.entity]?[key.recordID], let layout = context.container.layout(named: key.entity),
            let loaded = try context.load(layout: layout, primaryKey: row)
        else { return nil }
        models[key.entity, default: [:]][key.recordID] = loaded
        return loaded
    }

    /// The model of a record that a reference or link to `entity` names: the entity's own, or,
    /// when it has synced subclasses, the first of theirs holding the record.
    private mutating func member(_ entity: String, recordID: String) throws -> (any PersistentModel)? {
        for member in state.memberEntities(of: entity) {
            if let model = try model(RecordKey(entity: member, recordID: recordID)) { return model }
        }
        return nil
    }

    /// A new model for a record, inserted into the context under the record id: its storage is
    /// the one the change's attribute values were decoded into (as a fetched model's storage is
    /// the one its row was read into), every other property at its declared default (nil, empty).
    private func makeModel(_ plan: SyncEntityPlan, staged: AnyModelStorage?, recordID: String) throws -> any PersistentModel {
        let layout = plan.layout
        let storage = staged ?? ModelPropertyWriter.makeStorage(layout)
        guard let model = ModelPropertyWriter.makeModel(layout.modelType, storage: storage) else {
            // `makeStorage` made the storage for this very model type.
            throw SwiftDataError(.loadIssueModelContainer, "a \(layout.name) cannot be made from its storage", entity: layout.name)
        }
        // Properties the change gave no value: their defaults, before anything reads them.
        let properties = layout.properties
        for index in properties.indices where index >= layout.slots.count || !storage.isInitialized(index) {
            setDefault(model, properties[index])
        }
        context.insert(model)
        work.recordIDs[ObjectIdentifier(storage)] = recordID
        return model
    }

    /// Sets an existing model's attributes to the values decoded into `staged`, through the
    /// model's setters (which record the change, tell Observation and keep the undo journal).
    private func setAttributes(_ model: any PersistentModel, _ attributes: [PropertyLayout], from staged: AnyModelStorage, entity: String) throws {
        let slots = staged.slotLayout.slots
        for property in attributes {
            let index = property.index
            // A `let` keeps the value its model was inserted with, on every device.
            guard staged.isInitialized(index), !property.isConstant else { continue }
            let value = staged.withSlot(index) { slots.witnesses[index].box(UnsafeRawPointer($0)) }
            guard ModelPropertyWriter.set(model, property.keyPath, to: value) else {
                throw SyncCaptureError.undecodableValue(entity: entity, property: property.name, reason: "the value does not fit the property's type")
            }
        }
    }

    /// Marks the merged texts a change names as changed on an existing model, whether or not the
    /// change gives a value (edits come without one), so that the save computes each from its
    /// document, in its transaction (see `SyncSaveCapture.mergeText`).
    private func markTexts(_ model: any PersistentModel, _ change: RemoteRecordChange) throws {
        let plan = state.plan(change.entity)
        for name in change.texts.keys.sorted() {
            guard let plan, let position = plan.fieldNames.firstIndex(of: name) else {
                throw SyncCaptureError.unknownProperty(entity: change.entity, property: name)
            }
            // Marked changed without a new value: the save reaches the text's column.
            let property = plan.layout.columns[plan.fieldColumns[position]]
            model.storageBase.noteChange(property.index)
        }
    }

    /// Gives a new model's property its declared default (nil, empty), as far as it has one.
    private func setDefault(_ model: any PersistentModel, _ property: PropertyLayout) {
        if let relationship = property.relationship {
            if relationship.isToMany {
                _ = ModelPropertyWriter.setEmptyCollection(model, property.keyPath)
            } else if relationship.isOptional {
                _ = ModelPropertyWriter.set(model, property.keyPath, to: nil)
            }
        } else if let value = property.defaultValue {
            _ = ModelPropertyWriter.set(model, property.keyPath, to: value)
        } else if property.codec.isOptional {
            _ = ModelPropertyWriter.set(model, property.keyPath, to: nil)
        }
    }

    /// Sets the references and links of an upserted record; those whose record is not local
    /// become pending.
    private mutating func link(_ item: Prepared, _ model: any PersistentModel) throws {
        let change = item.change
        for reference in item.references {
            work.pendingCleared.append((change.entity, change.recordID, reference.property.name))
            var target: (any PersistentModel)?
            if let id = reference.recordID {
                target = try member(reference.target, recordID: id)
                if target == nil {
                    work.pendingAdded.append(
                        SyncRecords.PendingReference(
                            entity: change.entity, recordID: change.recordID, property: reference.property.name, targetEntity: reference.target,
                            targetRecordID: id))
                }
            }
            guard ModelPropertyWriter.set(model, reference.property.keyPath, to: target) else {
                throw SyncCaptureError.undecodableValue(
                    entity: change.entity, property: reference.property.name, reason: "the relationship requires a related record")
            }
        }
        for link in item.links {
            let setKey = LinkSetKey(entity: change.entity, recordID: change.recordID, property: link.property.name)
            for id in link.added + link.removed { linksDecided.insert(LinkKey(set: setKey, target: id)) }
            if let kept = link.replacingExcept { linkSetsReplaced[setKey] = Set(link.added + kept) }
            var adding: [any PersistentModel] = []
            var removing: [any PersistentModel] = []
            for id in link.added {
                if let target = try member(link.target, recordID: id) {
                    adding.append(target)
                } else {
                    work.pendingAdded.append(
                        SyncRecords.PendingReference(
                            entity: change.entity, recordID: change.recordID, property: link.property.name, targetEntity: link.target,
                            targetRecordID: id))
                }
            }
            for id in link.removed {
                work.pendingResolved.append(
                    SyncRecords.PendingReference(
                        entity: change.entity, recordID: change.recordID, property: link.property.name, targetEntity: link.target, targetRecordID: id)
                )
                if let target = try member(link.target, recordID: id) { removing.append(target) }
            }
            if let kept = link.replacingExcept {
                // The whole set: every other linked record is unlinked (a reset's snapshot of a
                // record whose unlink this client never pulled, seed 170).
                let keep = Set(link.added + kept)
                let linked = ModelPropertyWriter.linkedModels(model, link.property.keyPath) ?? []
                let rows = linked.compactMap { target -> (entity: String, row: Int64, model: any PersistentModel)? in
                    let id = target.persistentModelID
                    return id.rowID.map { (id.entityName, $0, target) }
                }
                if !rows.isEmpty {
                    try context.container.store.read { db in
                        for linkedRow in rows {
                            guard let recordID = try SyncRecords.record(entity: linkedRow.entity, row: linkedRow.row, in: db)?.recordID else {
                                continue
                            }
                            if !keep.contains(recordID) { removing.append(linkedRow.model) }
                        }
                    }
                }
            }
            // Nothing to add or remove (a page settling this device's own insert): the
            // relationship is left as it is, unchanged, so the save records nothing of it.
            if adding.isEmpty && removing.isEmpty { continue }
            guard ModelPropertyWriter.editLinks(model, link.property.keyPath, adding: adding, removing: removing) else {
                throw SyncCaptureError.undecodableValue(entity: change.entity, property: link.property.name, reason: "the links cannot be edited")
            }
        }
    }

    /// Clears the to-one references that records this batch upserts, and does not delete later,
    /// hold to records it deletes: the server holds those records after the batch, so the
    /// deletes' local cascades must not reach them (seed 136: a reset removed a list the
    /// server no longer had, and its cascade deleted an item the snapshot held, whose reference
    /// to the list was a pending local edit; the item's row was gone and later writes of it
    /// made a row without values).
    private mutating func detachKeptRecords(_ prepared: [Prepared]) throws {
        guard !deletedStorages.isEmpty else { return }
        for item in prepared where item.change.kind == .upsert {
            let key = RecordKey(entity: item.change.entity, recordID: item.change.recordID)
            guard !deleted.contains(key), let model = models[key.entity]?[key.recordID] else { continue }
            let storage = model.storageBase
            for property in item.plan.layout.relationships {
                guard let relationship = property.relationship, !relationship.isToMany, relationship.isOptional,
                    let target = storage.relatedOne(property), deletedStorages.contains(ObjectIdentifier(target.storage))
                else { continue }
                guard ModelPropertyWriter.set(model, property.keyPath, to: nil) else {
                    throw SyncCaptureError.undecodableValue(entity: key.entity, property: property.name, reason: "the relationship cannot be cleared")
                }
            }
        }
    }

    /// Detaches the records that the cascade rules of the records this batch deletes would
    /// delete locally, unless the batch deletes them too (without `localCascades`: the server
    /// enforces delete rules and its log holds every record a cascade deleted, so a local
    /// cascade only reaches records the server keeps, through a reference the server does not
    /// have; seeds 1286, 1912: an item's
    /// pending move to a list another client deleted; the cascade deleted the item, the
    /// rejection's rollback then wrote its `list` alone into a new row and every pull failed on
    /// `SimItem.key has no value`). Their to-one reference is cleared instead (nullify).
    private mutating func detachCascadeTargets() throws {
        guard !deletedModels.isEmpty else { return }
        // The cascade relationships, loaded per entity with one query each (the save's delete
        // rules then find them loaded).
        var groups: [String: (layout: EntityLayout, storages: [AnyModelStorage])] = [:]
        for model in deletedModels {
            guard let layout = model.storageBase.layout else { continue }
            groups[layout.name, default: (layout, [])].storages.append(model.storageBase)
        }
        var cascading: [String: [PropertyLayout]] = [:]
        for (name, group) in groups {
            let read = group.layout.relationships.filter { $0.relationship?.deleteRule == .cascade }
            cascading[name] = read
            if !read.isEmpty, group.storages.count > 1 { context.preload(read, of: group.storages) }
        }
        for model in deletedModels {
            let storage = model.storageBase
            guard let layout = storage.layout, let properties = cascading[layout.name], !properties.isEmpty else { continue }
            for property in properties {
                guard let relationship = property.relationship else { continue }
                let targets = relationship.isToMany ? (storage.relatedMany(property) ?? []) : (storage.relatedOne(property).map { [$0] } ?? [])
                for target in targets where !deletedStorages.contains(ObjectIdentifier(target.storage)) {
                    guard let inverse = storage.inverse(of: property, on: target.base), let back = inverse.relationship,
                        !back.isToMany, back.isOptional
                    else { continue }
                    guard ModelPropertyWriter.set(target.model, inverse.keyPath, to: nil) else {
                        throw SyncCaptureError.undecodableValue(
                            entity: target.base.entityName, property: inverse.name, reason: "the relationship cannot be cleared")
                    }
                }
            }
        }
    }

    /// Links the pending references of earlier batches whose records this batch created.
    private mutating func resolvePending() throws {
        guard hasPending else { return }
        var created: [String: [String]] = [:]
        for (entity, byID) in models {
            for (recordID, model) in byID where model.storageBase.state == .inserted { created[entity, default: []].append(recordID) }
        }
        guard !created.isEmpty else { return }
        var pending: [SyncRecords.PendingReference] = []
        var sources: [String: Set<String>] = [:]
        try context.container.store.read { db in
            for (entity, ids) in created {
                // A reference to a superclass waits under the superclass's name.
                for target in [entity] + (state.ancestors[entity] ?? []) { pending += try SyncRecords.pending(to: target, recordIDs: ids, in: db) }
            }
            for reference in pending { sources[reference.entity, default: []].insert(reference.recordID) }
            for (entity, ids) in sources {
                let known = try SyncRecords.rows(entity: entity, recordIDs: Array(ids), in: db)
                rows[entity, default: [:]].merge(known) { current, _ in current }
            }
        }
        for reference in pending {
            // Already linked or replaced by this batch's own value of the property.
            if work.pendingCleared.contains(where: {
                $0.entity == reference.entity && $0.recordID == reference.recordID && $0.property == reference.property
            }) {
                continue
            }
            work.pendingResolved.append(reference)
            // A link this batch decided (added, removed, or left out of a set it replaced) is
            // as the batch says (seed 6469: an item's link to a tag without a local row, kept
            // pending, was removed by a rejection's rollback in the batch that brought the tag,
            // and came back with the tag).
            let setKey = LinkSetKey(entity: reference.entity, recordID: reference.recordID, property: reference.property)
            if linksDecided.contains(LinkKey(set: setKey, target: reference.targetRecordID))
                || linkSetsReplaced[setKey].map({ !$0.contains(reference.targetRecordID) }) == true
            {
                continue
            }
            guard let source = try model(RecordKey(entity: reference.entity, recordID: reference.recordID)),
                let target = try member(reference.targetEntity, recordID: reference.targetRecordID),
                let property = properties(ofEntity: reference.entity)?[reference.property]
            else { continue }
            let linked =
                property.relationship?.isToMany == true
                ? ModelPropertyWriter.editLinks(source, property.keyPath, adding: [target], removing: [])
                : ModelPropertyWriter.set(source, property.keyPath, to: target)
            if linked { result.resolvedReferences += 1 }
        }
    }

    private mutating func properties(ofEntity entity: String) -> [String: PropertyLayout]? {
        state.plan(entity).map { properties(of: $0) }
    }
}
