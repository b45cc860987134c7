import Foundation
import GRDB
import GRDBSQLite
import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol

/// Collects, while one save writes, what it changed in synced entities: keeps each synced row's
/// record identity (`SyncRecords`) and, unless the save is the sync engine's own, builds the
/// save's sync log entry, appended by ``finish(author:in:)`` in the same transaction.
///
/// Made only when the container's capture is on: a container without it never creates one.
///
/// Its mutable state is marked `@exclusivity(unchecked)`: a bulk insert calls it once per row,
/// and the runtime's access checks on these properties were a measurable part of what capture
/// adds. That is safe because a capture serves one save, on the thread running that save's
/// transaction (it is not `Sendable` and never escapes the save's `write` closure), and no access
/// to one of these properties overlaps another access to the same property: each is read or
/// changed within one statement that calls nothing touching that property (the record and log
/// helpers it calls while reading `changes` touch `pendingRecords`, the codes and the encoder,
/// never `changes`).
final class SyncSaveCapture {
    let state: SyncCaptureState
    /// Whether this save's changes go to the log (false for the sync engine's own author).
    let logs: Bool
    /// What an apply of remote changes adds to the save, if this save is one.
    let apply: SyncApplyWork?

    /// One captured change, with field values still in stored form (references as local keys
    /// until `finish` resolves them).
    private struct Captured {
        var kind: SyncChange.Kind
        let plan: SyncEntityPlan
        var recordID: CapturedRecordID
        var scope: String?
        var baseVersion: Int64?
        /// Positions in the plan's fields (nil: every field, in order).
        var fields: [Int]?
        /// With `fields` nil, the row's values in column order (the array the save bound, kept
        /// as is: no copy per row), else the values of `fields`, in their order.
        var values: [DatabaseValue]
        var links: [SyncLinkChange] = []
        /// Counters' contributions: the field's position in the plan and the difference.
        var deltas: [(field: Int, value: DatabaseValue)] = []

        /// The value of the `index`-th logged field.
        @inline(__always)
        func value(at index: Int) -> DatabaseValue {
            fields == nil ? values[plan.fieldColumns[index]] : values[index]
        }
    }

    /// Changes not encoded yet: those that the save may still complete (references resolved
    /// at the end, foreign keys fixed, links added), and every change after the first of them
    /// (the entry keeps the save's order).
    @exclusivity(unchecked) private var changes: [Captured] = []
    /// The save's log entry, encoded as changes come while none waits in `changes`: a bulk
    /// insert's values are encoded while the save has them at hand, and not kept for the end
    /// (nil until the first change).
    @exclusivity(unchecked) private var encoder: SyncLogCoding.Encoder?
    /// Each plan's interned entity and field names in `encoder`.
    @exclusivity(unchecked) private var interned: [ObjectIdentifier: (entity: Int, fields: [Int])] = [:]
    @exclusivity(unchecked) private var lastInternedPlan: SyncEntityPlan?
    @exclusivity(unchecked) private var lastInterned: (entity: Int, fields: [Int]) = (0, [])
    /// How many rows the save inserts (sizes the entry's buffer once).
    private let expectedInsertions: Int
    /// A record not yet inserted into `osd_sync_records` (see `insertRecord`).
    private struct PendingRecord {
        let entityCode: Int64
        let row: Int64
        let recordID: CapturedRecordID
        let scope: String?
        let serverVersion: Int64?
    }
    private static let recordBatch = 50
    @exclusivity(unchecked) private var pendingRecords: [PendingRecord] = []
    /// The save's prepared inserts into `osd_sync_records`: one record, and `recordBatch`.
    @exclusivity(unchecked) private var recordInsert: Statement?
    @exclusivity(unchecked) private var batchInsert: Statement?
    /// `recordBatch` records of one entity without scope or server version (see `flushRecords`).
    @exclusivity(unchecked) private var plainBatchInsert: Statement?
    @exclusivity(unchecked) private var changeOfStorage: [ObjectIdentifier: Int] = [:]
    /// Each plan's entity code in `osd_sync_records` (`SyncRecords.entityCode`), and the last one
    /// asked for (a bulk insert asks for one entity's, row after row).
    @exclusivity(unchecked) private var entityCodes: [ObjectIdentifier: Int64] = [:]
    /// The plan of the last layout the pipeline named (a bulk insert's rows share one: no
    /// look-up by name per row), see ``plan(of:)``.
    @exclusivity(unchecked) private var lastLayout: EntityLayout?
    @exclusivity(unchecked) private var lastPlan: SyncEntityPlan?
    @exclusivity(unchecked) private var lastCodePlan: SyncEntityPlan?
    @exclusivity(unchecked) private var lastCode: Int64 = 0
    /// The contributions ``merge(_:plan:row:column:seen:written:in:)`` computed for the save's
    /// changed rows, by storage, logged by ``updated(_:plan:row:columns:values:in:)``.
    @exclusivity(unchecked) private var counterDeltas: [ObjectIdentifier: [(field: Int, value: DatabaseValue)]] = [:]
    /// The record ids of new rows without a unique attribute or temporary identifier.
    @exclusivity(unchecked) private var newRecordIDs = RandomRecordID()

    init(state: SyncCaptureState, author: String?, apply: SyncApplyWork?, expectedInsertions: Int = 0) {
        self.state = state
        self.logs = author != state.engineAuthor
        self.apply = apply
        self.expectedInsertions = expectedInsertions
    }

