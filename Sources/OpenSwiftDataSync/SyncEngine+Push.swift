import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataSyncProtocol

extension SyncEngine {
    /// The next batch: the stored mutations the server has not answered (resent exactly as
    /// stored), or else new mutations made from the outbox, stored before they are sent.
    func nextBatch() throws -> [Mutation] {
        let limit = pushLimit
        let outbox = SyncOutbox(user: user)
        var next = nextMutationID
        let batch = try storeWrite { db -> [Mutation] in
            let unanswered = try SyncEngineStore.unanswered(limit: limit, in: db)
            if !unanswered.isEmpty { return unanswered }
            var cursor = try ModelContainer.syncConsumerCursor(SyncEngineStore.consumer, in: db)
            // A save of a record that a held save touches is held behind it, unnumbered; the
            // log is read on while every entry read was held, so that a run of saves of a held
            // record never hides the saves behind it.
            var heldRecords = try SyncHeldSaves.records(in: db)
            var mutations: [Mutation] = []
            while mutations.isEmpty {
                let entries = try ModelContainer.syncLogEntries(after: cursor, limit: limit, in: db)
                guard let last = entries.last else { break }
                for entry in entries {
                    let changes = outbox.changes(of: entry)
                    let records = Set(changes.map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) })
                    if !heldRecords.isEmpty, !records.isDisjoint(with: heldRecords) {
                        heldRecords.formUnion(records)
                        try SyncHeldSaves.append(
                            Mutation(id: 0, stamp: HLCTimestamp(rawValue: entry.stamp), changes: changes), logSequence: entry.sequence,
                            reason: "follows a held save of the same records", in: db)
                        continue
                    }
                    let mutation = Mutation(id: next, stamp: HLCTimestamp(rawValue: entry.stamp), changes: changes)
                    try SyncEngineStore.insertSent(mutation, logSequence: entry.sequence, in: db)
                    mutations.append(mutation)
                    next += 1
                }
                try ModelContainer.advanceSyncConsumer(SyncEngineStore.consumer, to: last.sequence, in: db)
                cursor = last.sequence
            }
            try SyncEngineStore.set("nextMutationID", String(next), in: db)
            return mutations
        }
        nextMutationID = next
        return batch
    }

    /// Pushes until nothing is left to send; returns how many mutations the server answered.
    @discardableResult
    func pushAll() async throws -> Int {
        var rounds = 0
        var answered = 0
        while true {
            // A push carries the cursor of the client's last download: it names the history
            // the client's answers come from, and the server refuses a push made against
            // another one (restored since). A client without one (never pulled to the end, or
            // downloading everything again) pulls first: a push without a cursor, held by the
            // network and delivered after a restore, would be decided by the restored database
            // against an answer the client already holds (seed 6203: a save rejected
            // `scopeNotGranted`, reported, then applied from the late copy).
            guard cursor != nil else { return answered }
            try releaseHeldSavesIfDue()
            let batch = try nextBatch()
            guard let first = batch.first, let last = batch.last else { return answered }
            rounds += 1
            if rounds > 10_000 { return answered }
            let response: PushResponse
            do {
                response = try await transport.push(
                    PushRequest(
                        protocolVersion: protocolVersion, clientID: clientID, mutations: batch, schema: schemaSent ? nil : pushSchema, cursor: cursor,
                        predecessors: predecessors.request)
                )
            } catch let error as SyncTransportError {
                // The server was restored since this client's last pull: nothing was processed.
                // The pull that follows resets the cursor and marks what the server lost for
                // resending; the cycle's next push sends it.
                if error.code == .staleEpoch { return answered }
                try await handlePushRefusal(error, batch: batch)
                continue
            }
            guard response.protocolVersion == protocolVersion else {
                throw SyncEngineError.unsupportedProtocolVersion(server: response.protocolVersion.rawValue)
            }
            let results = response.results.filter { $0.id >= first.id && $0.id <= last.id }
            guard response.lastMutationID >= last.id, Set(results.map(\.id)) == Set(batch.map(\.id)) else {
                throw SyncEngineError.badServerAnswer("the push answer does not account for mutations \(first.id)…\(last.id)")
            }
            observe(response.serverStamp)
            schemaSent = true
            try storeWrite { db in
                for result in results { try SyncEngineStore.record(result, in: db) }
            }
            answered += results.count
            emit(.pushed(count: results.count, lastMutationID: last.id))
            await updateStatus()
        }
    }

    /// Recovers from a refused push, or throws what cannot be recovered here.
    private func handlePushRefusal(_ error: SyncTransportError, batch: [Mutation]) async throws {
        guard case let .refused(_, refusal) = error else { throw error }
        switch refusal.code {
        case .mutationGap:
            // The server lost mutations (restored from a backup): resend from its last id.
            guard let last = refusal.lastMutationID else { throw SyncEngineError.badServerAnswer("a mutationGap answer without lastMutationID") }
            try resendLost(after: last)
        case .clientForked, .clientIDOwnedByAnotherUser:
            // A restored device, or an id taken by someone else: a new client id, and the
            // unanswered mutations renumbered from 1 under it. Answered ones stay settled.
            // Those the server processed under the old id (through its lastMutationID) were
            // counted already or must not count: their counters' contributions are not resent.
            try takeNewClientID(processedThrough: refusal.code == .clientForked ? refusal.lastMutationID : nil)
        case .bodyTooLarge, .batchTooLarge:
            // Over the server's size limits: fewer mutations per push, and a save too large
            // on its own is sent in parts, each a mutation of its own, in order. One that
            // cannot be split is held on the device (never rolled back: it broke no rule of
            // the app's), so the queue behind it flows.
            if batch.count > 1 {
                pushLimit = max(1, batch.count / 2)
            } else if let big = batch.first {
                let next = try storeWrite { db in
                    try SyncEngineStore.split(big.id, in: db).map { next in
                        try SyncEngineStore.set("nextMutationID", String(next), in: db)
                        return next
                    }
                }
                if let next {
                    nextMutationID = next
                } else {
                    try await hold(big, limit: refusal.code == .bodyTooLarge ? .bodySize : .batchSize, message: refusal.message)
                }
            }
        case .malformedRequest, .wrongValueType, .unknownOperation:
            // The request was refused for its content. Several mutations: send them one by one
            // to find the one at fault. One: it can never be accepted, so it is rejected here
            // and the queue behind it flows (no head-of-line wedge).
            if batch.count > 1 {
                pushLimit = 1
            } else if let bad = batch.first {
                try rejectLocally(bad, message: refusal.description)
            }
        case .forbidden:
            throw SyncEngineError.accessDenied(refusal.message)
        case .unsupportedProtocolVersion:
            throw SyncEngineError.serverTooOld(
                required: protocolVersion.rawValue, supported: (refusal.supportedVersions ?? []).map(\.rawValue))
        default:
            throw error
        }
    }

    /// The server has processed this client's mutations only through `last` (it was restored
    /// from a backup): every mutation after it that the engine still has is sent again, from
    /// `last + 1` on, before anything new; those it no longer has are reported lost.
    func resendLost(after last: MutationID) throws {
        let current = nextMutationID
        let outcome = try storeWrite { db -> (lost: [MutationID], next: MutationID) in
            let outcome = try SyncEngineStore.resend(after: last, next: current, in: db)
            try SyncEngineStore.set("nextMutationID", String(outcome.next), in: db)
            try SyncEngineStore.set(SyncEngineStore.countedThroughKey, nil, in: db)
            return outcome
        }
        nextMutationID = outcome.next
        countedThrough = 0
        schemaSent = false
        if !outcome.lost.isEmpty { emit(.lostInServerRestore(outcome.lost)) }
    }

    /// Takes a new client id (a restored device, or an id another user holds): the unanswered
    /// mutations are renumbered from 1 under it; answered ones stay settled. The unanswered ones
    /// at or below `processedThrough` (the server processed them under the old id: applied,
    /// so already in its totals, or rejected, so never to count) are resent without their
    /// counters' contributions (an insert's counters at zero: the server adds an insert's
    /// value to the record it takes over), and the next pull downloads the scopes again to
    /// bring the server's totals.
    func takeNewClientID(processedThrough: MutationID? = nil) throws {
        let client = Self.makeClientID(&random)
        let shapes = shapes
        // The saves resent under the new id may remove what this device added under the old
        // one: the server counts the old id's processed adds as the device's own.
        let lineage = processedThrough.map { predecessors.adding(clientID, through: $0) } ?? predecessors
        let (next, dropped) = try storeWrite { db -> (MutationID, Bool) in
            try SyncEngineStore.set(SyncPredecessors.key, lineage.stored, in: db)
            try db.execute(sql: "DELETE FROM \(SyncEngineStore.sentTable) WHERE status != 'sent'")
            try SyncEngineStore.set(SyncEngineStore.countedThroughKey, nil, in: db)
            let dropped =
                try processedThrough.map { last in
                    try SyncEngineStore.dropContributions(through: last, isMerged: { shapes[$0]?.isMerged($1) ?? false }, in: db)
                } ?? false
            if dropped { try SyncEngineStore.set("cursor", nil, in: db) }
            let next = try SyncEngineStore.renumber(above: 0, from: 1, in: db)
            try SyncEngineStore.set("clientID", client, in: db)
            try SyncEngineStore.set("nextMutationID", String(next), in: db)
            return (next, dropped)
        }
        clientID = client
        predecessors = lineage
        nextMutationID = next
        countedThrough = 0
        schemaSent = false
        if dropped {
            cursor = nil
            requestCursor = nil
            staged = []
            snapshotScopes = []
        }
    }

    /// Drops a mutation the server refuses as a request (it was never processed): the ones
    /// after it move down by one, its inserts are removed locally (the server never had
    /// them), and it is reported as rejected. Its updates and deletes are rolled back by
    /// downloading the scopes again (the server sent no state to return to; the request was
    /// refused before it was read): the next pull is a snapshot, and with the mutation gone
    /// nothing masks those records any more.
    func rejectLocally(_ mutation: Mutation, message: String) throws {
        let inserts = mutation.changes.filter { $0.op == .insert }
        let refetch = mutation.changes.contains { $0.op != .insert }
        let next = try storeWrite { db -> MutationID in
            if refetch { try SyncEngineStore.set("cursor", nil, in: db) }
            try db.execute(sql: "DELETE FROM \(SyncEngineStore.sentTable) WHERE id = ?", arguments: [mutation.id])
            let next = try SyncEngineStore.renumber(above: mutation.id, from: mutation.id, in: db)
            let last = try MutationID.fetchOne(db, sql: "SELECT MAX(id) FROM \(SyncEngineStore.sentTable)")
            let following = max(next, (last ?? 0) + 1, mutation.id)
            try SyncEngineStore.set("nextMutationID", String(following), in: db)
            return following
        }
        nextMutationID = next
        if refetch {
            cursor = nil
            requestCursor = nil
            staged = []
            snapshotScopes = []
        }
        pushLimit = max(1, configuration.maxMutationsPerPush)
        if !inserts.isEmpty {
            let deletes = inserts.map { RemoteRecordChange.delete($0.entity, recordID: $0.recordID, serverVersion: 0) }
            do { try container.applyRemoteChanges(deletes) } catch { throw SyncEngineError.store("\(error)") }
        }
        let records = mutation.changes.map { SyncRecordReference(entity: $0.entity, recordID: $0.recordID) }
        emit(.rejected(SyncRejection(mutationID: mutation.id, reason: .validation, message: message, records: records, serverRecords: [])))
    }
}
