import OpenSwiftDataSyncProtocol

/// Decides a push from the state read in its transaction: exactly-once (replays, gaps,
/// forks), authorization, value kinds, conflict policies, deletes. Pure: the same snapshot and
/// request give the same plan, whatever the backend.
struct PushEvaluator: Sendable {
    let user: String
    let request: PushRequest
    let hashes: [MutationID: String]
    let configuration: SyncServiceConfiguration
    let now: Int64
    /// Texts' documents decoded during this push, by their encoded state: a push of many edits
    /// of one text decodes it once.
    let texts = PushTextDocuments()

    /// A refusal of one mutation.
    struct Rejection: Error {
        var reason: RejectionReason
        var message: String
        var keys: [RecordKey]
    }

    /// The state a batch builds up, mutation by mutation.
    struct Working {
        var records: [RecordKey: StoredRecord]
        var scopes: [ScopeID: ScopeRecord]
        var newScopes: [ScopeID: ScopeRecord] = [:]
        var changed: Set<RecordKey> = []
        var changes: [LogEntry] = []
        var head: ServerVersion
        var conflicts = 0
        var currentMutation: MutationID = 0
        var currentTxn: ServerVersion?
        /// The schema's enforced references (see `PushEvaluator+DeleteRules.swift`).
        var deleteRules = DeleteRuleGraph(nil)
        /// Per record id, the records whose reference fields held it at some point of the
        /// batch: candidates, checked against their current fields when used (only added to,
        /// so a rollback leaves it a superset).
        var referrers: [RecordID: Set<RecordKey>] = [:]
        /// The current mutation's deletes of records a `deny` reference pointed at, checked
        /// when all its changes are applied (a save may delete the referrer too).
        var denied: [DeniedDelete] = []
        /// How to take back the current mutation's changes if it is rejected. (Changing the
        /// state in place and undoing a rejection, rather than trying each mutation on a copy,
        /// keeps a batch linear: a copy of the growing log and record map per mutation made a
        /// batch of n mutations cost n².)
        var undo = Undo()

        struct Undo {
            var changesCount = 0
            var head: ServerVersion = 0
            var conflicts = 0
            /// The value before the mutation of each record it set (nil: it had none).
            var records: [RecordKey: StoredRecord?] = [:]
            /// Keys the mutation added to `changed`.
            var changed: [RecordKey] = []
            /// Scopes the mutation claimed.
            var claimed: [ScopeID] = []
        }

        /// Starts a mutation: what it changes from here on can be undone.
        mutating func begin(_ mutation: MutationID) {
            currentMutation = mutation
            currentTxn = nil
            denied = []
            undo = Undo(changesCount: changes.count, head: head, conflicts: conflicts)
        }

        /// Takes back everything changed since `begin`.
        mutating func rollback() {
            changes.removeSubrange(undo.changesCount...)
            head = undo.head
            conflicts = undo.conflicts
            for (key, old) in undo.records { records[key] = old }
            for key in undo.changed { changed.remove(key) }
            for scope in undo.claimed {
                scopes[scope] = nil
                newScopes[scope] = nil
            }
            undo = Undo(changesCount: changes.count, head: head, conflicts: conflicts)
        }

        /// Sets a record and marks it changed.
        mutating func set(_ record: StoredRecord, for key: RecordKey) {
            if undo.records.index(forKey: key) == nil { undo.records.updateValue(records[key], forKey: key) }
            records[key] = record
            if changed.insert(key).inserted { undo.changed.append(key) }
            if !deleteRules.isEmpty { indexReferences(of: record) }
        }

        /// Adds the record to the candidate referrers of the ids its reference fields hold.
        mutating func indexReferences(of record: StoredRecord) {
            for (_, target) in record.referenceTargets { referrers[target, default: []].insert(record.key) }
        }

        /// Claims a scope for `owner`.
        mutating func claim(_ record: ScopeRecord) {
            scopes[record.scope] = record
            newScopes[record.scope] = record
            undo.claimed.append(record.scope)
        }
    }

