import GRDB

extension SyncCaptureState: SaveCaptureSource {
    /// A save's sync capture; an apply of remote changes hands it its work through the
    /// context's ``ModelContext/saveInput``.
    func makeCapture(author: String?, context: ModelContext?, expectedInsertions: Int) -> any SaveCapture {
        SyncSaveCapture(state: self, author: author, apply: context?.saveInput as? SyncApplyWork, expectedInsertions: expectedInsertions)
    }
}

/// Sync capture as the save pipeline sees it: every call about an entity that does not sync
/// returns at once.
extension SyncSaveCapture: SaveCapture {
    func willDelete(_ layout: EntityLayout, rows: DeletedRows, in db: Database) throws {
        guard let plan = plan(of: layout) else { return }
        switch rows {
        case let .keys(keys):
            for key in keys { try deleted(plan: plan, row: key, in: db) }
        case let .selected(sql, arguments):
            // Synced rows leave the log a deletion each, with their records, before they go.
            for key in try Int64.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)) {
                try deleted(plan: plan, row: key, in: db)
            }
        case .all:
            try deletedAll(plan: plan, in: db)
        }
    }

    /// Handled before the row went (``willDelete(_:rows:in:)``): its record goes with it.
    func deleted(_ layout: EntityLayout, row: Int64, preserved: (PropertyLayout) -> DatabaseValue?) {}

    func inserted(_ registration: Registration, layout: EntityLayout, row: Int64, values: [DatabaseValue], in db: Database) throws {
        guard let plan = plan(of: layout) else { return }
        try inserted(registration, plan: plan, row: row, values: values, in: db)
    }

    func foreignKeysFixed(_ registration: Registration, layout: EntityLayout, columns: [Int], values: [DatabaseValue]) {
        fixed(registration.storage, columns: columns, values: values)
    }

    func upserted(_ registration: Registration, layout: EntityLayout, row: Int64, values: [DatabaseValue], in db: Database) throws {
        guard let plan = plan(of: layout) else { return }
        try upserted(registration, plan: plan, row: row, values: values, in: db)
    }

    func updated(
        _ registration: Registration, layout: EntityLayout, row: Int64, properties: [Int], columns: [Int], values: [DatabaseValue], in db: Database
    ) throws {
        guard let plan = plan(of: layout) else { return }
        try updated(registration, plan: plan, row: row, columns: columns, values: values, in: db)
    }

    func capturesLinks(_ relationship: PropertyLayout, of layout: EntityLayout) -> Bool {
        plan(of: layout)?.links.contains { $0 === relationship } ?? false
    }

    func linksChanged(
        _ registration: Registration, layout: EntityLayout, relationship: PropertyLayout, row: Int64, old: [Int64]?, new: [Int64], in db: Database
    ) throws {
        guard let plan = plan(of: layout), plan.links.contains(where: { $0 === relationship }) else { return }
        try linksChanged(registration, plan: plan, relationship: relationship, row: row, old: old, new: new, in: db)
    }

    /// The columns of merged fields (counters and sets), while the save is not the sync
    /// engine's own (an applied pulled value is written as it is).
    func mergedColumns(of layout: EntityLayout) -> [Int] {
        guard logs, let plan = plan(of: layout) else { return [] }
        return plan.mergedColumns
    }

    func merge(
        _ registration: Registration, layout: EntityLayout, row: Int64, column: Int, seen: DatabaseValue?, written: DatabaseValue, in db: Database
    ) throws -> MergedValue? {
        guard let plan = plan(of: layout) else { return nil }
        return try merge(registration, plan: plan, row: row, column: column, seen: seen, written: written, in: db)
    }

    func finish(author: String?, in db: Database) throws {
        try appendEntry(author: author, in: db)
    }
}
