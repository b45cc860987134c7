import Foundation
import OpenSwiftDataSyncProtocol

/// Decides a pull page from the cursor and the state read in the pull's transaction, and
/// builds the answer from what was read. Pure.
struct PullPlanner: Sendable {
    let user: String
    let clientID: ClientID
    let epoch: String
    /// The decoded cursor (nil on first sync, or after an epoch change).
    let cursor: PullCursor?
    /// Set when the cursor came from another epoch.
    let epochReset: Bool
    let limit: Int

    /// The decision before reading.
    struct Decision: Sendable {
        var cursor: PullCursor
        var revoked: [ScopeID]
        var reset: ResetReason?
        var read: PullRead
    }

    func decide(_ context: PullContext) throws -> Decision {
        if let owner = context.clientOwner, owner != user {
            throw SyncServiceError(
                403, .clientIDOwnedByAnotherUser, "client id \(clientID.debugDescription) belongs to another user; take a new client id")
        }
        var reset: ResetReason? = epochReset ? .epochChanged : nil
        let fresh = PullCursor(epoch: epoch, seq: context.head, scopes: [], snapshot: nil, mark: context.marks[context.head])
        var state = cursor ?? fresh
        switch cursor?.standing(head: context.head, horizon: context.horizon, marks: context.marks) {
        case .compacted:
            reset = .historyCompacted
            state = fresh
        case .otherHistory:
            // The database was restored from a copy that kept its epoch: past the head,
            // continuing would skip every change written after the restore up to the cursor's
            // position; another change at its position means the log was written again past
            // the copy's head (seeds 311, 1087). The client downloads again.
            reset = .epochChanged
            state = fresh
        case .current, nil:
            break
        }
        let granted = Set(context.grants.keys)
        var revoked = state.scopes.filter { !granted.contains($0) }
        state.scopes.removeAll { !granted.contains($0) }
        if var snapshot = state.snapshot {
            let lost = snapshot.scopes.filter { !granted.contains($0) }
            if !lost.isEmpty {
                revoked += lost
                snapshot.scopes.removeAll { !granted.contains($0) }
                if let after = snapshot.after, !granted.contains(after.scope) {
                    // The scope being read was revoked: continue with the next one.
                    snapshot.after = snapshot.scopes.first { $0 > after.scope }.map { SnapshotKey(scope: $0, entity: "", recordID: "") }
                    if snapshot.after == nil { snapshot.pagesDone = true }
                }
                state.snapshot = snapshot.scopes.isEmpty ? nil : snapshot
            }
        }
        if state.snapshot == nil {
            let known = Set(state.scopes)
            let new = granted.filter { !known.contains($0) }.sorted()
            if !new.isEmpty {
                state.snapshot = PullCursor.Snapshot(
                    scopes: new, after: nil, from: context.head, through: context.head, pagesDone: false, received: 0, total: 0)
            }
        }
        let read: PullRead
        if let snapshot = state.snapshot, !snapshot.pagesDone {
            read = .snapshot(scopes: snapshot.scopes, after: snapshot.after, limit: limit, count: snapshot.after == nil && snapshot.received == 0)
        } else {
            read = .log(
                after: state.seq, scopes: state.scopes, tailScopes: state.snapshot?.scopes ?? [], tailFrom: state.snapshot?.from ?? state.seq,
                limit: limit)
        }
        return Decision(cursor: state, revoked: revoked.sorted(), reset: reset, read: read)
    }

    /// The answer and the next cursor, from the decision and the page read.
    func finish(_ decision: Decision, page: PullPage) -> (response: PullResponse, cursor: PullCursor) {
        var state = decision.cursor
        // The scopes a snapshot downloads whole, on each of its pages up to the one that
        // completes it (seed 2538: a record this client created in a newly granted scope and
        // another deleted before the snapshot was read stayed on the client, no delete sent).
        let snapshotScopes = decision.cursor.snapshot?.scopes
        var changes: [PulledChange]
        var hasMore: Bool
        var progress: PullProgress?
        switch page.read {
        case .snapshot:
            changes = page.records.map { record in
                let states = record.fields.compactMapValues { $0.text?.base64EncodedString() }
                return PulledChange(
                    version: record.version, op: .insert, entity: record.entity, recordID: record.recordID, scope: record.scope,
                    fields: record.values, links: record.presentLinks.mapValues { LinkChange(added: $0) },
                    textStates: states.isEmpty ? nil : states)
            }
            var snapshot =
                state.snapshot
                ?? PullCursor.Snapshot(
                    scopes: [], after: nil, from: page.context.head, through: page.context.head, pagesDone: true, received: 0, total: 0)
            if let total = page.total { snapshot.total = total }
            snapshot.received += changes.count
            snapshot.through = page.context.head
            if page.hasMore, let last = page.records.last {
                snapshot.after = SnapshotKey(scope: last.scope, entity: last.entity, recordID: last.recordID)
            } else {
                snapshot.pagesDone = true
            }
            progress = PullProgress(received: snapshot.received, total: max(snapshot.total, snapshot.received))
            state.snapshot = snapshot
            hasMore = true
        case .log:
            changes = page.changes
            state.seq = max(state.seq, page.end)
            hasMore = page.hasMore
            if let snapshot = state.snapshot, snapshot.pagesDone, state.seq >= snapshot.through {
                state.scopes = Array(Set(state.scopes).union(snapshot.scopes)).sorted()
                state.snapshot = nil
                // Scopes granted while the snapshot ran are downloaded next.
                let known = Set(state.scopes)
                if page.context.grants.keys.contains(where: { !known.contains($0) }) { hasMore = true }
            }
        }
        state.mark = page.context.marks[state.seq]
        let consistent = state.snapshot == nil
        // The scopes the cursor holds, so a client drops what it wrote into a scope it was
        // granted at the push and lost before downloading it (seed 9243): `revoked` names only
        // scopes the cursor held.
        let cursorScopes = consistent ? state.scopes : nil
        let response = PullResponse(
            changes: changes, cursor: "", hasMore: hasMore, consistent: consistent, lastMutationID: page.context.lastMutationID,
            reset: decision.reset, revokedScopes: decision.revoked, progress: progress, serverStamp: page.context.clock,
            snapshotScopes: snapshotScopes, cursorScopes: cursorScopes)
        return (response, state)
    }
}