    func evaluate(_ snapshot: PushSnapshot) throws -> PushPlan {
        if let client = snapshot.client, client.user != user {
            throw SyncServiceError(
                403, .clientIDOwnedByAnotherUser, "client id \(request.clientID.debugDescription) belongs to another user; take a new client id")
        }
        let last = snapshot.client?.lastMutationID ?? 0
        var clock = HybridLogicalClock(last: snapshot.clock, maximumDrift: configuration.maximumClockDrift)
        guard let first = request.mutations.first else {
            return PushPlan(
                response: PushResponse(lastMutationID: last, results: [], serverStamp: snapshot.clock), client: nil, results: [], records: [],
                changes: [], newScopes: [], clock: snapshot.clock, head: snapshot.head, now: now, readers: [], changedScopes: [])
        }
        if first.id > last + 1 {
            throw SyncServiceError(
                409, .mutationGap,
                "the first mutation id is \(first.id) but the last one processed for this client is \(last); send from \(last + 1)",
                lastMutationID: last)
        }
        var results: [MutationResult] = []
        var newResults: [StoredResult] = []
        var working = Working(records: snapshot.records, scopes: snapshot.scopes, head: snapshot.head)
        let schema = request.schema ?? snapshot.client?.schema
        working.prepareDeleteRules(schema)
        var lastHash = snapshot.client?.lastHash ?? ""
        var applied = 0
        var rejected = 0
        for mutation in request.mutations {
            let hash = hashes[mutation.id] ?? ""
            if mutation.id <= last {
                if let stored = snapshot.results[mutation.id] {
                    guard stored.hash == hash else { throw forked(mutation.id, last) }
                    results.append(stored.result)
                } else if mutation.id == last, let client = snapshot.client, client.lastHash != hash {
                    throw forked(mutation.id, last)
                } else {
                    // Its answer is gone: the client acknowledged it (it pushed from a later id
                    // since), so the sender is a copy of the client that lost its state (a
                    // restored device), or the store predates acknowledged answers and dropped
                    // it by age. Either way the server cannot tell whether it was applied or
                    // rejected; claiming either could lose a save silently, so the sender takes
                    // a new client id (see ARCHITECTURE.md, "Push answers").
                    throw answerGone(mutation.id, last)
                }
                continue
            }
            let receipt = clock.now(wallMilliseconds: UInt64(max(0, now)))
            let stamp = min(mutation.stamp, receipt)
            working.begin(mutation.id)
            let result: MutationResult
            do {
                for change in mutation.changes {
                    try apply(change, stamp: stamp, schema: schema, to: &working, snapshot: snapshot)
                }
                try checkDeniedDeletes(working)
                result = MutationResult(id: mutation.id, status: .applied)
                applied += 1
            } catch let rejection as Rejection {
                working.rollback()
                // The state of every record the mutation touched, not only the ones at fault:
                // the client rolls each of them back to it (a record it finds no state for is
                // one the server does not have).
                var keys = rejection.keys
                for change in mutation.changes {
                    let key = RecordKey(entity: change.entity, recordID: change.recordID)
                    if !keys.contains(key) { keys.append(key) }
                }
                let states = keys.compactMap { key -> RecordState? in
                    guard let record = working.records[key] else { return nil }
                    let access = ScopeAccessLevel.of(user, to: record.scope, record: working.scopes[record.scope])
                    return access.canRead ? record.state : nil
                }
                result = MutationResult(
                    id: mutation.id, status: .rejected, reason: rejection.reason, message: rejection.message, serverRecords: states)
                rejected += 1
            }
            results.append(result)
            newResults.append(StoredResult(id: mutation.id, hash: hash, result: result))
            lastHash = hash
        }
        let newLast = max(last, request.mutations.last?.id ?? last)
        let client: ClientRecord? =
            newResults.isEmpty && request.schema == nil
            ? nil
            : ClientRecord(clientID: request.clientID, user: user, lastMutationID: newLast, lastHash: lastHash, schema: schema)
        var readers: Set<String> = []
        var changedScopes: Set<ScopeID> = []
        for entry in working.changes {
            changedScopes.insert(entry.change.scope)
        }
        for scope in changedScopes {
            if let record = working.scopes[scope] ?? ScopeRecord.implicit(scope) { readers.formUnion(record.readers) }
        }
        var plan = PushPlan(
            response: PushResponse(lastMutationID: newLast, results: results, serverStamp: clock.last),
            client: client, results: newResults,
            records: working.changed.sorted().compactMap { working.records[$0] },
            changes: working.changes, newScopes: working.newScopes.values.sorted { $0.scope < $1.scope },
            clock: clock.last, head: working.head, now: now, readers: readers, changedScopes: changedScopes)
        plan.applied = applied
        plan.resultsAcknowledgedBelow = first.id
        plan.rejected = rejected
        plan.conflicts = working.conflicts
        return plan
    }