    /// The entry's encoder and `plan`'s interned names in it (its field list declared on first
    /// use).
    private func logEncoder(for plan: SyncEntityPlan) -> (encoder: SyncLogCoding.Encoder, names: (entity: Int, fields: [Int])) {
        let encoder: SyncLogCoding.Encoder
        if let existing = self.encoder {
            encoder = existing
        } else {
            // Sized for the save's inserts of this entity (each value taking about 12 bytes).
            encoder = SyncLogCoding.Encoder(capacity: (expectedInsertions + 16) * (24 + 12 * plan.fieldColumns.count))
            self.encoder = encoder
        }
        if plan === lastInternedPlan { return (encoder, lastInterned) }
        let key = ObjectIdentifier(plan)
        let names: (entity: Int, fields: [Int])
        if let known = interned[key] {
            names = known
        } else {
            names = encoder.fieldList(entity: plan.layout.name, names: plan.fieldNames, kindCodes: plan.fieldKindCodes)
            interned[key] = names
        }
        lastInternedPlan = plan
        lastInterned = names
        return (encoder, names)
    }

    /// Whether a change of `plan` of this kind can be encoded now: nothing waits before it, and
    /// the save cannot come back to it (no reference to resolve, no foreign key to fix, no links
    /// to add).
    @inline(__always)
    private func encodesNow(_ kind: SyncChange.Kind, plan: SyncEntityPlan) -> Bool {
        changes.isEmpty && (kind == .delete || !plan.revisitsInsertions)
    }

    /// Encodes a change whose fields hold no reference: `fields` nil for every field (`values`
    /// the row's values in column order), else the positions of the listed fields (`values`
    /// theirs, in that order).
    private func encode(
        _ kind: SyncChange.Kind, plan: SyncEntityPlan, recordID: CapturedRecordID, scope: String?, baseVersion: Int64?,
        fields: [Int]?, values: [DatabaseValue], deltas: [(field: Int, value: DatabaseValue)] = []
    ) {
        // The plan of the last change and its encoder, without copying its interned names (a
        // bulk insert encodes one entity's rows one after the other).
        let encoder: SyncLogCoding.Encoder
        if plan === lastInternedPlan, let existing = self.encoder {
            encoder = existing
        } else {
            encoder = logEncoder(for: plan).encoder
        }
        let count = fields?.count ?? plan.fieldColumns.count
        encoder.change(
            kind, entity: lastInterned.entity, recordID: recordID, scope: scope, baseVersion: baseVersion, links: [], allFields: fields == nil,
            fieldCount: count + deltas.count)
        for (field, value) in deltas {
            encoder.field(name: lastInterned.fields[field], kindCode: plan.fieldKindCodes[field] | SyncLogCoding.deltaFlag, value: value)
        }
        guard count > 0 else { return }
        values.withUnsafeBufferPointer { values in
            if let fields {
                let names = lastInterned.fields
                for index in 0..<count {
                    let field = fields[index]
                    encoder.field(name: names[field], kindCode: plan.fieldKindCodes[field], value: values[index])
                }
            } else {
                plan.fieldColumns.withUnsafeBufferPointer { columns in
                    for column in columns { encoder.value(values[column]) }
                }
            }
        }
    }

    /// The plan of `layout`'s entity (nil when it does not sync), remembered for the next call.
    @inline(__always)
    func plan(of layout: EntityLayout) -> SyncEntityPlan? {
        if layout !== lastLayout {
            lastLayout = layout
            lastPlan = state.plan(layout.name)
        }
        return lastPlan
    }

    /// The record of a row: known, or made now for a row that predates capture (its unique
    /// value's canonical text, else a new UUID).
    func ensureRecord(_ plan: SyncEntityPlan, row: Int64, in db: Database) throws -> SyncRecords.Record {
        try flushRecords(in: db)
        if let known = try SyncRecords.record(entity: plan.layout.name, row: row, in: db) { return known }
        var recordID: String?
        if let column = plan.recordIDColumn {
            let name = plan.layout.columns[column].name
            let value = try DatabaseValue.fetchOne(
                db, sql: "SELECT \(quoted(name)) FROM \(quoted(plan.layout.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?", arguments: [row])
            recordID = value.flatMap { SyncStoredValue($0).canonicalRecordID(kind: plan.recordIDKind) }
        }
        let id = recordID.map(CapturedRecordID.init) ?? newRecordID()
        try insertRecord(plan, row: row, recordID: id, scope: nil, serverVersion: nil, in: db)
        // Callers update the record next (its scope, its server version).
        try flushRecords(in: db)
        return SyncRecords.Record(recordID: id.text, scope: nil, serverVersion: nil)
    }

