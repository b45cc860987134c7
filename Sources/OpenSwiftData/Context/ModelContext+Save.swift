import Foundation
import GRDB

extension ModelContext {
    /// Writes every pending insert, change and deletion in one SQLite transaction.
    ///
    /// Nothing is written when any part fails (a value that cannot be encoded, a uniqueness
    /// conflict across two rows, a read-only store): the error is thrown and the context keeps
    /// its pending changes. An inserted model whose unique values match an existing row updates
    /// that row instead of adding one (an upsert) and takes its identifier. Saving with no
    /// changes does no I/O.
    public func save() throws {
        let use = ExclusiveUse(self)
        defer { use.end() }
        guard hasChanges else { return }
        let store = container.store
        guard !store.isReadOnly else {
            throw SwiftDataError(.readOnlyStore, "save() on a context whose configuration has allowsSave: false; nothing was written")
        }
        NotificationCenter.default.post(name: ModelContext.willSave, object: self)

        // Everything below changes models only through the journal, so a failure puts every
        // model and every pending list back as it was.
        let lists = (inserted, changed, deleted)
        journal = [:]
        journaledKeys = []
        link.isSaving = true
        func endJournal() {
            journal = nil
            journaledKeys = []
            link.isSaving = false
        }
        let work: SaveWork
        let keys: [(row: Int64, upserted: Bool)]
        let batchRemoved: [PersistentIdentifier]
        let historyID: Int64?
        let merged: [MergedWrite]
        do {
            insertReachable(from: inserted.all + changed.all)
            try applyDeleteRules()
            try validateRelationships()
            work = SaveWork(
                batchDeletes: batchDeletes,
                deletions: deleted.all,
                updates: changed.all.filter { $0.storage.state == .registered && !$0.storage.changedProperties.isEmpty },
                insertions: inserted.all
            )
            (keys, batchRemoved, historyID, merged) = try write(work, to: store)
        } catch {
            for (storage, key) in journaledKeys.reversed() { storage.primaryKey = key }
            for snapshot in (journal ?? [:]).values { snapshot.restore() }
            (inserted, changed, deleted) = lists
            endJournal()
            throw error
        }
        // Written: nothing is put back from here on, so writes made while the save finishes
        // (by `didSave` observers, say) need no journal.
        endJournal()
        container.didCommitSave()
        finishSave(work, in: store, keys: keys, batchRemoved: batchRemoved, historyID: historyID, merged: merged)
    }

    /// What a save writes, settled once delete rules and auto-insertion have run.
    private struct SaveWork {
        /// Deletions by predicate, run as `DELETE` statements before the rest.
        let batchDeletes: [BatchDelete]
        let deletions: [Registration]
        /// Registered models with changed properties.
        let updates: [Registration]
        let insertions: [Registration]
    }