    private func forked(_ id: MutationID, _ last: MutationID) -> SyncServiceError {
        SyncServiceError(
            409, .clientForked,
            "mutation \(id) was processed before with other content (the last processed is \(last)): this device's client id was used elsewhere or restored from a backup; take a new client id",
            lastMutationID: last)
    }

    private func answerGone(_ id: MutationID, _ last: MutationID) -> SyncServiceError {
        SyncServiceError(
            409, .clientForked,
            "mutation \(id) was processed before and its answer was acknowledged and dropped (the last processed is \(last)): this client's state is older than what it acknowledged (restored from a backup?); take a new client id",
            lastMutationID: last)
    }

    // MARK: One change

    func access(_ scope: ScopeID, _ working: Working) -> ScopeAccessLevel {
        ScopeAccessLevel.of(user, to: scope, record: working.scopes[scope])
    }

    /// Refuses a write into `scope` unless the user may write into it: `readOnly` for a reader
    /// (a version 1 client gets `scopeNotGranted`, see `SyncService.push`), `scopeNotGranted`
    /// for anyone else. `keys` are the records whose server state the answer shows.
    private func checkWritable(_ scope: ScopeID, _ key: RecordKey, keys: [RecordKey], _ working: Working) throws {
        switch access(scope, working) {
        case .owner, .member, .unclaimed:
            return
        case .reader:
            throw Rejection(
                reason: .readOnly, message: "\(key): scope \(scope) is read-only for you (you were granted it as a reader)", keys: keys)
        case .none:
            throw Rejection(reason: .scopeNotGranted, message: "\(key): scope \(scope) is not granted to you", keys: keys)
        }
    }

    private func claim(_ scope: ScopeID, _ working: inout Working) {
        guard scope.privateOwner == nil, working.scopes[scope] == nil else { return }
        working.claim(ScopeRecord(scope: scope, owner: user))
    }

