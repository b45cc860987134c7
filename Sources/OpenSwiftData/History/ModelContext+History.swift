import Foundation
import GRDB
import GRDBSQLite

extension ModelContext {
    /// The history transactions that match a descriptor: every committed save of any context
    /// of the store, with its author, time, token and changes.
    ///
    /// Insertions carry their rows' current values (``HistoryChange/storedValues``), filled in
    /// for the transactions returned; a predicate evaluated in memory sees them without.
    /// Entries written before a migration renamed an entity or a property name the new ones.
    ///
    /// Only ``DefaultHistoryTransaction`` is available; asking for another transaction type
    /// throws ``SwiftDataError/invalidTransactionFetchRequest``. A descriptor that compares the
    /// token with one from before transactions removed by ``deleteHistory(_:)`` throws
    /// ``SwiftDataError/historyTokenExpired``: changes after that token may be gone.
    ///
    /// ```swift
    /// let descriptor = HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.token > lastToken })
    /// for transaction in try context.fetchHistory(descriptor) {
    ///     for change in transaction.changes { print(change.changedPersistentIdentifier) }
    /// }
    /// ```
    public func fetchHistory<T: HistoryTransaction>(_ descriptor: HistoryDescriptor<T>) throws -> [T] {
        try fetchHistory(defaultDescriptor(descriptor), checksExpiry: true).compactMap { $0 as? T }
    }

    /// The matching transactions, in order and within the limit. With `fillsInserts`, the
    /// insertions of the transactions returned carry their rows' values (see
    /// ``InsertedValues``); `deleteHistory`, which needs only their numbers, skips that.
    private func fetchHistory(
        _ descriptor: HistoryDescriptor<DefaultHistoryTransaction>, checksExpiry: Bool, fillsInserts: Bool = true
    ) throws -> [DefaultHistoryTransaction] {
        try container.store.read { db -> [DefaultHistoryTransaction] in
            let (condition, isComplete) = try historyCondition(descriptor.predicate, db: db, checksExpiry: checksExpiry)
            let limit = descriptor.fetchLimit > 0 && isComplete && descriptor.sortBy.isEmpty ? Int(clamping: descriptor.fetchLimit) : nil
            var entries = try HistoryLog.entries(where: condition, limit: limit, in: db)
            // Entries written before a migration renamed entities or properties, under the new names.
            HistoryRenames.apply(try HistoryRenames.all(in: db), to: &entries)
            var names = DeclaredRenames(container)
            names.apply(to: &entries)
            // Values kept in files are handed out as their bytes, never as references.
            try container.store.attachments?.resolve(&entries)
            let decoder = try TombstoneDecoder(db: db)
            var transactions = try entries.map { try transaction(from: $0, decoder: decoder) }
            if let predicate = descriptor.predicate, !isComplete {
                do {
                    transactions = try transactions.filter { try predicate.evaluate($0) }
                } catch {
                    throw SwiftDataError(.invalidTransactionFetchRequest, "evaluating the history predicate failed: \(error)")
                }
            }
            // In transaction order from the log, so ties stay in transaction order.
            if !descriptor.sortBy.isEmpty { transactions = stableSorted(transactions, using: descriptor.sortBy) }
            if descriptor.fetchLimit > 0 && transactions.count > descriptor.fetchLimit {
                transactions = Array(transactions.prefix(Int(clamping: descriptor.fetchLimit)))
            }
            guard fillsInserts else { return transactions }
            // The values of the insertions of the transactions kept, read from their rows.
            let positions = Dictionary(uniqueKeysWithValues: entries.enumerated().map { ($1.id, $0) })
            var kept = transactions.compactMap { transaction -> HistoryEntry? in
                guard transaction.changes.contains(where: { if case .insert = $0 { true } else { false } }) else { return nil }
                return positions[transaction.id].map { entries[$0] }
            }
            guard try InsertedValues.fill(&kept, container: container, db: db) else { return transactions }
            try container.store.attachments?.resolve(&kept)
            // Only the transactions with insertions are made again, with their values.
            let filled = Dictionary(uniqueKeysWithValues: try kept.map { ($0.id, try transaction(from: $0, decoder: decoder)) })
            return transactions.map { filled[$0.id] ?? $0 }
        }
    }