    /// Writes the pending changes in one transaction and returns the row of each insertion (and
    /// whether it updated an existing row), the rows batch deletions removed, and the number of
    /// the history transaction.
    private func write(
        _ work: SaveWork, to store: SQLiteStore
    ) throws -> (keys: [(row: Int64, upserted: Bool)], batchRemoved: [PersistentIdentifier], historyID: Int64?, merged: [MergedWrite]) {
        let (deletions, updates, insertions) = (work.deletions, work.updates, work.insertions)
        let author = self.author
        // The history log's capture, and sync capture's when the container has it on (none
        // otherwise: no work per row).
        let (history, captures) = container.makeCaptures(author: author, context: self, expectedInsertions: insertions.count)
        // Large `.externalStorage` values go to files in the transaction (nil: all inline).
        let attachments = store.attachments
        return try store.write { db in
            var references = DeletedReferences(container: container)
            let batchRemoved = try runBatchDeletes(work.batchDeletes, db: db, references: &references, captures: captures)
            var writers: [String: TableWriter] = [:]
            // One writer per entity and save: each prepares its statements once.
            func writer(for layout: EntityLayout) -> TableWriter {
                if let existing = writers[layout.name] { return existing }
                let created = TableWriter(table: layout.table, db: db)
                writers[layout.name] = created
                return created
            }
            // Deletions by entity, in three passes: the values tombstones keep (read before any
            // row changes), the foreign keys of rows that stay (one statement per entity and
            // referencing column, sparing the rows this save deletes too), then the rows.
            var deleted: [(layout: EntityLayout, rows: [Int64])] = []
            var groupOf: [String: Int] = [:]
            for registration in deletions {
                let storage = registration.storage
                guard let layout = storage.layout, let row = storage.primaryKey else { continue }
                if let group = groupOf[layout.name] {
                    deleted[group].rows.append(row)
                } else {
                    groupOf[layout.name] = deleted.count
                    deleted.append((layout, [row]))
                }
            }
            // Per group, each row's tombstone values (none read for an entity that keeps none).
            let tombstones = try deleted.map { layout, rows in
                try rows.map { row in try DeletedReferences.storedPreservedValues(of: layout, row: row, in: db) }
            }
            let sparing = Dictionary(uniqueKeysWithValues: deleted.map { ($0.layout.name, jsonKeyArray($0.rows)) })
            for (layout, rows) in deleted {
                try references.clear(
                    referencesTo: layout, rows: "SELECT value FROM json_each(?)", arguments: [jsonKeyArray(rows).databaseValue], sparing: sparing,
                    captures: captures, db: db)
            }
            for ((layout, rows), values) in zip(deleted, tombstones) {
                for capture in captures { try capture.willDelete(layout, rows: .keys(rows), in: db) }
                for (row, preserved) in zip(rows, values) {
                    try writer(for: layout).delete(primaryKey: row)
                    for capture in captures { capture.deleted(layout, row: row) { preserved[$0.name] } }
                }
            }

            // Inserted rows are written one by one (a model whose unique values match an
            // earlier row, also one inserted by this save, updates it). A foreign key to a model
            // inserted later in the save is written as NULL first and set once that row exists.
            var keys: [(row: Int64, upserted: Bool)] = []
            // Upserts are recorded with their values, once foreign keys are fixed up.
            var upserts: [(Registration, row: Int64, values: [DatabaseValue])] = []
            var nextKeys: [String: Int64] = [:]
            var families: [String: [String]] = [:]
            var fixups: [(Registration, [Int])] = []
            // Columns a capture merged: the models show the merged values once the save commits.
            var merged: [MergedWrite] = []
            for registration in insertions {
                let storage = registration.storage
                guard let layout = storage.layout else {
                    throw SwiftDataError(
                        .loadIssueModelContainer, "\(type(of: registration.model)) cannot be stored; see the container's schema errors")
                }
                guard container.layout(named: layout.name) === layout else {
                    throw SwiftDataError(
                        .loadIssueModelContainer,
                        "\(layout.name) is not part of the container's schema; add it to the types the container is created with", entity: layout.name
                    )
                }
                let table = writer(for: layout)
                var values = try layout.columns.map { try stored(storage, $0, layout, attachments) }
                let pending = layout.columns.indices.filter { column in
                    guard values[column].isNull, layout.columns[column].relationship != nil,
                        case .loaded(_?) = storage.toOneSlot(layout.columns[column])
                    else { return false }
                    return true
                }
                if !pending.isEmpty { fixups.append((registration, pending)) }
                let conflicts = try run(layout) { try table.conflictingRows(values) }
                if conflicts.count > 1 {
                    throw SwiftDataError(
                        .modelValidationFailure,
                        "an inserted \(layout.name) matches \(conflicts.count) different existing rows on its unique properties", entity: layout.name)
                }
                journaledKeys.append((storage, storage.primaryKey))
                if let existing = conflicts.first {
                    // The row takes the inserted model's values; a column a capture merges
                    // adds the inserted value to the row's (nothing was read before: `seen`
                    // nil), as the server adds an inserted counter to an existing record's.
                    for capture in captures {
                        for column in capture.mergedColumns(of: layout) {
                            guard
                                let result = try capture.merge(
                                    registration, layout: layout, row: existing, column: column, seen: nil, written: values[column], in: db)
                            else { continue }
                            values[column] = result.stored
                            let property = layout.columns[column]
                            merged.append(
                                MergedWrite(
                                    registration: registration, index: property.index, keyPath: property.keyPath,
                                    value: result.replaces ? result.value : nil, difference: nil))
                        }
                    }
                    try run(layout) { try table.update(primaryKey: existing, columns: Array(layout.columns.indices), values: values) }
                    storage.primaryKey = existing
                    keys.append((existing, true))
                    upserts.append((registration, existing, values))
                } else {
                    // The classes of a hierarchy share one key space, so that a foreign key to
                    // the superclass names one row whichever class's table holds it.
                    let family = container.keyFamily(of: layout)
                    let familyKey = family.first ?? layout.name
                    families[familyKey] = family
                    let row =
                        try nextKeys[familyKey]
                        ?? family.reduce(Int64(1)) { try max($0, HistoryLog.nextPrimaryKey(of: $1, sequence: store.sequence(of: $1), in: db)) }
                    nextKeys[familyKey] = row + 1
                    try run(layout) { try table.insert(values, primaryKey: row) }
                    storage.primaryKey = row
                    keys.append((row, false))
                    for capture in captures { try capture.inserted(registration, layout: layout, row: row, values: values, in: db) }
                }
            }
            for (familyKey, next) in nextKeys {
                for entity in families[familyKey] ?? [familyKey] {
                    try HistoryLog.recordLargestPrimaryKey(next - 1, of: entity, sequence: store.sequence(of: entity), in: db)
                }
            }
            var fixedValues: [ObjectIdentifier: [(column: Int, value: DatabaseValue)]] = [:]  // for upserts
            for (registration, columns) in fixups {
                let storage = registration.storage
                guard let layout = storage.layout, let row = storage.primaryKey else { continue }
                let values = try columns.map { try encode(storage, layout.columns[$0], layout) }
                try run(layout) { try writer(for: layout).update(primaryKey: row, columns: columns, values: values) }
                fixedValues[ObjectIdentifier(storage)] = Array(zip(columns, values))
                for capture in captures { capture.foreignKeysFixed(registration, layout: layout, columns: columns, values: values) }
            }
            for (registration, row, values) in upserts {
                let storage = registration.storage
                guard let layout = storage.layout else { continue }
                var values = values
                for (column, value) in fixedValues[ObjectIdentifier(storage)] ?? [] { values[column] = value }
                for capture in captures { try capture.upserted(registration, layout: layout, row: row, values: values, in: db) }
            }
            // A row an inserted model upserted onto takes that model's values, in memory too (the
            // instance registered for the row gets them in `finishSave`): that instance's own
            // pending changes are not written over them.
            var upsertedRows: [String: Set<Int64>] = [:]
            for (registration, row, _) in upserts { upsertedRows[registration.storage.entityName, default: []].insert(row) }
            for registration in updates {
                let storage = registration.storage
                guard let layout = storage.layout, let row = storage.primaryKey,
                    upsertedRows[layout.name]?.contains(row) != true
                else { continue }
                let changed = storage.changedProperties.sorted()
                let changedColumns = changed.compactMap { layout.properties[$0].columnIndex }
                var values = try changedColumns.map { try stored(storage, layout.columns[$0], layout, attachments) }
                // Columns a capture merges (a synced counter) take the value it merged.
                for capture in captures {
                    let mergedColumns = capture.mergedColumns(of: layout)
                    guard !mergedColumns.isEmpty else { continue }
                    for (position, column) in changedColumns.enumerated() where mergedColumns.contains(column) {
                        let property = layout.columns[column]
                        var seen: DatabaseValue?
                        if let copy = storage.committedCopy, copy.isInitialized(property.index) {
                            seen = try copy.withSlot(property.index) { try property.codec.encodeSlot($0) }
                        }
                        guard
                            let result = try capture.merge(
                                registration, layout: layout, row: row, column: column, seen: seen, written: values[position], in: db)
                        else { continue }
                        values[position] = result.stored
                        merged.append(
                            MergedWrite(
                                registration: registration, index: property.index, keyPath: property.keyPath,
                                value: result.replaces ? result.value : nil, difference: result.difference))
                    }
                }
                try run(layout) { try writer(for: layout).update(primaryKey: row, columns: changedColumns, values: values) }
                for capture in captures {
                    try capture.updated(registration, layout: layout, row: row, properties: changed, columns: changedColumns, values: values, in: db)
                }
            }
            let upserted = Set(zip(insertions, keys).filter(\.1.upserted).map { ObjectIdentifier($0.0.storage) })
            try writeJoinRows(insertions: insertions, updates: updates, upserted: upserted, db: db, captures: captures)
            for capture in captures { try capture.finish(author: author, in: db) }
            return (keys, batchRemoved, history.transaction, merged)
        }
    }