    private func apply(
        _ change: RecordChange, stamp: HLCTimestamp, schema: SchemaDescriptor?, to working: inout Working, snapshot: PushSnapshot
    ) throws {
        let key = RecordKey(entity: change.entity, recordID: change.recordID)
        let clientID = request.clientID
        let existing = working.records[key]
        let entitySchema = schema?.entity(named: change.entity)
        if schema != nil, entitySchema == nil, change.op != .delete {
            throw Rejection(reason: .validation, message: "entity \(change.entity.debugDescription) is not in the client's schema", keys: [key])
        }
        if let entitySchema {
            for name in change.fields.keys where !entitySchema.fields.contains(where: { $0.name == name }) {
                throw Rejection(
                    reason: .validation, message: "\(key): field \(name.debugDescription) is not in the client's schema of \(change.entity)",
                    keys: [key])
            }
            for name in change.links.keys where !entitySchema.links.contains(where: { $0.name == name }) {
                throw Rejection(
                    reason: .validation, message: "\(key): relationship \(name.debugDescription) is not in the client's schema of \(change.entity)",
                    keys: [key])
            }
            for (name, value) in change.fields where value == .null {
                if let field = entitySchema.fields.first(where: { $0.name == name }), !field.optional {
                    throw Rejection(reason: .validation, message: "\(key): field \(name.debugDescription) is not optional", keys: [key])
                }
            }
        }
        switch change.op {
        case .insert:
            if let existing {
                let current = access(existing.scope, working)
                if !current.canRead {
                    throw Rejection(reason: .recordIDTaken, message: "\(key) exists in a scope you may not read; choose another record id", keys: [])
                }
            }
            try checkWritable(change.scope, key, keys: [key], working)
            if let existing, !existing.deleted {
                // Two devices created the same record (a natural key): merge as an update, which
                // writes into the record's scope too (a reader of it may not).
                if existing.scope != change.scope { try checkWritable(existing.scope, key, keys: [key], working) }
                try update(existing, with: change, stamp: stamp, schema: entitySchema, working: &working, snapshot: snapshot)
                return
            }
            try checkKinds(change, record: nil, schema: entitySchema, key: key)
            try checkMerges(change, record: nil, schema: entitySchema, key: key)
            let values = try resolveReferences(change.fields, of: key, working: working)
            claim(change.scope, &working)
            var fields: [SyncName: StoredField] = [:]
            for (name, value) in values {
                fields[name] = StoredField(
                    value: value, kind: value.kind ?? schemaKind(entitySchema, name), stamp: stamp, client: clientID,
                    merge: declaredMerge(entitySchema, name))
            }
            try insertSets(&fields, schema: entitySchema, version: working.head + 1, mutation: working.currentMutation, key: key)
            _ = try apply(
                change.merge, to: &fields, stamp: stamp, version: working.head + 1, seen: change.baseVersion, mutation: working.currentMutation,
                key: key)
            var links: [SyncName: [RecordID: StoredLink]] = [:]
            for (name, linkChange) in change.links {
                for target in linkChange.added { links[name, default: [:]][target] = StoredLink(present: true, stamp: stamp, client: clientID) }
            }
            working.head += 1
            let record = StoredRecord(
                entity: change.entity, recordID: change.recordID, scope: change.scope, version: working.head, deleted: false, fields: fields,
                stamp: stamp, writer: clientID, links: links)
            working.set(record, for: key)
            log(.insert, record, fields: record.values, links: insertLinks(record), working: &working)
        case .update:
            guard let existing else {
                throw Rejection(reason: .recordNotFound, message: "\(key) does not exist on the server", keys: [key])
            }
            let current = access(existing.scope, working)
            guard current.canRead else {
                throw Rejection(reason: .scopeNotGranted, message: "\(key): its scope is not granted to you", keys: [])
            }
            if existing.deleted {
                throw Rejection(
                    reason: .recordDeleted,
                    message:
                        "\(key) was deleted at version \(existing.version)\(change.baseVersion.map { ", after the version \($0) this update is based on" } ?? "")",
                    keys: [key])
            }
            // Both the scope it is in and the one it moves to are written.
            try checkWritable(existing.scope, key, keys: [key], working)
            if change.scope != existing.scope { try checkWritable(change.scope, key, keys: [key], working) }
            try update(existing, with: change, stamp: stamp, schema: entitySchema, working: &working, snapshot: snapshot)
        case .delete:
            guard let existing else {
                throw Rejection(reason: .recordNotFound, message: "\(key) does not exist on the server", keys: [key])
            }
            guard access(existing.scope, working).canRead else {
                throw Rejection(reason: .scopeNotGranted, message: "\(key): its scope is not granted to you", keys: [])
            }
            if existing.deleted { return }
            try checkWritable(existing.scope, key, keys: [key], working)
            let policy = policy(for: change.entity, schema: schema)
            if let resolver = configuration.resolvers[change.entity] {
                if case .refuse(let message) = resolver(ResolverInput(serverRecord: existing.state, change: change, stamp: stamp, clientID: clientID))
                {
                    throw Rejection(reason: .resolverRefused, message: "\(key): \(message)", keys: [key])
                }
            } else if policy == .rejectStale, isStale(existing, change: change, snapshot: snapshot) {
                throw Rejection(
                    reason: .stale,
                    message: "\(key) changed through another client after version \(change.baseVersion ?? 0); it is at version \(existing.version)",
                    keys: [key])
            }
            tombstone(existing, stamp: stamp, working: &working)
            try enforceDeleteRules(deleting: existing, stamp: stamp, working: &working)
        }
    }