    /// Deletes the history transactions that match a descriptor (typically those up to a token
    /// every reader has processed). The data they describe stays; a later fetch with a token
    /// from before the deleted transactions throws ``SwiftDataError/historyTokenExpired``.
    public func deleteHistory<T: HistoryTransaction>(_ descriptor: HistoryDescriptor<T>) throws {
        let descriptor = try defaultDescriptor(descriptor)
        let store = container.store
        let ids: [Int64]
        let translated = try store.read { db in try historyCondition(descriptor.predicate, db: db, checksExpiry: false) }
        if descriptor.sortBy.isEmpty, descriptor.fetchLimit == 0, translated.isComplete {
            let condition = translated.condition
            ids = try store.read { db in try HistoryLog.transactionIDs(where: condition, in: db) }
        } else {
            ids = try fetchHistory(descriptor, checksExpiry: false, fillsInserts: false).map(\.id)
        }
        guard !ids.isEmpty else { return }
        try store.write { db in try HistoryLog.delete(ids, in: db) }
        // Files of `.externalStorage` values that only the deleted entries named go too.
        store.attachments?.sweepIfPossible(writer: store.writer)
    }

    private func defaultDescriptor<T: HistoryTransaction>(_ descriptor: HistoryDescriptor<T>) throws -> HistoryDescriptor<DefaultHistoryTransaction> {
        guard let own = descriptor as? HistoryDescriptor<DefaultHistoryTransaction> else {
            throw SwiftDataError(
                .invalidTransactionFetchRequest, "history of \(T.self) is not available; use HistoryDescriptor<DefaultHistoryTransaction>")
        }
        return own
    }

    /// The SQL condition of a history predicate and whether it is the whole predicate; throws
    /// when it compares a token that has expired.
    ///
    /// Every token the predicate holds counts, translated or not: one older than the deleted
    /// transactions, or one of another store (this store's transactions cannot be placed after
    /// it), has expired. `deleteHistory` passes `checksExpiry: false`: trimming up to an old
    /// token is harmless.
    private func historyCondition(
        _ predicate: Predicate<DefaultHistoryTransaction>?, db: Database, checksExpiry: Bool = true
    ) throws -> (condition: (sql: String, arguments: [DatabaseValue])?, isComplete: Bool) {
        guard let predicate else { return (nil, true) }
        let deletedThrough = try HistoryLog.exists(in: db) ? HistoryLog.deletedThrough(in: db) : 0
        let store = container.store.identifier
        if checksExpiry {
            for token in HistoryPredicateTranslator.tokens(in: predicate.expression) {
                guard let transaction = token.transaction(in: store) else {
                    throw SwiftDataError(.historyTokenExpired, "the history token \(token.tokenValue ?? [:]) belongs to another store, not \(store)")
                }
                if transaction < deletedThrough {
                    throw SwiftDataError(
                        .historyTokenExpired,
                        "the history token \(token.tokenValue ?? [:]) is older than the oldest transaction kept (transactions up to \(deletedThrough) were deleted)"
                    )
                }
            }
        }
        var scope = HistorySQLScope(storeIdentifier: store)
        return HistoryPredicateTranslator.translate(predicate, scope: &scope)
    }

