import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataSyncProtocol

extension SyncEngine {
    /// Pulls pages until the server has nothing more, applying each consistent one (with the
    /// inconsistent pages staged before it) in one transaction.
    func pullAll() async throws {
        counterEchoes = [:]
        do {
            do {
                try await pullPages()
            } catch let error as SyncTransportError where error.code == .clientIDOwnedByAnotherUser {
                // The id is another user's: take a new one and download again under it.
                try takeNewClientID()
                staged = []
                snapshotScopes = []
                requestCursor = cursor
                try await pullPages()
            }
        } catch {
            // Nothing of a failed download stays: the next pull starts from the last applied page.
            staged = []
            resetting = false
            revoked = []
            snapshotScopes = []
            requestCursor = cursor
            throw error
        }
    }

    private func pullPages() async throws {
        // A first download is applied like a reset's: a local record it does not hold and no
        // pending change masks was deleted on the server before this client first pulled
        // (pushed by this client, then deleted by another; or in a scope revoked since).
        if requestCursor == nil { resetting = true }
        // The next page is asked for as soon as this one's cursor is known, so the server
        // reads it (and the client receives and decodes it) while this one is applied.
        var prefetched: Task<PullResponse, any Error>?
        var inSnapshot = requestCursor == nil
        var observed: HLCTimestamp?
        // A page that fails (transport, apply) ends the download; a request still in flight for
        // the next page is cancelled and waited for, so nothing of this download runs after the
        // pull returns (it would reach the transport beside the next sync's requests).
        do {
            for _ in 0..<100_000 {
                let page: PullResponse
                if let next = prefetched {
                    prefetched = nil
                    page = try await next.value
                } else {
                    page = try await transport.pull(pullRequest(snapshot: inSnapshot))
                }
                try check(page)
                // The clock observes the newest stamp once per applied group of pages (each
                // observation is a write to the store).
                observed = max(observed ?? page.serverStamp, page.serverStamp)
                if page.consistent || !page.hasMore, let stamp = observed {
                    observe(stamp)
                    observed = nil
                }
                if let reason = page.reset {
                    // The server cannot continue the cursor: this page starts a fresh download.
                    // Mutations the server no longer has are resent under their ids.
                    staged = []
                    snapshotScopes = []
                    resetting = true
                    emit(.reset(reason))
                    try resendLost(after: page.lastMutationID)
                    try offerAttachmentsAgain()
                } else if try storeRead({ db in try SyncEngineStore.answered(above: page.lastMutationID, in: db) }) {
                    // The server answered mutations it no longer has (restored from a copy whose
                    // log reaches the cursor, so no reset): resent, else they stay pending forever
                    // (seed 953).
                    try resendLost(after: page.lastMutationID)
                    try offerAttachmentsAgain()
                }
                revoked += page.revokedScopes
                snapshotScopes.formUnion(page.snapshotScopes ?? [])
                staged += page.changes
                requestCursor = page.cursor
                inSnapshot = !page.consistent
                if page.hasMore, configuration.prefetchesPullPages {
                    let transport = self.transport
                    let request = pullRequest(snapshot: inSnapshot)
                    prefetched = Task { try await transport.pull(request) }
                }
                if let progress = page.progress {
                    emit(.progress(progress))
                    progressContinuation.yield(progress)
                }
                if page.consistent {
                    try apply(page)
                }
                if !page.hasMore { return }
            }
        } catch let SyncTransportError.refused(_, refusal) where refusal.code == .unsupportedProtocolVersion {
            await Self.abandon(prefetched)
            throw SyncEngineError.serverTooOld(required: protocolVersion.rawValue, supported: (refusal.supportedVersions ?? []).map(\.rawValue))
        } catch {
            await Self.abandon(prefetched)
            throw error
        }
        await Self.abandon(prefetched)
    }

    /// Cancels a page request still in flight and waits for it to end.
    private static func abandon(_ request: Task<PullResponse, any Error>?) async {
        guard let request else { return }
        request.cancel()
        _ = try? await request.value
    }

    /// The request for the page after `requestCursor`: larger pages while a snapshot is being
    /// read (they are staged and applied together anyway).
    private func pullRequest(snapshot: Bool) -> PullRequest {
        let limit = snapshot ? configuration.snapshotPageSize : configuration.pullPageSize
        return PullRequest(protocolVersion: protocolVersion, clientID: clientID, cursor: requestCursor, limit: limit)
    }