    private func update(
        _ existing: StoredRecord, with change: RecordChange, stamp: HLCTimestamp, schema entitySchema: EntityDescriptor?, working: inout Working,
        snapshot: PushSnapshot
    ) throws {
        let key = existing.key
        let clientID = request.clientID
        try checkKinds(change, record: existing, schema: entitySchema, key: key)
        try checkMerges(change, record: existing, schema: entitySchema, key: key)
        var fieldsToApply = try resolveReferences(change.fields, of: key, working: working)
        // Contributions to merged fields, and plain writes of such fields turned into ones:
        // applied whatever the policy decides for the other fields.
        var plainFields = fieldsToApply
        var merges = try contributions(ofPlain: &plainFields, change: change, existing: existing, schema: entitySchema, snapshot: snapshot)
        // Texts whose edits the server made from a whole write: readers get their states, since
        // the writer's own copy does not hold those edits' identities.
        let serverMadeTexts = Set(
            merges.compactMap { name, merge in
                if case .text = merge { name } else { nil }
            })
        fieldsToApply = plainFields
        merges.merge(change.merge) { _, new in new }
        try checkStatelessTexts(change, existing: existing, snapshot: snapshot)
        var linksToApply = change.links
        var unconditional = false
        let policy = policy(for: change.entity, schema: request.schema ?? snapshot.client?.schema)
        if let resolver = configuration.resolvers[change.entity] {
            switch resolver(ResolverInput(serverRecord: existing.state, change: change, stamp: stamp, clientID: clientID)) {
            case .usePolicy: break
            case .apply(let fields, let links):
                // A merged field merges whatever the resolver says: a value it writes whole
                // would drop the field's state (a set's tags) and others' contributions.
                fieldsToApply = try resolveReferences(fields, of: key, working: working).filter {
                    merges[$0.key] == nil && existing.fields[$0.key]?.merge == nil && declaredMerge(entitySchema, $0.key) == nil
                }
                linksToApply = links
                unconditional = true
            case .refuse(let message):
                throw Rejection(reason: .resolverRefused, message: "\(key): \(message)", keys: [key])
            }
        }
        var record = existing
        var changedFields: [SyncName: SyncValue] = [:]
        var changedLinks: [SyncName: LinkChange] = [:]
        func wins(_ otherStamp: HLCTimestamp, _ otherClient: ClientID) -> Bool {
            (stamp, clientID) >= (otherStamp, otherClient)
        }
        if !unconditional {
            switch policy {
            case .fieldLastWriterWins:
                break
            case .recordLastWriterWins:
                if !wins(existing.stamp, existing.writer) {
                    working.conflicts += fieldsToApply.count
                    // Logged with the values that won, as a losing field is (below).
                    for (name, value) in fieldsToApply {
                        if let old = existing.fields[name], old.value != value { changedFields[name] = old.value }
                    }
                    for (name, linkChange) in linksToApply {
                        let present = existing.links[name] ?? [:]
                        let added = linkChange.removed.filter { present[$0]?.present == true }
                        let removed = linkChange.added.filter { present[$0]?.present != true }
                        if !added.isEmpty || !removed.isEmpty {
                            changedLinks[name] = LinkChange(added: added.sorted(), removed: removed.sorted())
                        }
                    }
                    fieldsToApply = [:]
                    linksToApply = [:]
                }
                unconditional = true
            case .rejectStale:
                // Contributions alone are never stale: they commute with every other write.
                let onlyContributions = change.op == .update && fieldsToApply.isEmpty && linksToApply.isEmpty && !merges.isEmpty
                if !onlyContributions, isStale(existing, change: change, snapshot: snapshot) {
                    throw Rejection(
                        reason: .stale,
                        message:
                            "\(key) changed through another client after version \(change.baseVersion ?? 0); it is at version \(existing.version)",
                        keys: [key])
                }
                unconditional = true
            }
        }
        // A write that loses to a later one is logged with the value that won: the writer's
        // model shows its own value until a pulled change says otherwise, and the later write
        // may have logged nothing (it wrote the value the field already had). Seed 3111: a
        // title set to t2 lost to another device's later t3, written when the field already
        // held t3, and the writer kept showing t2.
        for (name, value) in fieldsToApply {
            if let old = record.fields[name], !unconditional, !wins(old.stamp, old.client) {
                working.conflicts += 1
                if old.value != value { changedFields[name] = old.value }
                continue
            }
            let kind = value.kind ?? record.fields[name]?.kind ?? schemaKind(entitySchema, name)
            record.fields[name] = StoredField(
                value: value, kind: kind, stamp: stamp, client: clientID, merge: record.fields[name]?.merge ?? declaredMerge(entitySchema, name))
            if existing.fields[name]?.value != value { changedFields[name] = value }
        }
        changedFields.merge(
            try apply(
                merges, to: &record.fields, stamp: stamp, version: working.head + 1, seen: change.baseVersion, mutation: working.currentMutation,
                key: key)
        ) {
            _, total in total
        }
        // The texts' edits go to readers with the values they give; a text whose edits the
        // server made goes with its state.
        let textEdits = merges.filter { name, merge in
            guard case .text = merge else { return false }
            return changedFields[name] != nil && !serverMadeTexts.contains(name)
        }
        let textStates = serverMadeTexts.reduce(into: [SyncName: String]()) { states, name in
            if changedFields[name] != nil, let state = record.fields[name]?.text { states[name] = state.base64EncodedString() }
        }
        for (name, linkChange) in linksToApply {
            var added: [RecordID] = []
            var removed: [RecordID] = []
            for (targets, present) in [(linkChange.added, true), (linkChange.removed, false)] {
                for target in targets {
                    let old = record.links[name]?[target]
                    if let old, !unconditional, !wins(old.stamp, old.client) {
                        working.conflicts += 1
                        // Logged as it stands, as for a field (above).
                        if old.present != present {
                            if old.present { added.append(target) } else { removed.append(target) }
                        }
                        continue
                    }
                    record.links[name, default: [:]][target] = StoredLink(present: present, stamp: stamp, client: clientID)
                    if (old?.present ?? false) != present {
                        if present { added.append(target) } else { removed.append(target) }
                    }
                }
            }
            if !added.isEmpty || !removed.isEmpty {
                changedLinks[name] = LinkChange(added: added.sorted(), removed: removed.sorted())
            }
        }
        let moved = change.scope != existing.scope
        let latest = stamp > record.stamp || (stamp == record.stamp && clientID > record.writer)
        if changedFields.isEmpty, changedLinks.isEmpty, !moved {
            // Every write lost to a later one, or wrote the value already there: applied,
            // nothing to log. A write of the same value that won is kept all the same (its stamp
            // and writer), so that an older write arriving after it loses to it, as it would
            // have had it arrived first.
            if record != existing {
                if latest {
                    record.stamp = stamp
                    record.writer = clientID
                }
                working.set(record, for: key)
            }
            return
        }
        if moved { claim(change.scope, &working) }
        if latest {
            record.stamp = stamp
            record.writer = clientID
        }
        if moved {
            working.head += 1
            var old = record
            old.version = working.head
            log(.delete, old, fields: [:], links: [:], working: &working)
            record.scope = change.scope
            working.head += 1
            record.version = working.head
            log(.insert, record, fields: record.values, links: insertLinks(record), working: &working)
        } else {
            working.head += 1
            record.version = working.head
            log(.update, record, fields: changedFields, links: changedLinks, merge: textEdits, textStates: textStates, working: &working)
        }
        working.set(record, for: key)
    }