    /// A transaction of the public API from a log entry.
    private func transaction(from entry: HistoryEntry, decoder: TombstoneDecoder) throws -> DefaultHistoryTransaction {
        let store = container.store.identifier
        var changes: [HistoryChange] = []
        changes.reserveCapacity(entry.records.count)
        for (index, record) in entry.records.enumerated() {
            // Changes of entities the current schema no longer has cannot be typed.
            guard let layout = container.layout(named: record.entity) else { continue }
            changes.append(
                try Self.change(
                    layout.modelType, record: record, layout: layout, transaction: entry.id, index: Int64(index), store: store, decoder: decoder))
        }
        return DefaultHistoryTransaction(
            id: entry.id, timestamp: entry.timestamp, changes: changes,
            token: DefaultHistoryToken(storeIdentifier: store, transaction: entry.id),
            storeIdentifier: store, bundleIdentifier: entry.bundle, processIdentifier: entry.process, author: entry.author
        )
    }

    private static func change<Model: PersistentModel>(
        _ type: Model.Type, record: HistoryRecord, layout: EntityLayout, transaction: Int64, index: Int64, store: String, decoder: TombstoneDecoder
    ) throws -> HistoryChange {
        let identifier = PersistentIdentifier(storeIdentifier: store, entityName: layout.name, key: .row(record.primaryKey))
        switch record.kind {
        case .insert:
            return .insert(
                DefaultHistoryInsert<Model>(
                    changedPersistentIdentifier: identifier, changeIdentifier: index, transactionIdentifier: transaction, record: record))
        case .update:
            let keyPaths = record.properties.compactMap { property in
                layout.properties.first { $0.name == property.name }.flatMap { sendableKeyPath($0.keyPath, of: Model.self) }
            }
            return .update(
                DefaultHistoryUpdate<Model>(
                    changedPersistentIdentifier: identifier, changeIdentifier: index, transactionIdentifier: transaction, updatedAttributes: keyPaths,
                    record: record))
        case .delete:
            var elements: [HistoryTombstone<Model>.Element] = []
            for (name, value) in record.properties {
                guard let value, let property = layout.properties.first(where: { $0.name == name }),
                    let keyPath = sendableKeyPath(property.keyPath, of: Model.self),
                    let decoded = try decoder.decode(value, as: property)
                else { continue }
                elements.append((keyPath, decoded))
            }
            return .delete(
                DefaultHistoryDelete<Model>(
                    changedPersistentIdentifier: identifier, changeIdentifier: index, transactionIdentifier: transaction,
                    tombstone: HistoryTombstone(elements: elements), record: record))
        }
    }

    /// A model's key path as the history API hands it out.
    private static func sendableKeyPath<Model>(_ keyPath: AnyKeyPath, of type: Model.Type) -> (PartialKeyPath<Model> & Sendable)? {
        guard let typed = keyPath as? PartialKeyPath<Model> else { return nil }
        // Key paths of `schemaMetadata` are literals of stored properties: immutable objects
        // without captures, which Swift 6 itself infers Sendable. The marker protocol cannot be
        // checked by a cast, so it is stated.
        return unsafeBitCast(typed, to: (PartialKeyPath<Model> & Sendable).self)
    }
}

/// Decodes stored values back into Swift values through the properties' codecs (which read
/// from an SQLite statement): each value is bound to `SELECT ?` and read as a column.
struct TombstoneDecoder {
    private let statement: Statement

    init(db: Database) throws {
        statement = try db.makeStatement(sql: "SELECT ?")
    }

    func decode(_ value: DatabaseValue, as property: PropertyLayout) throws -> Any? {
        statement.setUncheckedArguments([value])
        defer { sqlite3_reset(statement.sqliteStatement) }
        guard sqlite3_step(statement.sqliteStatement) == SQLITE_ROW else { return nil }
        let witness = property.codec.slot
        let slot = UnsafeMutableRawPointer.allocate(byteCount: max(witness.size, 1), alignment: witness.alignment)
        defer { slot.deallocate() }
        do {
            try property.codec.readIntoSlot(statement.sqliteStatement, 0, slot)
        } catch {
            return nil
        }
        defer { witness.destroy(slot) }
        return witness.box(UnsafeRawPointer(slot))
    }
}
