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
    @_spi(Sync) public func applyRemoteChanges(_ batch: [RemoteRecordChange]) throws -> RemoteApplyResult {
        try applyRemoteChanges(batch, alsoWriting: nil)
    }

    /// Applies a batch of remote changes like ``applyRemoteChanges(_:)``, and runs `alsoWriting`
    /// in the same transaction, after the batch's rows are written (the sync engine saves its
    /// cursor and rebase state there, so they commit or roll back with the batch). An error it
    /// throws rolls the whole batch back.
    @discardableResult
    @_spi(Sync) public func applyRemoteChanges(_ batch: [RemoteRecordChange], alsoWriting: ((Database) throws -> Void)?) throws -> RemoteApplyResult {
        guard let state = syncCapture else { throw SyncCaptureError.notEnabled }
        let context = ModelContext(self)
        context.author = state.engineAuthor
        var apply = RemoteApply(state: state, context: context)
        apply.alsoWriting = alsoWriting
        return try apply.run(batch)
    }
}

/// One application of a remote batch (see ``ModelContainer/applyRemoteChanges(_:)``).
struct RemoteApply {
    let state: SyncCaptureState
    let context: ModelContext
    private var propertiesByName: [String: [String: PropertyLayout]] = [:]
    private var rows: [String: [String: Int64]] = [:]
    private var models: [String: [String: any PersistentModel]] = [:]
    private var deleted: Set<RecordKey> = []
    private let work = SyncApplyWork()
    private var result = RemoteApplyResult()
    /// The caller's own writes, run in the batch's transaction (see `applyRemoteChanges(_:alsoWriting:)`).
    var alsoWriting: ((Database) throws -> Void)?

    private struct RecordKey: Hashable {
        let entity: String
        let recordID: String
    }

    /// A change checked against the schema, its attribute values decoded.
    private struct Prepared {
        let change: RemoteRecordChange
        let plan: SyncEntityPlan
        var attributes: [(property: PropertyLayout, value: DatabaseValue)] = []
        var decoded: [Any] = []
        var references: [(property: PropertyLayout, target: String, recordID: String?)] = []
        var links: [(property: PropertyLayout, target: String, added: [String], removed: [String])] = []
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
        var deferred: [(Prepared, any PersistentModel)] = []
        for item in prepared {
            let change = item.change
            let key = RecordKey(entity: change.entity, recordID: change.recordID)
            switch change.kind {
            case .delete:
                if let model = try model(key) {
                    context.delete(model)
                    result.deleted += 1
                }
                deleted.insert(key)
                work.deletedRecords.append((change.entity, change.recordID))
            case .upsert:
                // A record deleted earlier in this batch starts a new life as a new row (the
                // deleted model must not be reused: the save would delete it all the same).
                let deletedInBatch = deleted.remove(key) != nil
                let model: any PersistentModel
                let isNew: Bool
                if !deletedInBatch, let existing = try self.model(key) {
                    model = existing
                    isNew = false
                    result.updated += 1
                } else {
                    model = try makeModel(item.plan, recordID: change.recordID, written: item.attributes)
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
                for (index, attribute) in item.attributes.enumerated() {
                    // A new model's attribute may have no value yet to read: it is written in its
                    // slot, as the model's initializer would; an existing one through its setter.
                    let written = isNew && ModelPropertyWriter.initialize(model, attribute.property, to: item.decoded[index])
                    // makeModel left it without a default: give it one before a setter reads it.
                    if isNew && !written { setDefault(model, attribute.property) }
                    guard written || ModelPropertyWriter.set(model, attribute.property.keyPath, to: item.decoded[index]) else {
                        throw SyncCaptureError.undecodableValue(entity: change.entity, property: attribute.property.name, reason: "the value does not fit the property's type")
                    }
                }
                deferred.append((item, model))
            }
        }
        // References and links once every record of the batch exists, then the earlier pending
        // references that the batch's new records satisfy.
        for (item, model) in deferred {
            try link(item, model)
        }
        try resolvePending()
        work.alsoWriting = alsoWriting
        context.syncApply = work
        defer { context.syncApply = nil }
        if context.hasChanges {
            try context.save()
        } else {
            try context.container.store.write { db in try work.run(in: db) }
        }
        result.pendingReferences = try context.container.pendingSyncReferenceCount()
        return result
    }

    // MARK: Checking