    private func insertLinks(_ record: StoredRecord) -> [SyncName: LinkChange] {
        record.presentLinks.mapValues { LinkChange(added: $0) }
    }

    /// Logs a change. An update carries the merged texts' edits that made it (`merge`), or the
    /// texts' states where the server made the edits (`textStates`); an insert carries the
    /// states of the record's merged texts that have one, since a reader has no copy of them
    /// to apply edits to.
    func log(
        _ op: RecordOperation, _ record: StoredRecord, fields: [SyncName: SyncValue], links: [SyncName: LinkChange],
        merge: [SyncName: FieldMerge] = [:], textStates: [SyncName: String] = [:], working: inout Working
    ) {
        let seq = working.head
        // Every entry of one mutation carries the sequence of its first entry: pull pages
        // break only where that marker changes.
        let txn = working.currentTxn ?? seq
        working.currentTxn = txn
        let states = op == .insert ? record.fields.compactMapValues { $0.text?.base64EncodedString() } : textStates
        let change = PulledChange(
            version: seq, op: op, entity: record.entity, recordID: record.recordID, scope: record.scope, fields: fields, links: links,
            clientID: request.clientID, mutationID: working.currentMutation, merge: merge.isEmpty ? nil : merge,
            textStates: states.isEmpty ? nil : states)
        working.changes.append(LogEntry(seq: seq, txn: txn, change: change, createdAt: now))
    }