    /// Brings the in-memory state in line with the committed store and posts `didSave`.
    private func finishSave(
        _ work: SaveWork, in store: SQLiteStore, keys: [(row: Int64, upserted: Bool)], batchRemoved: [PersistentIdentifier], historyID: Int64?,
        merged: [MergedWrite]
    ) {
        let (deletions, updates, insertions) = (work.deletions, work.updates, work.insertions)
        if undoManager != nil {
            // A merged column's undo takes back the save's difference from whatever the
            // property then holds, never its value from before the save (others' contributions
            // landed since stay).
            var mergedIndices: [ObjectIdentifier: Set<Int>] = [:]
            for write in merged { mergedIndices[ObjectIdentifier(write.registration.storage), default: []].insert(write.index) }
            let updated = Set(updates.map { ObjectIdentifier($0.storage) })
            registerUndo(
                updates: updates.compactMap { registration in
                    let counters = mergedIndices[ObjectIdentifier(registration.storage)] ?? []
                    return registration.storage.committedCopy.map {
                        (registration, registration.storage.changedProperties.sorted().filter { !counters.contains($0) }, $0)
                    }
                },
                differences: merged.compactMap { write in
                    guard updated.contains(ObjectIdentifier(write.registration.storage)), let difference = write.difference else { return nil }
                    return (write.registration, write.keyPath, difference)
                },
                insertions: zip(insertions, keys).filter { !$0.1.upserted }.map(\.0),
                deletions: deletions
            )
        }
        var insertedIDs: [PersistentIdentifier] = []
        var updatedIDs: [PersistentIdentifier] = []
        var deletedIDs: [PersistentIdentifier] = batchRemoved
        batchDeletes.removeAll()
        for registration in deletions {
            let storage = registration.storage
            deletedIDs.append(storage.ensureIdentifier())
            if let row = storage.primaryKey { identityMap[storage.entityName]?[row] = nil }
            storage.state = .removed
            storage.context = nil
        }
        // The models show what merged columns hold (set as the app would, so observers see it),
        // then take it as committed.
        for write in merged { write.apply() }
        for registration in updates {
            registration.storage.commit()
            updatedIDs.append(registration.storage.ensureIdentifier())
        }
        for (registration, (row, upserted)) in zip(insertions, keys) {
            let storage = registration.storage
            if let previous = identityMap[storage.entityName]?[row], previous.storage !== storage {
                // The row already had an instance here: the inserted model replaces it.
                if let values = storage.values { previous.storage.values?.assignValues(from: values) }
                previous.storage.commit()
                previous.storage.state = .unregistered
                previous.storage.context = nil
                changed.remove(previous.storage)
            }
            storage.primaryKey = row
            storage.storeIdentifier = store.identifier
            storage.temporaryID = nil
            storage.state = .registered
            storage.commit()
            identityMap[storage.entityName, default: [:]][row] = registration
            if upserted {
                updatedIDs.append(storage.ensureIdentifier())
            } else {
                insertedIDs.append(storage.ensureIdentifier())
            }
        }
        inserted.removeAll()
        changed.removeAll()
        deleted.removeAll()

        let all = insertedIDs + updatedIDs + deletedIDs
        let historyToken = historyID.map { DefaultHistoryToken(storeIdentifier: store.identifier, transaction: $0) }
        lastSaveHistoryToken = historyToken
        container.broadcaster.publish(
            SaveEvent(
                entities: Set(all.map(\.entityName)), inserted: insertedIDs, updated: updatedIDs, deleted: deletedIDs,
                author: author, historyToken: historyToken
            ))
        NotificationCenter.default.post(
            name: ModelContext.didSave, object: self,
            userInfo: [
                NotificationKey.insertedIdentifiers.rawValue: insertedIDs,
                NotificationKey.updatedIdentifiers.rawValue: updatedIDs,
                NotificationKey.deletedIdentifiers.rawValue: deletedIDs,
            ]
        )
    }