    /// Refuses a page the engine cannot apply: another protocol version. Nothing of it is
    /// applied. Records of entities this app does not sync (written by a newer version of the
    /// app) are not an error: they are skipped (see ``SyncRebase/add(_:)``), and downloaded
    /// again when an update of the app syncs them.
    private func check(_ page: PullResponse) throws {
        guard page.protocolVersion == protocolVersion else {
            throw SyncEngineError.unsupportedProtocolVersion(server: page.protocolVersion.rawValue)
        }
    }

    /// Applies the staged changes, settles the mutations the page covers, writes the shadows
    /// that nothing masks any more, and saves the cursor, all in one transaction.
    private func apply(_ page: PullResponse) throws {
        // A local save that commits between reading the pending mutations and the apply's
        // transaction would not be masked: the transaction checks that no save was logged in
        // between and, if one was, rolls back and is computed again.
        for _ in 0..<8 {
            do {
                try applyOnce(page)
                return
            } catch is LocalSaveRaced {
                continue
            }
        }
        throw SyncEngineError.store("local saves kept landing while a pulled page was applied; retrying later")
    }

    private struct LocalSaveRaced: Error {}

    /// Set inside the apply's transaction when a local save was logged since the pending
    /// mutations were read (the store wraps errors thrown there, so the flag says which it was).
    private final class RaceFlag {
        var raced = false
    }