    /// The record of a row that a reference or link to `plan`'s entity names: when the entity has
    /// synced subclasses, the row may be in one of their tables (the hierarchy shares one key
    /// space), and its record is the one of the class whose table holds it.
    func memberRecord(_ plan: SyncEntityPlan, row: Int64, in db: Database) throws -> SyncRecords.Record {
        guard let members = state.members[plan.layout.name] else { return try ensureRecord(plan, row: row, in: db) }
        try flushRecords(in: db)
        for entity in members {
            guard let member = state.plan(entity) else { continue }
            if let known = try SyncRecords.record(entity: entity, row: row, in: db) { return known }
            let exists =
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM \(quoted(entity)) WHERE \(quoted(TableDescription.primaryKey)) = ?)", arguments: [row])
                ?? false
            if exists { return try ensureRecord(member, row: row, in: db) }
        }
        return try ensureRecord(plan, row: row, in: db)
    }

    private func newRecordID() -> CapturedRecordID {
        let words = newRecordIDs.makeWords()
        return .uuid(high: words.high, low: words.low)
    }

    /// Adds a row's record. This runs once per new synced row, so records wait in
    /// `pendingRecords` and go in by `recordBatch` rows per statement (one prepared statement per
    /// save, values bound through SQLite's C API as `TableWriter` does for the rows): one
    /// statement per record cost more than the B-tree work it does. Every read of
    /// `osd_sync_records` in the save's transaction comes after `flushRecords`.
    private func insertRecord(
        _ plan: SyncEntityPlan, row: Int64, recordID: CapturedRecordID, scope: String?, serverVersion: Int64?, in db: Database
    ) throws {
        pendingRecords.append(
            PendingRecord(entityCode: try entityCode(plan, in: db), row: row, recordID: recordID, scope: scope, serverVersion: serverVersion))
        if pendingRecords.count == Self.recordBatch { try flushRecords(in: db) }
    }

    /// The code of `plan`'s entity in `osd_sync_records`, read (or given out) once per save.
    @inline(__always)
    private func entityCode(_ plan: SyncEntityPlan, in db: Database) throws -> Int64 {
        if plan === lastCodePlan { return lastCode }
        let key = ObjectIdentifier(plan)
        let code: Int64
        if let known = entityCodes[key] {
            code = known
        } else {
            code = try SyncRecords.entityCode(plan.layout.name, in: db)
            entityCodes[key] = code
        }
        lastCodePlan = plan
        lastCode = code
        return code
    }

    /// Inserts the records waiting in `pendingRecords`.
    private func flushRecords(in db: Database) throws {
        guard !pendingRecords.isEmpty else { return }
        defer { pendingRecords.removeAll(keepingCapacity: true) }
        if pendingRecords.count == Self.recordBatch, let code = pendingRecords.first?.entityCode,
            pendingRecords.allSatisfy({ $0.entityCode == code && $0.scope == nil && $0.serverVersion == nil })
        {
            // The common batch (new rows of one entity, no scope rule, no server version): the
            // code is bound once for every row and the NULLs are the columns' own, two values
            // a row instead of five (each binding takes the connection's mutex).
            let statement: Statement
            if let prepared = plainBatchInsert {
                statement = prepared
            } else {
                let rows = (0..<Self.recordBatch).map { "(?1, ?\(2 * $0 + 2), ?\(2 * $0 + 3))" }.joined(separator: ", ")
                statement = try preparedForCBindings("INSERT INTO \(quoted(SyncRecords.table)) (entity_code, pk, record_id) VALUES \(rows)", in: db)
                plainBatchInsert = statement
            }
            let sqlite = statement.sqliteStatement
            sqlite3_reset(sqlite)
            try Self.check(sqlite3_bind_int64(sqlite, 1, code), binding: 1, of: statement)
            for (offset, record) in pendingRecords.enumerated() {
                try Self.check(sqlite3_bind_int64(sqlite, CInt(2 * offset + 2), record.row), binding: 2 * offset + 2, of: statement)
                try Self.bindRecordID(record.recordID, at: 2 * offset + 3, in: statement)
            }
            try statement.execute()
            return
        }
        if pendingRecords.count == Self.recordBatch {
            let statement: Statement
            if let prepared = batchInsert {
                statement = prepared
            } else {
                let rows = Array(repeating: "(?, ?, ?, ?, ?)", count: Self.recordBatch).joined(separator: ", ")
                statement = try preparedForCBindings(
                    "INSERT INTO \(quoted(SyncRecords.table)) (entity_code, pk, record_id, scope, server_version) VALUES \(rows)", in: db)
                batchInsert = statement
            }
            sqlite3_reset(statement.sqliteStatement)
            for (offset, record) in pendingRecords.enumerated() {
                try bind(record, from: 5 * offset + 1, in: statement)
            }
            try statement.execute()
            return
        }
        let statement: Statement
        if let prepared = recordInsert {
            statement = prepared
        } else {
            statement = try preparedForCBindings(
                "INSERT INTO \(quoted(SyncRecords.table)) (entity_code, pk, record_id, scope, server_version) VALUES (?, ?, ?, ?, ?)", in: db)
            recordInsert = statement
        }
        for record in pendingRecords {
            sqlite3_reset(statement.sqliteStatement)
            try bind(record, from: 1, in: statement)
            try statement.execute()
        }
    }

    /// A statement whose values are bound through SQLite's C API.
    /// Throws the error of a binding that failed.
    private static func check(_ code: CInt, binding index: Int, of statement: Statement) throws {
        guard code != SQLITE_OK else { return }
        throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "binding parameter \(index) of \(statement.sql)")
    }

    private func preparedForCBindings(_ sql: String, in db: Database) throws -> Statement {
        let statement = try db.makeStatement(sql: sql)
        // Mark the (empty) arguments as bound: `execute()` then only steps and resets (a reset
        // keeps bindings). Bindings are refused on a statement stepped since its last reset, so
        // callers reset first; the reset's result repeats the last step's error, which that step
        // already reported.
        statement.setUncheckedArguments(StatementArguments())
        return statement
    }

    /// Binds one record's five values at parameters `first`...`first + 4`.
    private func bind(_ record: PendingRecord, from first: Int, in statement: Statement) throws {
        try TableWriter.bind(record.entityCode.databaseValue, at: first, in: statement)
        try TableWriter.bind(record.row.databaseValue, at: first + 1, in: statement)
        try Self.bindRecordID(record.recordID, at: first + 2, in: statement)
        try TableWriter.bind(record.scope?.databaseValue ?? .null, at: first + 3, in: statement)
        try TableWriter.bind(record.serverVersion?.databaseValue ?? .null, at: first + 4, in: statement)
    }

    /// Binds a record id in its stored form (`SyncRecords.storedID`), a UUID's 16 bytes straight
    /// from the stack.
    private static func bindRecordID(_ recordID: CapturedRecordID, at index: Int, in statement: Statement) throws {
        guard case let .uuid(high, low) = recordID else {
            try TableWriter.bind(recordID.text.databaseValue, at: index, in: statement)
            return
        }
        var bytes = (high.bigEndian, low.bigEndian)
        // Safety: the pointer is used only during the call; SQLITE_TRANSIENT makes SQLite copy
        // the 16 bytes before it returns.
        let code = withUnsafeBytes(of: &bytes) { raw in
            sqlite3_bind_blob(statement.sqliteStatement, CInt(index), raw.baseAddress, CInt(raw.count), sqliteTransientDestructor)
        }
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "binding parameter \(index) of \(statement.sql)")
        }
    }

    /// A new row of a synced entity: gives it its record id and records every field.
    func inserted(_ registration: Registration, plan: SyncEntityPlan, row: Int64, values: [DatabaseValue], in db: Database) throws {
        let storage = registration.storage
        let key = ObjectIdentifier(storage)
        let id: CapturedRecordID
        if let column = plan.recordIDColumn, let unique = SyncStoredValue(values[column]).canonicalRecordID(kind: plan.recordIDKind) {
            id = CapturedRecordID(unique)
        } else if let remote = apply?.recordIDs[key] {
            id = CapturedRecordID(remote)
        } else if let temporary = storage.temporaryID {
            id = CapturedRecordID(temporary)
        } else {
            id = newRecordID()
        }
        let scope = apply?.scopes[key] ?? plan.scope?(registration.model)
        try insertRecord(plan, row: row, recordID: id, scope: scope, serverVersion: apply?.versionsOfNew[key], in: db)
        if let texts = apply?.texts[key] { try insertedTexts(texts, plan: plan, row: row, in: db) }
        guard logs else { return }
        // A set's inserted value is logged as the row holds it, repeats included: the server
        // takes its elements as adds, and the value it answers with (without repeats) then
        // differs from the logged one, so that settling the insert writes it to the row.
        if encodesNow(.insert, plan: plan) {
            encode(.insert, plan: plan, recordID: id, scope: scope, baseVersion: nil, fields: nil, values: values)
            return
        }
        if plan.revisitsInsertions { changeOfStorage[key] = changes.count }
        changes.append(Captured(kind: .insert, plan: plan, recordID: id, scope: scope, baseVersion: nil, fields: nil, values: values))
    }

    /// Foreign keys an insertion wrote as NULL first and set once their target existed.
    func fixed(_ storage: AnyModelStorage, columns: [Int], values: [DatabaseValue]) {
        guard logs, let index = changeOfStorage[ObjectIdentifier(storage)], changes[index].kind == .insert else { return }
        let plan = changes[index].plan
        for (column, value) in zip(columns, values) where plan.fieldOfColumn[column] != nil {
            changes[index].values[column] = value
        }
    }

    /// An inserted model that took over the existing row with its unique value (the same
    /// record): an update of every field.
    func upserted(_ registration: Registration, plan: SyncEntityPlan, row: Int64, values: [DatabaseValue], in db: Database) throws {
        let record = try ensureRecord(plan, row: row, in: db)
        let key = ObjectIdentifier(registration.storage)
        let scope = apply?.scopes[key] ?? plan.scope?(registration.model)
        if scope != record.scope { try SyncRecords.setScope(scope, entity: plan.layout.name, row: row, in: db) }
        if let version = apply?.versionsOfNew[key] { try SyncRecords.setServerVersion(version, entity: plan.layout.name, row: row, in: db) }
        guard logs else { return }
        // Counters log their inserted value as a contribution, added to the row's, and sets
        // their elements as adds (see `merge`), the other fields their values.
        var fields: [Int]?
        var logged = values
        let deltas = counterDeltas.removeValue(forKey: key) ?? []
        if !plan.mergedColumns.isEmpty {
            var listed: [Int] = []
            logged = []
            for (field, column) in plan.fieldColumns.enumerated() where !plan.mergedColumns.contains(column) {
                listed.append(field)
                logged.append(values[column])
            }
            fields = listed
        }
        if encodesNow(.update, plan: plan) {
            encode(
                .update, plan: plan, recordID: CapturedRecordID(record.recordID), scope: scope, baseVersion: record.serverVersion, fields: fields,
                values: logged, deltas: deltas)
            return
        }
        changeOfStorage[key] = changes.count
        changes.append(
            Captured(
                kind: .update, plan: plan, recordID: CapturedRecordID(record.recordID), scope: scope, baseVersion: record.serverVersion,
                fields: fields, values: logged, deltas: deltas))
    }

    /// A changed row: `columns` are the changed column indexes, `values` their new values.
    func updated(_ registration: Registration, plan: SyncEntityPlan, row: Int64, columns: [Int], values: [DatabaseValue], in db: Database) throws {
        let record = try ensureRecord(plan, row: row, in: db)
        if let idColumn = plan.recordIDColumn, let position = columns.firstIndex(of: idColumn) {
            let newID = SyncStoredValue(values[position]).canonicalRecordID(kind: plan.recordIDKind)
            if newID != record.recordID {
                throw SyncCaptureError.recordIDChanged(entity: plan.layout.name, recordID: record.recordID)
            }
        }
        let key = ObjectIdentifier(registration.storage)
        let scope = apply?.scopes[key] ?? plan.scope?(registration.model)
        if scope != record.scope { try SyncRecords.setScope(scope, entity: plan.layout.name, row: row, in: db) }
        guard logs else { return }
        var fields: [Int] = []
        var fieldValues: [DatabaseValue] = []
        // A counter's contribution replaces its value (a save that left it as it was logs none).
        let deltas = counterDeltas.removeValue(forKey: key) ?? []
        for (column, value) in zip(columns, values) {
            guard let field = plan.fieldOfColumn[column] else { continue }
            // A set's adds and removes replace its value, as a text's edits do.
            if !plan.setColumns.isEmpty, plan.setColumns.contains(column) { continue }
            if !plan.textColumns.isEmpty, plan.textColumns.contains(column) { continue }
            if !plan.counterColumns.isEmpty, plan.counterColumns.contains(column),
                deltas.contains(where: { $0.field == field }) || CounterBridge.counter(value, kind: plan.fieldKinds[field]) != nil
            {
                continue
            }
            fields.append(field)
            fieldValues.append(value)
        }
        if encodesNow(.update, plan: plan) {
            encode(
                .update, plan: plan, recordID: CapturedRecordID(record.recordID), scope: scope, baseVersion: record.serverVersion, fields: fields,
                values: fieldValues, deltas: deltas)
            return
        }
        changeOfStorage[key] = changes.count
        changes.append(
            Captured(
                kind: .update, plan: plan, recordID: CapturedRecordID(record.recordID), scope: scope, baseVersion: record.serverVersion,
                fields: fields, values: fieldValues, deltas: deltas))
    }

    /// A counter's column about to be updated: its contribution is the difference between what
    /// the saving context wrote and what it had read (`seen`; zero when nothing was read, as for
    /// an inserted model that takes over an existing row, whose value the server adds to the
    /// record's), kept for ``updated(_:plan:row:columns:values:in:)``; the column gets its
    /// current value plus that difference, so that contributions landed meanwhile (another
    /// context's save, a pulled change) are kept. Nil when the column is not a counter.
    func merge(
        _ registration: Registration, plan: SyncEntityPlan, row: Int64, column: Int, seen: DatabaseValue?, written: DatabaseValue, in db: Database
    ) throws -> MergedValue? {
        guard let field = plan.fieldOfColumn[column] else { return nil }
        if !plan.textColumns.isEmpty, plan.textColumns.contains(column) {
            return try mergeText(registration, plan: plan, field: field, row: row, column: column, seen: seen, written: written, in: db)
        }
        if !plan.setColumns.isEmpty, plan.setColumns.contains(column) {
            return try mergeSet(registration, plan: plan, field: field, row: row, column: column, seen: seen, written: written, in: db)
        }
        let kind = plan.fieldKinds[field]
        guard let writtenValue = CounterBridge.counter(written, kind: kind) else { return nil }
        let property = plan.layout.columns[column]
        let stored = try DatabaseValue.fetchOne(
            db, sql: "SELECT \(quoted(property.name)) FROM \(quoted(plan.layout.table.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?",
            arguments: [row])
        let current = stored.flatMap { CounterBridge.counter($0, kind: kind) } ?? writtenValue.zero
        let base = seen.flatMap { CounterBridge.counter($0, kind: kind) } ?? writtenValue.zero
        let valueType = type(of: property.keyPath).valueType
        guard let delta = writtenValue.subtracting(base), let result = current.adding(delta),
            let value = CounterBridge.swiftValue(result, as: valueType)
        else {
            throw SyncCaptureError.counterOverflow(entity: plan.layout.name, property: property.name)
        }
        if !delta.isZero {
            counterDeltas[ObjectIdentifier(registration.storage), default: []].append((field, CounterBridge.stored(delta)))
        }
        return MergedValue(
            stored: CounterBridge.stored(result), value: value, replaces: result != writtenValue,
            difference: delta.isZero ? nil : CounterBridge.swiftValue(delta, as: valueType))
    }

    /// A set's column about to be updated: its contribution is the elements the saving context
    /// added and removed from what it had read (`seen`; nothing when nothing was read, as for an
    /// inserted model that takes over an existing row, whose elements the server adds to the
    /// record's), kept for ``updated(_:plan:row:columns:values:in:)``; the column gets its
    /// current elements with those removed and the added ones appended, so that elements
    /// another context or a pull brought meanwhile are kept.
    private func mergeSet(
        _ registration: Registration, plan: SyncEntityPlan, field: Int, row: Int64, column: Int, seen: DatabaseValue?, written: DatabaseValue,
        in db: Database
    ) throws -> MergedValue? {
        let property = plan.layout.columns[column]
        // A value that is no JSON array, or a merged one that does not decode, fails the save
        // rather than leave the change out of the log.
        func unmergeable(_ reason: String) -> SyncCaptureError {
            SyncCaptureError.mergeKindMismatch(entity: plan.layout.name, property: property.name, kind: .set, reason: reason)
        }
        guard let writtenElements = SetBridge.elements(written) else { throw unmergeable("the saved value is not a JSON array") }
        let stored = try DatabaseValue.fetchOne(
            db, sql: "SELECT \(quoted(property.name)) FROM \(quoted(plan.layout.table.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?",
            arguments: [row])
        let current = stored.flatMap(SetBridge.elements) ?? []
        let base = seen.flatMap(SetBridge.elements) ?? []
        let (adds, removes) = SetElements.difference(from: base, to: writtenElements)
        let result = SetElements.applying(adds, removing: removes, to: current)
        let valueType = type(of: property.keyPath).valueType
        guard let value = SetBridge.swiftValue(result, as: valueType) else {
            throw unmergeable("the merged elements do not decode as \(valueType)")
        }
        let changed = !adds.isEmpty || !removes.isEmpty
        if changed {
            counterDeltas[ObjectIdentifier(registration.storage), default: []].append(
                (field, SetBridge.storedChange(SetChange(add: adds, remove: removes))))
        }
        var writtenAsIs: [String]?
        if case let .string(text) = written.storage { writtenAsIs = SetElements.split(text) }
        return MergedValue(
            stored: SetBridge.stored(result), value: value, replaces: result != writtenAsIs,
            difference: changed ? SetDifference(adds: adds, removes: removes, type: valueType) : nil)
    }

    /// A text's column about to be updated. A save of this container edits the text's document
    /// from what the saving context had read (`seen`) to what it wrote, as this container's
    /// replica: its contribution is that edit, by identity (kept for
    /// ``updated(_:plan:row:columns:values:in:)``), and the column gets the document's text, which
    /// keeps the edits landed since the context read it (another context's save, a pulled edit).
    /// An inserted model that takes over an existing row (`seen` nil) appends its text. A save of
    /// the sync engine applies the batch's change of the text to its document instead.
    private func mergeText(
        _ registration: Registration, plan: SyncEntityPlan, field: Int, row: Int64, column: Int, seen: DatabaseValue?, written: DatabaseValue,
        in db: Database
    ) throws -> MergedValue? {
        let property = plan.layout.columns[column]
        guard case let .string(writtenText) = written.storage else {
            throw SyncCaptureError.mergeKindMismatch(
                entity: plan.layout.name, property: property.name, kind: .text, reason: "the saved value is not a string")
        }
        let key = SyncTexts.Key(entityCode: try entityCode(plan, in: db), row: row, field: plan.fieldNames[field])
        let stored = try DatabaseValue.fetchOne(
            db, sql: "SELECT \(quoted(property.name)) FROM \(quoted(plan.layout.table.name)) WHERE \(quoted(TableDescription.primaryKey)) = ?",
            arguments: [row])
        var current = ""
        if case let .string(text)? = stored?.storage { current = text }
        let texts = state.texts
        if !logs {
            guard let changes = apply?.texts[ObjectIdentifier(registration.storage)]?[key.field] else {
                // Written whole by the sync engine: the text is its value again.
                try SyncTexts.remove(key, in: db)
                return nil
            }
            var loaded = try texts.load(key, current: current, in: db)
            do {
                var edited = TextOperation()
                var replaced = false
                for change in changes {
                    switch change {
                    case let .edits(edits):
                        let operation = try edits.operation()
                        // This device's own edits come back as echoes: the document holds
                        // them, and its tail does not take them again.
                        guard !loaded.document.holds(operation) else { continue }
                        try loaded.document.apply(operation)
                        edited.append(operation)
                    case let .state(state, pending):
                        loaded.document = try SyncTexts.document(state: state, value: "", pending: pending)
                        edited = TextOperation()
                        replaced = true
                    case let .value(value, pending):
                        loaded.document = try SyncTexts.document(state: nil, value: value, pending: pending)
                        edited = TextOperation()
                        replaced = true
                    }
                }
                if replaced {
                    try texts.replace(loaded, key: key, in: db)
                    texts.newReplica()
                } else if edited.isEmpty {
                    texts.release(loaded, key: key)
                } else {
                    try texts.store(loaded, applying: edited, key: key, in: db)
                }
            } catch {
                throw SyncCaptureError.undecodableValue(
                    entity: plan.layout.name, property: property.name, reason: "the server's change of the text does not apply here: \(error)")
            }
            let text = loaded.document.text
            return MergedValue(stored: text.databaseValue, value: text, replaces: true, difference: nil)
        }
        var loaded = try texts.load(key, current: current, in: db)
        var operation = TextOperation()
        // A column written without its document (by an older version, or outside capture) is
        // taken as this replica's edit first, so that the document reads as the column did.
        if !Self.sameBytes(loaded.document.text, current) {
            operation.append(loaded.document.update(to: current, replica: texts.replica))
        }
        var seenText: String?
        if case let .string(text)? = seen?.storage { seenText = text }
        if seen == nil {
            operation.append(loaded.document.insert(writtenText, at: loaded.document.scalarCount, replica: texts.replica))
        } else {
            operation.append(loaded.document.update(to: writtenText, seen: seenText, replica: texts.replica))
        }
        guard !operation.isEmpty else {
            texts.release(loaded, key: key)
            return Self.sameBytes(current, writtenText)
                ? nil : MergedValue(stored: current.databaseValue, value: current, replaces: true, difference: nil)
        }
        let encoded = try SyncTexts.encodedChange(operation)
        try texts.store(loaded, applying: operation, encoded: encoded, key: key, in: db)
        counterDeltas[ObjectIdentifier(registration.storage), default: []].append(
            (field, String(decoding: encoded, as: UTF8.self).databaseValue))
        let text = loaded.document.text
        // Undone by what this save changed: its edit taken back from whatever the text then
        // holds, so that edits others made since stay.
        let difference = seen == nil ? nil : TextDifference(seen: seenText ?? "", written: writtenText)
        return MergedValue(stored: text.databaseValue, value: text, replaces: !Self.sameBytes(text, writtenText), difference: difference)
    }

    /// Whether two strings hold the same bytes (`==` is canonical equivalence; a text keeps what
    /// was typed).
    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
    }

    /// The documents of a row the sync engine inserts, from the changes its batch brought for
    /// the row's texts, in order.
    private func insertedTexts(_ texts: [String: [RemoteTextChange]], plan: SyncEntityPlan, row: Int64, in db: Database) throws {
        let code = try entityCode(plan, in: db)
        for (name, changes) in texts.sorted(by: { $0.key < $1.key }) where plan.fieldNames.contains(name) {
            let key = SyncTexts.Key(entityCode: code, row: row, field: name)
            var loaded = try state.texts.load(key, current: "", in: db)
            do {
                // Edits alone (an update of a record that is not here) make no document: the
                // row holds what the batch gave it until the record is downloaded whole.
                guard let document = try SyncTexts.fold(changes) else { continue }
                loaded.document = document
            } catch {
                throw SyncCaptureError.undecodableValue(
                    entity: plan.layout.name, property: name, reason: "the server's change of the text does not apply here: \(error)")
            }
            try state.texts.replace(loaded, key: key, in: db)
        }
    }

    /// A deleted row (called before the row goes): its record goes with it. A row that never
    /// had a record (it predates capture and was never touched since) was never synced, and its
    /// deletion is not logged.
    func deleted(plan: SyncEntityPlan, row: Int64, in db: Database) throws {
        try flushRecords(in: db)
        if !plan.textColumns.isEmpty { try SyncTexts.remove(entityCode: try entityCode(plan, in: db), row: row, in: db) }
        guard let record = try SyncRecords.record(entity: plan.layout.name, row: row, in: db) else { return }
        try SyncRecords.delete(entity: plan.layout.name, row: row, in: db)
        try SyncRecords.removePending(involving: plan.layout.name, recordID: record.recordID, in: db)
        guard logs else { return }
        logDeletion(plan: plan, recordID: CapturedRecordID(record.recordID), scope: record.scope, baseVersion: record.serverVersion)
    }

    private func logDeletion(plan: SyncEntityPlan, recordID: CapturedRecordID, scope: String?, baseVersion: Int64?) {
        if encodesNow(.delete, plan: plan) {
            encode(.delete, plan: plan, recordID: recordID, scope: scope, baseVersion: baseVersion, fields: [], values: [])
        } else {
            changes.append(Captured(kind: .delete, plan: plan, recordID: recordID, scope: scope, baseVersion: baseVersion, fields: [], values: []))
        }
    }

    /// Every row of a synced entity is about to be deleted (`erase`): each record's deletion,
    /// then the records go.
    func deletedAll(plan: SyncEntityPlan, in db: Database) throws {
        try flushRecords(in: db)
        let entity = plan.layout.name
        let code = try entityCode(plan, in: db)
        if !plan.textColumns.isEmpty { try SyncTexts.removeAll(entityCode: code, in: db) }
        if logs {
            let rows = try Row.fetchAll(
                db, sql: "SELECT record_id, scope, server_version FROM \(quoted(SyncRecords.table)) WHERE entity_code = ? ORDER BY pk",
                arguments: [code])
            for row in rows {
                guard let recordID = SyncRecords.recordID(stored: row[0]) else { continue }
                logDeletion(plan: plan, recordID: CapturedRecordID(recordID), scope: row[1], baseVersion: row[2])
            }
        }
        try db.execute(sql: "DELETE FROM \(quoted(SyncRecords.table)) WHERE entity_code = ?", arguments: [code])
        try db.execute(sql: "DELETE FROM \(quoted(SyncRecords.pendingTable)) WHERE entity = ? OR target_entity = ?", arguments: [entity, entity])
    }

    /// The links of a many-to-many relationship that a save rewrote for one row: `old` the
    /// related keys before (nil for a new row), `new` after.
    func linksChanged(
        _ registration: Registration, plan: SyncEntityPlan, relationship: PropertyLayout, row: Int64, old: [Int64]?, new: [Int64], in db: Database
    ) throws {
        guard logs, let destination = relationship.relationship?.destinationName, let target = state.plan(destination) else { return }
        let oldSet = Set(old ?? [])
        let newSet = Set(new)
        var seen = Set<Int64>()
        let added = new.filter { !oldSet.contains($0) && seen.insert($0).inserted }
        let removed = (old ?? []).filter { !newSet.contains($0) }
        guard !added.isEmpty || !removed.isEmpty else { return }
        let link = SyncLinkChange(
            relationship: relationship.name,
            added: try added.map { try memberRecord(target, row: $0, in: db).recordID },
            removed: try removed.map { try memberRecord(target, row: $0, in: db).recordID }
        )
        let key = ObjectIdentifier(registration.storage)
        if let index = changeOfStorage[key] {
            changes[index].links.append(link)
            return
        }
        let record = try ensureRecord(plan, row: row, in: db)
        let scope = apply?.scopes[key] ?? plan.scope?(registration.model)
        changeOfStorage[key] = changes.count
        changes.append(
            Captured(
                kind: .update, plan: plan, recordID: CapturedRecordID(record.recordID), scope: scope, baseVersion: record.serverVersion, fields: [],
                values: [], links: [link]))
    }

    /// Appends the save's log entry (when it has changes to log) and runs an apply's own work;
    /// returns the entry's sequence.
    @discardableResult
    func appendEntry(author: String?, in db: Database) throws -> Int64? {
        try flushRecords(in: db)
        try apply?.run(in: db)
        guard logs, encoder != nil || !changes.isEmpty else { return nil }
        let now = state.configuration.clock()
        let stamp = try SyncLog.takeStamp(now: now, in: db)
        // The changes that waited, in order, with references resolved to record ids. The loop
        // reads them in place (`changes[index].…`): a `for change in changes` copied each
        // change, retaining its arrays and strings, per row.
        for position in changes.indices {
            let plan = changes[position].plan
            let (encoder, names) = logEncoder(for: plan)
            let allFields = changes[position].fields == nil
            let count = changes[position].fields?.count ?? plan.fieldColumns.count
            encoder.change(
                changes[position].kind, entity: names.entity, recordID: changes[position].recordID, scope: changes[position].scope,
                baseVersion: changes[position].baseVersion, links: changes[position].links, allFields: allFields,
                fieldCount: count + changes[position].deltas.count)
            for (field, value) in changes[position].deltas {
                encoder.field(name: names.fields[field], kindCode: plan.fieldKindCodes[field] | SyncLogCoding.deltaFlag, value: value)
            }
            for index in 0..<count {
                let field = allFields ? index : changes[position].fields?[index] ?? index
                var value = changes[position].value(at: index)
                // References travel as the target's record id.
                if plan.hasReferences, let target = plan.fieldTargets[field], case let .int64(key) = value.storage,
                    let targetPlan = state.plan(target)
                {
                    value = try memberRecord(targetPlan, row: key, in: db).recordID.databaseValue
                }
                if allFields {
                    encoder.value(value)
                } else {
                    encoder.field(name: names.fields[field], kindCode: plan.fieldKindCodes[field], value: value)
                }
            }
        }
        guard let encoder else { return nil }
        return try encoder.withEncoded { blob in
            try SyncLog.append(blob, stamp: stamp, author: author, timestamp: now, in: db)
        }
    }
}