    /// Rewrites the join-table rows of the many-to-many relationships that inserted and changed
    /// models hold, from the side that owns each join table.
    /// An upserted insertion took over an existing row, whose links are replaced too.
    private func writeJoinRows(
        insertions: [Registration], updates: [Registration], upserted: Set<ObjectIdentifier>, db: Database, captures: [any SaveCapture]
    ) throws {
        for registration in insertions + updates {
            let storage = registration.storage
            guard let layout = storage.layout, let row = storage.primaryKey, !layout.relationships.isEmpty else { continue }
            for property in layout.relationships {
                guard case let .joinTable(table, _, writes)? = property.relationship?.storage, writes,
                    storage.state == .inserted || storage.changedProperties.contains(property.index),
                    case let .loaded(refs) = storage.toManySlot(property)
                else { continue }
                let source = quoted(JoinTableDescription.sourceColumn)
                let target = quoted(JoinTableDescription.targetColumn)
                let rewrites = storage.state != .inserted || upserted.contains(ObjectIdentifier(storage))
                // The links before, when a capture records this relationship's additions and
                // removals.
                let captured = captures.contains { $0.capturesLinks(property, of: layout) }
                var old: [Int64]?
                if rewrites {
                    if captured {
                        old = try Int64.fetchAll(
                            db.cachedStatement(sql: "SELECT \(target) FROM \(quoted(table.name)) WHERE \(source) = ? ORDER BY \(target)"),
                            arguments: [row])
                    }
                    try db.cachedStatement(sql: "DELETE FROM \(quoted(table.name)) WHERE \(source) = ?").execute(arguments: [row])
                }
                let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO \(quoted(table.name)) (\(source), \(target)) VALUES (?, ?)")
                var new: [Int64] = []
                for ref in refs ?? [] {
                    guard let key = ref.base.rowKey else { continue }
                    try insert.execute(arguments: [row, key])
                    if captured { new.append(key) }
                }
                if captured {
                    for capture in captures {
                        try capture.linksChanged(registration, layout: layout, relationship: property, row: row, old: old, new: new, in: db)
                    }
                }
            }
        }
    }