    private func applyOnce(_ page: PullResponse) throws {
        // Mutations are settled only on the page that reaches the server's head (all their
        // changes are then in), and only once answered (a rejection's records are known).
        // One read: the unsettled mutations are decoded once per page, for both.
        let (sentRows, settleThrough, pending) = try storeRead { db in
            let sentRows = try SyncEngineStore.sent(in: db, memos: sentMemos)
            var settleThrough: MutationID?
            if !page.hasMore {
                let firstUnanswered = sentRows.first { $0.status == .sent }?.mutation.id ?? MutationID.max
                settleThrough = min(page.lastMutationID, firstUnanswered - 1)
            }
            return (sentRows, settleThrough, try pendingChanges(sent: sentRows, settledThrough: settleThrough, in: db))
        }
        let lastLogSequence = pending.lastLogSequence
        let storedShadows = try storeRead { db in try SyncEngineStore.shadows(in: db, memo: shadowMemo) }
        var shadows = storedShadows
        if resetting, !shadows.isEmpty {
            // A reset's download sends every field of each record it holds: the field and
            // existence shadows kept from before it (perhaps another epoch's log, whose versions
            // may be higher than the snapshot's) are replaced by its values, not compared with
            // them (seed 143: a counter's value pulled before a restore, at a higher version
            // than the restored server's, was written back over a rejection's rollback). Link
            // shadows stay: the download sends only the links present.
            let downloaded = Set(staged.map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) })
            shadows = shadows.filter {
                $0.key.part.isLink || !downloaded.contains(SyncRebase.RecordRef(entity: $0.key.entity, recordID: $0.key.recordID))
            }
        }
        // Counters' contributions still pending after this page, by mutation (held and unsent
        // saves have no id the server knows: they come last).
        // A page that reaches the head says which of this client's mutations the server has
        // processed: their contributions are in the totals pulled through it, answered or not
        // (an answer lost on its way).
        // Earlier pages of this pull showed some of this client's own changes: a record's
        // later totals count those mutations as well.
        var counters = SyncCounterQueue(
            clientID: clientID, processedThrough: page.hasMore ? (resetting ? 0 : countedThrough) : page.lastMutationID,
            echoed: resetting ? [:] : counterEchoes, isMerged: { [shapes] in shapes[$0]?.isMerged($1) ?? false })
        let unsettled = sentRows.filter { $0.mutation.id > (settleThrough ?? MutationID.min) }
        for row in unsettled { counters.add(row.mutation.changes, mutation: row.mutation.id) }
        counters.add(Array(pending.after.dropFirst(unsettled.reduce(0) { $0 + $1.mutation.changes.count })), mutation: MutationID.max)
        var rebase = SyncRebase(
            shapes: shapes, before: SyncRebase.masks(of: pending.before), after: SyncRebase.masks(of: pending.after), shadows: shadows,
            counters: counters)
        var events: [SyncEvent] = []
        // Inserts of records that pending mutations mask: those without a local row are
        // applied whole (see `SyncRebase.absent`).
        let maskedInserts = Set(
            staged.lazy.filter { $0.op == .insert }.map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) }.filter {
                rebase.before[$0].map { !$0.deletedLocally } ?? false
            })
        if !maskedInserts.isEmpty {
            let held = try storeRead { db in
                Set(try ModelContainer.syncRecordEntries(in: db).map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) })
            }
            rebase.absent = maskedInserts.subtracting(held)
        }
        rebase.supersede(staged)
        for change in staged { try rebase.add(change) }
        // Scopes revoked whose records are still to be removed: a record a pending mutation
        // masks stays until that mutation is answered (rejected, the rollback removes it;
        // applied, the scope was granted again). The set is kept across pages; a scope leaves
        // it when a change of it arrives (granted again: the server sends nothing else of it;
        // this client's own writes into it come back in the log too).
        let storedRevoked = try storeRead { db in try SyncEngineStore.value("revokedScopes", in: db) }
        var revokedScopes = Set((storedRevoked ?? "").split(separator: "\n").map(String.init))
        revokedScopes.formUnion(revoked.map(\.rawValue))
        revokedScopes.subtract(staged.map(\.scope.rawValue))
        let limit = settleThrough ?? 0
        let settled = sentRows.filter { $0.mutation.id <= limit }
        // The server names as revoked only the scopes the cursor held. A scope this client
        // wrote into while it was granted, and lost before this client downloaded it, is never
        // named: the records written there stayed (seed 9243: bob's list pushed into the team
        // scope granted again, then revoked before his download of it completed). The last
        // page of a pull holds every granted scope in its cursor: a scope a settled mutation
        // touched that it does not hold is revoked; one it holds is granted.
        var unheld: [ScopeID] = []
        if let held = page.cursorScopes.map({ Set($0.map(\.rawValue)) }) {
            revokedScopes.subtract(held)
            if settleThrough != nil {
                let written = Set(settled.flatMap { $0.mutation.changes.map(\.scope) })
                unheld = written.filter { !held.contains($0.rawValue) && !revokedScopes.contains($0.rawValue) }.sorted()
                revokedScopes.formUnion(unheld.map(\.rawValue))
            }
        }
        let keptRevoked = revokedScopes.isEmpty ? nil : revokedScopes.sorted().joined(separator: "\n")
        // The scopes the user may read, as the last page of a pull names them: a change from
        // the ones the previous pull named is reported (the first pull only records them).
        let storedReadable = try storeRead { db in try SyncEngineStore.value(SyncEngineStore.readableScopesKey, in: db) }
        var keptReadable = storedReadable
        var grantsChange: SyncGrantsChange?
        if !page.hasMore, let readable = page.cursorScopes {
            let now = Set(readable)
            keptReadable = now.map(\.rawValue).sorted().joined(separator: "\n")
            if let storedReadable, keptReadable != storedReadable {
                let before = Set(storedReadable.split(separator: "\n").map { ScopeID(rawValue: String($0)) })
                grantsChange = SyncGrantsChange(added: now.subtracting(before).sorted(), removed: before.subtracting(now).sorted())
            }
        }
        // The records a rejection leaves whose server state this client cannot know: it
        // downloads everything again after this page, which brings them whole.
        var unknownRecords: Set<SyncRebase.RecordRef> = []
        for item in settled {
            guard item.status == SyncEngineStore.Status.rejected, let result = item.result else { continue }
            let serverRecords = result.serverRecords ?? []
            var rolledBack = item.mutation
            if result.reason == RejectionReason.scopeNotGranted {
                // Refused while the scope was not granted, without its records; a scope this
                // client was never told it lost was granted again since (seed 694: bob's edit
                // pushed between a revoke and a re-grant that his pulls never saw). The server
                // holds the edited record, at values this client does not know: instead of a
                // rollback that deletes it, everything is downloaded again. (Inserts are rolled
                // back: the server has no such record. Records of the user's own scope that the
                // mutation also touched come with their state.)
                let unknown = rolledBack.changes.filter { change in
                    change.op != .insert && change.scope != ScopeID.user(user) && !revokedScopes.contains(change.scope.rawValue)
                        && !serverRecords.contains { $0.entity == change.entity && $0.recordID == change.recordID }
                }
                if !unknown.isEmpty {
                    for change in unknown { unknownRecords.insert(SyncRebase.RecordRef(entity: change.entity, recordID: change.recordID)) }
                    rolledBack.changes.removeAll { change in unknown.contains { $0.entity == change.entity && $0.recordID == change.recordID } }
                }
            }
            let texts = rebase.rejectedTexts(rolledBack, serverRecords: serverRecords, reason: result.reason)
            if !texts.isEmpty {
                unknownRecords.formUnion(texts)
                rolledBack.changes.removeAll { texts.contains(SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID)) }
            }
            rebase.seedRejected(rolledBack, serverRecords: serverRecords)
            let records = item.mutation.changes.map { SyncRecordReference(entity: $0.entity, recordID: $0.recordID) }
            let rejection = SyncRejection(
                mutationID: item.mutation.id, reason: result.reason ?? RejectionReason.validation, message: result.message, records: records,
                serverRecords: serverRecords)
            events.append(SyncEvent.rejected(rejection))
            if result.reason == RejectionReason.stale {
                for change in item.mutation.changes {
                    let server: RecordState? = serverRecords.first { $0.entity == change.entity && $0.recordID == change.recordID }
                    let record = SyncRecordReference(entity: change.entity, recordID: change.recordID)
                    let conflict = SyncConflict(mutationID: item.mutation.id, record: record, localFields: change.fields, server: server)
                    events.append(SyncEvent.conflict(conflict))
                }
            }
        }
        // What this page pulled of them is not written either: a rejected delete left no local
        // row, and its pulled fields alone would make one without the others (seed 3375: bob's
        // delete refused while revoked, then another client's edit of the record pulled after
        // the re-grant; every pull failed on `SimItem.key has no value`).
        rebase.forget(unknownRecords)
        let downloadAgain = !unknownRecords.isEmpty
        // A reset's snapshot is the server's whole state: what it does not hold, the server
        // does not have, whatever older shadows say.
        if resetting { rebase.markAbsent(outside: Set(staged.map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) })) }
        // A newly granted scope's snapshot is the server's whole state of that scope: a record of
        // it this client holds or has pending changes of, that the download does not hold, is
        // not on the server (created or edited here, pushed, then deleted before the snapshot
        // was read: its delete is in the log before the snapshot, never sent). Its older shadows
        // say otherwise (seed 2401: a pulled field, written back when the edit and the delete
        // settled, made a row with that field alone), and the row stays (seed 2538).
        let wholeScopes = Set(snapshotScopes.map(\.rawValue))
        var local: [SyncRecordEntry] = []
        if !revokedScopes.isEmpty || resetting || !wholeScopes.isEmpty {
            // Read after the pending changes: a record a save touched since then is pending
            // too (it is left out, as a masked record is), so this page does not remove it.
            let outbox = SyncOutbox(user: user)
            local = try storeRead { db in
                let entries = try ModelContainer.syncRecordEntries(in: db)
                let landed = Set(
                    try ModelContainer.syncLogEntries(after: lastLogSequence, limit: nil, in: db).flatMap(outbox.changes).map {
                        SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID)
                    })
                return landed.isEmpty ? entries : entries.filter { !landed.contains(SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID)) }
            }
        }
        if !wholeScopes.isEmpty {
            let downloaded = Set(staged.map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) })
            var absent: Set<SyncRebase.RecordRef> = []
            for change in pending.before where wholeScopes.contains(change.scope.rawValue) {
                absent.insert(SyncRebase.RecordRef(entity: change.entity, recordID: change.recordID))
            }
            for entry in local where entry.scope.map(wholeScopes.contains) == true {
                absent.insert(SyncRebase.RecordRef(entity: entry.entity, recordID: entry.recordID))
            }
            rebase.markAbsent(absent.subtracting(downloaded))
        }
        if !revokedScopes.isEmpty || resetting || !wholeScopes.isEmpty {
            var removing: [SyncRebase.RecordRef] = []
            var snapshot: Set<SyncRebase.RecordRef> = []
            if resetting || !wholeScopes.isEmpty { snapshot = Set(staged.map { SyncRebase.RecordRef(entity: $0.entity, recordID: $0.recordID) }) }
            for entry in local {
                let ref = SyncRebase.RecordRef(entity: entry.entity, recordID: entry.recordID)
                if let scope = entry.scope, revokedScopes.contains(scope) {
                    if rebase.after[ref] == nil { removing.append(ref) }
                } else if resetting || entry.scope.map(wholeScopes.contains) == true, !snapshot.contains(ref), rebase.after[ref] == nil {
                    removing.append(ref)
                }
            }
            // A rejected save of a record in a revoked scope is rolled back by removing the
            // record, also when it has no local row: the server's state returned with the
            // rejection is not this user's to hold any more (seed 3032: bob's edit, refused as
            // stale while the scope was granted again for a moment, was settled after it was
            // revoked once more; the rollback made a row of the edited field alone where a
            // reset had removed the record, and every pull failed on `SimCounter.key has no
            // value`).
            if !revokedScopes.isEmpty {
                var listed = Set(removing)
                for item in settled where item.status == SyncEngineStore.Status.rejected {
                    for change in item.mutation.changes {
                        let ref = SyncRebase.RecordRef(entity: change.entity, recordID: change.recordID)
                        let server = item.result?.serverRecords?.first { $0.entity == change.entity && $0.recordID == change.recordID }
                        let scope = server?.scope ?? change.scope
                        if revokedScopes.contains(scope.rawValue), rebase.after[ref] == nil, listed.insert(ref).inserted { removing.append(ref) }
                    }
                }
            }
            rebase.delete(removing)
        }
        // Mutations resent after a server restore were settled once before: pulled values may
        // have replaced theirs in the model since, so they are no guide to what it shows
        // (seed 181: a resent insert's value matched the server's, so the shadow was not
        // written, while the model still showed a later increment the restore had lost).
        let resentThrough = try storeRead { db in try SyncEngineStore.value("resentThrough", in: db) }.flatMap { MutationID($0) } ?? 0
        try rebase.flush(local: SyncRebase.localValues(of: settled.map(\.mutation).filter { $0.id > resentThrough }))
        let batch = rebase.batch
        let newShadows = rebase.shadows
        let skipped = rebase.skipped
        let cursor = downloadAgain ? nil : page.cursor
        let changeCount = staged.count
        let retention = configuration.acknowledgedMutationRetention
        // Kept with the cursor: after a restart, the pages pulled from it count the same
        // mutations (a contribution the server processed, whose answer is still missing, is not
        // added again on top of a total that holds it).
        var counted = countedThrough
        if !page.hasMore {
            counted = page.lastMutationID
        } else if resetting || downloadAgain {
            counted = 0
        }
        let storeCounted = counted != countedThrough
        let race = RaceFlag()
        do {
            try container.applyRemoteChanges(
                batch, localCascades: false,
                alsoWriting: { db in
                    // An empty batch writes no model: a save that landed meanwhile cannot be
                    // overwritten, and the engine's tables do not depend on it (a page whose changes
                    // it would mask changes records, so its batch is not empty). Under saves that
                    // never pause, the pages that only settle this client's echoed saves (and a new
                    // device's first, empty download) would otherwise race every time.
                    guard try batch.isEmpty || ModelContainer.lastSyncLogSequence(in: db) == lastLogSequence else {
                        race.raced = true
                        throw LocalSaveRaced()
                    }
                    try SyncEngineStore.set("cursor", cursor, in: db)
                    if storeCounted { try SyncEngineStore.set(SyncEngineStore.countedThroughKey, counted == 0 ? nil : String(counted), in: db) }
                    if keptRevoked != storedRevoked { try SyncEngineStore.set("revokedScopes", keptRevoked, in: db) }
                    if keptReadable != storedReadable { try SyncEngineStore.set(SyncEngineStore.readableScopesKey, keptReadable, in: db) }
                    if let settleThrough { try SyncEngineStore.settle(through: settleThrough, retention: retention, in: db) }
                    try SyncEngineStore.updateShadows(newShadows, from: storedShadows, in: db)
                    if !skipped.isEmpty { try SyncEngineStore.addSkipped(skipped, in: db) }
                })
        } catch  where race.raced {
            throw LocalSaveRaced()
        } catch let error as SyncCaptureError {
            throw SyncEngineError.badServerAnswer(error.description)
        } catch let error as SyncEngineError {
            throw error
        } catch {
            throw SyncEngineError.store("\(error)")
        }
        self.cursor = cursor
        if downloadAgain { requestCursor = nil }
        counterEchoes = page.hasMore && !downloadAgain ? rebase.counters.echoes : [:]
        countedThrough = counted
        staged = []
        if resetting { resetting = false }
        snapshotScopes = []
        if !revoked.isEmpty || !unheld.isEmpty {
            events.insert(.revoked(revoked + unheld), at: 0)
            revoked = []
        }
        if let grantsChange { events.insert(.grantsChanged(grantsChange), at: 0) }
        if changeCount > 0 { emit(.pulled(changes: changeCount)) }
        for event in events { emit(event) }
    }
}