    private func checkKinds(_ change: RecordChange, record: StoredRecord?, schema: EntityDescriptor?, key: RecordKey) throws {
        for (name, value) in change.fields {
            // A client that does not know blobs reads a blob's field as nil: its write of the
            // field would erase the blob for everyone (it is refused, naming the field).
            if request.protocolVersion < .blobs, record?.deleted == false, case .blob? = record?.fields[name]?.value {
                throw Rejection(
                    reason: .validation,
                    message:
                        "\(key): field \(name.debugDescription) holds a blob, which this app's protocol version \(request.protocolVersion) cannot read; writing it would erase it: update the app",
                    keys: [key])
            }
            guard let kind = value.kind?.fieldKind else { continue }
            let expected = ((record?.deleted == false ? record?.fields[name]?.kind : nil) ?? schemaKind(schema, name))?.fieldKind
            if let expected, expected != kind {
                throw Rejection(
                    reason: .wrongValueType,
                    message: "\(key): field \(name.debugDescription) holds \(expected.rawValue) values, not \(kind.rawValue)", keys: [key])
            }
        }
    }

    private func schemaKind(_ schema: EntityDescriptor?, _ name: SyncName) -> SyncValueKind? {
        schema?.fields.first { $0.name == name }?.kind
    }

    private func policy(for entity: SyncName, schema: SchemaDescriptor?) -> ConflictPolicy {
        configuration.policies[entity] ?? schema?.entity(named: entity)?.policy ?? .fieldLastWriterWins
    }

    /// Stale: the record changed after the change's base version through another client's
    /// mutation (a client never conflicts with itself). Below the compaction horizon the log
    /// no longer says who wrote, so any change counts.
    func isStale(_ record: StoredRecord, change: RecordChange, snapshot: PushSnapshot) -> Bool {
        let base = change.baseVersion ?? 0
        guard record.version > base else { return false }
        if base < snapshot.horizon { return true }
        return (snapshot.history[record.key] ?? []).contains { $0.version > base && $0.client != request.clientID }
    }
}
