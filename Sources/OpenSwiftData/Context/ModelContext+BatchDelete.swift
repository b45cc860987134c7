import Foundation
import GRDB

/// A deletion by predicate that the next save runs as one `DELETE` statement.
struct BatchDelete {
    let layout: EntityLayout
    /// The predicate in SQL (complete), or nil to delete every row.
    let filter: PredicateSQL?
}

extension ModelContext {
    /// Deletes every model of a type that matches a predicate (every one when `predicate` is nil),
    /// including those not yet fetched. The deletions are written at the next save.
    ///
    /// When the predicate runs entirely in SQL and no delete rule needs the deleted models (no
    /// `.cascade` or `.deny` rule, nothing that requires a related model), the save deletes the
    /// rows with one `DELETE … WHERE` statement, without loading them: foreign keys pointing at
    /// them become NULL and their join-table rows go with them. Models of the entity registered
    /// in this context are judged in memory now, by their current values, and deleted like
    /// ``delete(_:)`` does; the statement leaves their rows alone. Otherwise the matching models
    /// are fetched and deleted one by one, with their delete rules.
    public func delete<T: PersistentModel>(model: T.Type, where predicate: Predicate<T>? = nil, includeSubclasses: Bool = true) throws {
        let use = ExclusiveUse(self)
        defer { use.end() }
        let layout = try container.requireLayout(for: T.self)
        let filter = predicate.map { PredicateTranslator.translate($0, layout: layout) }
        // Each class has its own table: the statement below deletes `T`'s models alone, which
        // is all `includeSubclasses: false` asks for; subclasses' models are fetched.
        let withSubclasses = includeSubclasses && !container.descendants(of: layout).isEmpty
        guard filter?.isComplete ?? true, deletesWithoutRules(layout), !withSubclasses else {
            var descriptor = FetchDescriptor<T>(predicate: predicate)
            descriptor.includePendingChanges = true
            for match in try fetch(descriptor) where includeSubclasses || ObjectIdentifier(type(of: match)) == ObjectIdentifier(T.self) {
                delete(match)
            }
            return
        }
        let candidates = (identityMap[layout.name]?.values.map(\.model) ?? []) + inserted.all.map(\.model)
        for case let model as T in candidates where model.storageBase.state != .deleted {
            let matches: Bool
            do {
                matches = try predicate?.evaluate(model) ?? true
            } catch {
                throw SwiftDataError(
                    .unsupportedPredicate, "evaluating the predicate of a \(layout.name) batch delete failed: \(error)", entity: layout.name)
            }
            if matches { delete(model) }
        }
        batchDeletes.append(BatchDelete(layout: layout, filter: filter))
        if autosaveEnabled { storageDidChangeWithoutModel() }
    }

    /// Whether deleting rows of `layout` needs no per-model delete rule: its relationships
    /// nullify or do nothing, and no relationship anywhere requires one of its models.
    func deletesWithoutRules(_ layout: EntityLayout) -> Bool {
        for property in layout.relationships {
            guard let relationship = property.relationship else { continue }
            if relationship.deleteRule == .cascade || relationship.deleteRule == .deny { return false }
        }
        for entity in container.schema.entities {
            guard let other = container.layout(named: entity.name) else { continue }
            for property in other.relationships {
                guard let relationship = property.relationship, relationship.destinationName == layout.name else { continue }
                // A required to-one, or a to-many with a minimum count, would need validation.
                if !relationship.isToMany && !relationship.isOptional { return false }
                if relationship.isToMany && relationship.minimumModelCount > 0 { return false }
            }
        }
        return true
    }

    /// Runs the pending batch deletions in the save's transaction and returns the identifiers of
    /// the rows they removed. Rows of models registered here are left to their own path.
    func runBatchDeletes(
        _ deletes: [BatchDelete], db: Database, references: inout DeletedReferences, captures: [any SaveCapture]
    ) throws -> [PersistentIdentifier] {
        var removed: [PersistentIdentifier] = []
        let storeIdentifier = container.store.identifier
        for batch in deletes {
            let table = quoted(batch.layout.name)
            let primaryKey = quoted(TableDescription.primaryKey)
            let registered = (identityMap[batch.layout.name]?.keys).map(Array.init) ?? []
            // The keys of the rows to delete, as SQL.
            var arguments: [DatabaseValue] = []
            var rows = "SELECT t.\(primaryKey) FROM \(table) AS t"
            if let filter = batch.filter {
                rows += filter.joins
                if let condition = filter.condition {
                    rows += " WHERE " + condition.sql
                    arguments += condition.arguments
                }
            }
            if !registered.isEmpty {
                rows += (batch.filter?.condition == nil ? " WHERE " : " AND ") + "t.\(primaryKey) NOT IN (SELECT value FROM json_each(?))"
                arguments.append(jsonKeyArray(registered).databaseValue)
            }
            try references.clear(referencesTo: batch.layout, rows: rows, arguments: arguments, captures: captures, db: db)
            for capture in captures { try capture.willDelete(batch.layout, rows: .selected(sql: rows, arguments: arguments), in: db) }
            // The values a tombstone keeps come back with the keys.
            let preserved = batch.layout.preservedColumns
            let sql =
                "DELETE FROM \(table) WHERE \(primaryKey) IN (\(rows)) RETURNING "
                + ([primaryKey] + preserved.map { quoted($0.name) }).joined(separator: ", ")
            for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)) {
                let key: Int64 = row[0]
                removed.append(PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: batch.layout.name, key: .row(key)))
                for capture in captures {
                    capture.deleted(batch.layout, row: key) { property in
                        preserved.firstIndex { $0 === property }.map { row[$0 + 1] as DatabaseValue }
                    }
                }
            }
        }
        return removed
    }
}