    private mutating func properties(of plan: SyncEntityPlan) -> [String: PropertyLayout] {
        if let known = propertiesByName[plan.layout.name] { return known }
        let byName = Dictionary(plan.layout.properties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        propertiesByName[plan.layout.name] = byName
        return byName
    }

    private mutating func prepare(_ change: RemoteRecordChange) throws -> Prepared {
        guard let plan = state.plan(change.entity) else { throw SyncCaptureError.unknownEntity(change.entity) }
        var prepared = Prepared(change: change, plan: plan)
        guard change.kind == .upsert else { return prepared }
        let properties = self.properties(of: plan)
        for field in change.fields {
            guard let property = properties[field.name], let column = property.columnIndex, let position = plan.fieldOfColumn[column] else {
                throw SyncCaptureError.unknownProperty(entity: change.entity, property: field.name)
            }
            let kind = plan.fieldKinds[position]
            guard field.value.kind == kind else {
                throw SyncCaptureError.wrongKind(entity: change.entity, property: field.name, expected: kind, got: field.value.kind)
            }
            guard field.value.storedFormFitsKind else {
                throw SyncCaptureError.undecodableValue(entity: change.entity, property: field.name, reason: "its stored form \(field.value.stored) is not one a \(kind) column holds")
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
            prepared.attributes.append((property, field.value.stored.databaseValue))
        }
        for link in change.links {
            // Either side of a many-to-many relationship (the log names the side that writes the
            // join table; setting the other side keeps the inverse all the same).
            guard let property = properties[link.relationship], case .joinTable? = property.relationship?.storage,
                  let target = property.relationship?.destinationName, state.plan(target) != nil else {
                throw SyncCaptureError.unknownProperty(entity: change.entity, property: link.relationship)
            }
            prepared.links.append((property, target, link.added, link.removed))
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
        try context.container.store.read { db in
            let exists = try db.tableExists(SyncRecords.table)
            for (entity, ids) in wanted where exists {
                found[entity] = try SyncRecords.rows(entity: entity, recordIDs: Array(ids), in: db)
            }
            let decoder = StoredValueDecoder(db: db)
            for index in prepared.indices where !prepared[index].attributes.isEmpty {
                let item = prepared[index]
                prepared[index].decoded = try decoder.decode(item.attributes.map(\.value), as: item.attributes.map(\.property), entity: item.change.entity)
            }
        }
        rows = found
    }

    // MARK: Models

    /// The model of a record: made or loaded by this apply, or loaded from its row.
    private mutating func model(_ key: RecordKey) throws -> (any PersistentModel)? {
        guard !deleted.contains(key) else { return nil }
        if let known = models[key.entity]?[key.recordID] { return known }
        guard let row = rows[key.entity]?[key.recordID], let layout = context.container.layout(named: key.entity),
              let loaded = try context.load(layout: layout, primaryKey: row) else { return nil }
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

    /// A new model for a record: every property at its declared default (nil, empty), inserted
    /// into the context under the record id.
    private func makeModel(_ plan: SyncEntityPlan, recordID: String, written: [(property: PropertyLayout, value: DatabaseValue)]) throws -> any PersistentModel {
        let model = ModelPropertyWriter.makeModel(plan.layout.modelType)
        // Attributes the change gives a value get it in their slot next: no default first.
        var skipped = Array(repeating: false, count: plan.layout.properties.count)
        for attribute in written where attribute.property.index < skipped.count { skipped[attribute.property.index] = true }
        for property in plan.layout.properties where property.index >= skipped.count || !skipped[property.index] {
            setDefault(model, property)
        }
        context.insert(model)
        work.recordIDs[ObjectIdentifier(model.storageBase)] = recordID
        return model
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
                    work.pendingAdded.append(SyncRecords.PendingReference(entity: change.entity, recordID: change.recordID, property: reference.property.name, targetEntity: reference.target, targetRecordID: id))
                }
            }
            guard ModelPropertyWriter.set(model, reference.property.keyPath, to: target) else {
                throw SyncCaptureError.undecodableValue(entity: change.entity, property: reference.property.name, reason: "the relationship requires a related record")
            }
        }
        for link in item.links {
            var adding: [any PersistentModel] = []
            var removing: [any PersistentModel] = []
            for id in link.added {
                if let target = try member(link.target, recordID: id) {
                    adding.append(target)
                } else {
                    work.pendingAdded.append(SyncRecords.PendingReference(entity: change.entity, recordID: change.recordID, property: link.property.name, targetEntity: link.target, targetRecordID: id))
                }
            }
            for id in link.removed {
                work.pendingResolved.append(SyncRecords.PendingReference(entity: change.entity, recordID: change.recordID, property: link.property.name, targetEntity: link.target, targetRecordID: id))
                if let target = try member(link.target, recordID: id) { removing.append(target) }
            }
            guard ModelPropertyWriter.editLinks(model, link.property.keyPath, adding: adding, removing: removing) else {
                throw SyncCaptureError.undecodableValue(entity: change.entity, property: link.property.name, reason: "the links cannot be edited")
            }
        }
    }

    /// Links the pending references of earlier batches whose records this batch created.
    private mutating func resolvePending() throws {
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
            if work.pendingCleared.contains(where: { $0.entity == reference.entity && $0.recordID == reference.recordID && $0.property == reference.property }) { continue }
            work.pendingResolved.append(reference)
            guard let source = try model(RecordKey(entity: reference.entity, recordID: reference.recordID)),
                  let target = try member(reference.targetEntity, recordID: reference.targetRecordID),
                  let property = properties(ofEntity: reference.entity)?[reference.property] else { continue }
            let linked = property.relationship?.isToMany == true
                ? ModelPropertyWriter.editLinks(source, property.keyPath, adding: [target], removing: [])
                : ModelPropertyWriter.set(source, property.keyPath, to: target)
            if linked { result.resolvedReferences += 1 }
        }
    }

    private mutating func properties(ofEntity entity: String) -> [String: PropertyLayout]? {
        state.plan(entity).map { properties(of: $0) }
    }
}