    /// Encodes one property's value, naming the entity and property when it cannot be.
    private func encode(_ storage: AnyModelStorage, _ property: PropertyLayout, _ layout: EntityLayout) throws -> DatabaseValue {
        guard let values = storage.values, values.isInitialized(property.index) else {
            throw SwiftDataError(.valueEncodingFailure, "\(layout.name).\(property.name) has no value", entity: layout.name, property: property.name)
        }
        do {
            return try values.withSlot(property.index) { try property.codec.encodeSlot($0) }
        } catch {
            throw SwiftDataError(
                .valueEncodingFailure, "\(layout.name).\(property.name) cannot be stored: \(error)", entity: layout.name, property: property.name)
        }
    }

    /// The value a column stores for a property: its encoded value, or for a large
    /// `.externalStorage` value the reference to the file it was just written to (in the
    /// save's transaction; see ``StoreAttachments``).
    private func stored(
        _ storage: AnyModelStorage, _ property: PropertyLayout, _ layout: EntityLayout, _ attachments: StoreAttachments?
    ) throws -> DatabaseValue {
        let value = try encode(storage, property, layout)
        guard property.isExternallyStored, let attachments else { return value }
        do {
            // The sync engine's saves (which carry their work in `saveInput`) write pulled
            // remote references as they are.
            return try attachments.externalize(value, column: property.name, of: layout.name, keepingRemote: saveInput != nil)
        } catch let error as SwiftDataError {
            throw SwiftDataError(error.code, "\(layout.name).\(property.name): \(error.detail)", entity: layout.name, property: property.name)
        }
    }

    /// Runs a write, turning constraint violations into ``SwiftDataError/modelValidationFailure``.
    private func run<T>(_ layout: EntityLayout, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw SwiftDataError(
                .modelValidationFailure, "saving \(layout.name) violates a constraint: \(error.message ?? "\(error)")", entity: layout.name)
        }
    }

    /// The keys of `didSave`'s `userInfo`.
    public enum NotificationKey: String {
        /// The generation of the query results.
        case queryGeneration
        /// Whether every identifier was invalidated.
        case invalidatedAllIdentifiers
        /// The identifiers of inserted models (`[PersistentIdentifier]`).
        case insertedIdentifiers
        /// The identifiers of updated models (`[PersistentIdentifier]`).
        case updatedIdentifiers
        /// The identifiers of deleted models (`[PersistentIdentifier]`).
        case deletedIdentifiers
    }

    /// Posted on `NotificationCenter.default`, with the context as object, before a save writes.
    public static let willSave = Notification.Name("OpenSwiftData.ModelContext.willSave")
    /// Posted on `NotificationCenter.default`, with the context as object, after a save has
    /// committed; `userInfo` holds the identifiers under ``NotificationKey`` raw values.
    public static let didSave = Notification.Name("OpenSwiftData.ModelContext.didSave")
}
