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
        try inserted(registration, plan: plan, row: row, values: pinningFiles(values, columns: nil, plan: plan, in: db), in: db)
    }

    func foreignKeysFixed(_ registration: Registration, layout: EntityLayout, columns: [Int], values: [DatabaseValue]) {
        fixed(registration.storage, columns: columns, values: values)
    }

    func upserted(_ registration: Registration, layout: EntityLayout, row: Int64, values: [DatabaseValue], in db: Database) throws {
        guard let plan = plan(of: layout) else { return }
        try upserted(registration, plan: plan, row: row, values: pinningFiles(values, columns: nil, plan: plan, in: db), in: db)
    }

    func updated(
        _ registration: Registration, layout: EntityLayout, row: Int64, properties: [Int], columns: [Int], values: [DatabaseValue], in db: Database
    ) throws {
        guard let plan = plan(of: layout) else { return }
        try updated(registration, plan: plan, row: row, columns: columns, values: pinningFiles(values, columns: columns, plan: plan, in: db), in: db)
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

    /// The columns of merged fields (counters, sets and texts), while the save is not the sync
    /// engine's own (an applied pulled value is written as it is, except a text's, which the
    /// batch's change of its document gives).
    func mergedColumns(of layout: EntityLayout) -> [Int] {
        guard let plan = plan(of: layout) else { return [] }
        if logs { return plan.mergedColumns }
        // The sync engine's texts apply to their documents in the save's transaction.
        if let apply, !apply.texts.isEmpty { return plan.textColumns }
        return []
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

    /// `values` as they are, with the file of each reference in an `.externalStorage` column
    /// pinned while the save is logged: the log carries the reference (sent as a blob, whose
    /// bytes the engine uploads on their own), and the file stays until the engine unpins it
    /// once the server holds it. `columns` are the values' column indexes (nil: every column,
    /// in order).
    private func pinningFiles(_ values: [DatabaseValue], columns: [Int]?, plan: SyncEntityPlan, in db: Database) throws -> [DatabaseValue] {
        let layout = plan.layout
        guard logs, state.attachments?.tables[layout.name]?.externalColumns.isEmpty == false else { return values }
        for position in values.indices {
            let column = columns.map { $0[position] } ?? position
            guard column < layout.columns.count, layout.columns[column].isExternallyStored, plan.fieldColumns.contains(column),
                case let .blob(data) = values[position].storage,
                let reference = AttachmentReference(stored: data)
            else { continue }
            try StoreAttachments.pin(reference, owner: SyncAttachments.pinOwner, in: db)
        }
        return values
    }
}
