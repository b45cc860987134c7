import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol

/// Turns the store's sync log entries into the protocol's record changes: one saved entry is
/// one mutation, its changes in save order, scopes as computed at save time (nil: the user's
/// private scope).
struct SyncOutbox {
    let user: String

    func changes(of entry: SyncLogEntry) -> [RecordChange] {
        entry.changes.map(change)
    }

    func change(_ change: SyncChange) -> RecordChange {
        let op: RecordOperation
        switch change.kind {
        case .insert: op = .insert
        case .update: op = .update
        case .delete: op = .delete
        }
        var fields: [SyncName: SyncValue] = [:]
        for field in change.fields { fields[field.name] = SyncValueMapping.wire(field.value) }
        var links: [SyncName: LinkChange] = [:]
        for link in change.links {
            var merged = links[link.relationship] ?? LinkChange()
            merged.added += link.added
            merged.removed += link.removed
            links[link.relationship] = merged
        }
        var merge: [SyncName: FieldMerge] = [:]
        for delta in change.counterDeltas {
            // A text's edit is logged as the JSON of its insertions and deletions.
            if delta.value.kind == .string {
                guard case let .text(text) = delta.value.stored, let textChange = try? JSONDecoder().decode(TextChange.self, from: Data(text.utf8))
                else { continue }
                merge[delta.name] = .text(textChange)
            } else if delta.value.kind == .json {
                // A set's contribution is logged as the JSON of its adds and removes.
                guard case let .text(text) = delta.value.stored, let setChange = try? JSONDecoder().decode(SetChange.self, from: Data(text.utf8))
                else { continue }
                merge[delta.name] = .set(setChange)
            } else {
                merge[delta.name] = .counter(SyncValueMapping.wire(delta.value))
            }
        }
        return RecordChange(
            op: op, entity: change.entity, recordID: change.recordID, scope: scope(change.scope), baseVersion: change.baseVersion, fields: fields,
            links: links, merge: merge)
    }

    func scope(_ scope: String?) -> ScopeID {
        guard let scope, !scope.isEmpty else { return .user(user) }
        return ScopeID(rawValue: scope)
    }
}