/// SQLite copies the bytes of a value bound with this destructor.
private let sqliteTransientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// What applying a remote batch adds to its save: the record ids and scopes of the models it
/// creates, the server versions to record, and the pending references to keep or drop. Run in
/// the save's transaction.
final class SyncApplyWork: SaveInput {
    var recordIDs: [ObjectIdentifier: String] = [:]
    var scopes: [ObjectIdentifier: String?] = [:]
    var versions: [(entity: String, recordID: String, version: Int64, scope: String??)] = []
    /// The server versions of the models the batch creates, written with their records (an
    /// update per record after the insert cost as much again).
    var versionsOfNew: [ObjectIdentifier: Int64] = [:]
    var pendingAdded: [SyncRecords.PendingReference] = []
    var pendingResolved: [SyncRecords.PendingReference] = []
    var pendingCleared: [(entity: String, recordID: String, property: String)] = []
    /// Records the batch deleted (or that were already gone): nothing waits for them any more.
    var deletedRecords: [(entity: String, recordID: String)] = []
    /// The merged texts' changes of the models the batch upserts, by model storage (see
    /// `SyncSaveCapture.mergeText`).
    var texts: [ObjectIdentifier: [String: [RemoteTextChange]]] = [:]
    /// The sync engine's own writes for this batch (cursor, rebase state), run last.
    var alsoWriting: ((Database) throws -> Void)?
    /// How many references wait for their record once the batch is written (set by `run`).
    var pendingCount: Int?

    func run(in db: Database) throws {
        for (entity, recordID) in deletedRecords {
            try SyncRecords.removePending(involving: entity, recordID: recordID, in: db)
        }
        for (entity, recordID, property) in pendingCleared {
            try SyncRecords.removePending(entity: entity, recordID: recordID, property: property, in: db)
        }
        for reference in pendingResolved { try SyncRecords.removePending(reference, in: db) }
        for reference in pendingAdded { try SyncRecords.addPending(reference, in: db) }
        for (entity, recordID, version, scope) in versions {
            try SyncRecords.setServerVersion(version, scope: scope, entity: entity, recordID: recordID, in: db)
        }
        pendingCount = try SyncRecords.pendingCount(in: db)
        try alsoWriting?(db)
    }
}
