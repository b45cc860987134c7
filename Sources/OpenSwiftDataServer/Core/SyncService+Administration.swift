import Foundation
import OpenSwiftDataSyncProtocol

// What the admin console does through the core: membership changes made by the operator
// rather than a scope's owner, the epoch's rotation while the server runs, and a bounded view
// of the stored state.
extension SyncService {
    /// Grants `member` the scope as `role`, as the operator: whoever owns it. A scope nobody has
    /// claimed yet is claimed for `owner` (a private scope `user:<id>` is always its user's);
    /// without one it is `404 notFound`. Granting the owner changes nothing; granting a member
    /// again sets their role (nil: keeps it; a new member becomes a writer). The member's live
    /// connections are told, so that their clients pull the scope.
    package func administerGrant(
        scope: ScopeID, member: String, owner: String?, role: ScopeGrantRole? = nil
    ) async throws -> ScopeMembersResponse {
        try Self.checkAdministered(scope: scope, user: member)
        if let owner { try Self.checkAdministered(scope: scope, user: owner) }
        let record = try await backend.updateScope(scope) { current in
            var record: ScopeRecord
            if let current {
                record = current
            } else if let privateOwner = scope.privateOwner {
                record = ScopeRecord(scope: scope, owner: privateOwner)
            } else if let owner {
                record = ScopeRecord(scope: scope, owner: owner)
            } else {
                throw SyncServiceError(404, .notFound, "scope \(scope) has no owner yet: name the user to claim it for")
            }
            record.grant(member, role: role)
            return record
        }
        observer.event(.grantsChanged(users: [member]))
        return record.response
    }

    /// Revokes `member`'s grant of the scope as the operator: from the commit on, that user
    /// can neither read nor write it. `404 notFound` when the user is not a member (an owner
    /// is not revoked).
    package func administerRevoke(scope: ScopeID, member: String) async throws -> ScopeMembersResponse {
        try Self.checkAdministered(scope: scope, user: member)
        let record = try await backend.updateScope(scope) { current in
            guard var record = current ?? ScopeRecord.implicit(scope), record.members[member] != nil else {
                throw SyncServiceError(404, .notFound, "\(member) is not a member of scope \(scope)")
            }
            record.members[member] = nil
            return record
        }
        observer.event(.grantsChanged(users: [member]))
        return record.response
    }

    /// Gives the database a new epoch and serves it at once: from then on every cursor of the
    /// old epoch gets `reset: epochChanged` here and a push made against it `409 staleEpoch`,
    /// so that clients download again and resend what the server lacks. With `expected`, only
    /// when the stored epoch is that one (else `409 staleEpoch`, nothing changed). One rotation
    /// at a time: another one asked meanwhile is `409`. Other servers sharing the database keep
    /// the epoch they read at start until they restart.
    package func rotateEpoch(expecting expected: String?) async throws -> EpochChange {
        let started = currentEpoch.withLock { state in
            guard !state.rotating else { return false }
            state.rotating = true
            return true
        }
        guard started else { throw SyncServiceError(409, .staleEpoch, "an epoch rotation is already under way") }
        do {
            let change = try await backend.rotateEpoch(expecting: expected)
            currentEpoch.withLock { $0 = (change.current, false) }
            return change
        } catch {
            currentEpoch.withLock { $0.rotating = false }
            throw error
        }
    }

    /// What the storage holds, within `limits` (see `SyncStorageBackend.overview(_:)`).
    package func overview(_ limits: OverviewLimits = OverviewLimits()) async throws -> StorageOverview {
        try await backend.overview(limits)
    }

    private static func checkAdministered(scope: ScopeID, user: String) throws {
        guard scope.isWellFormed else { throw SyncServiceError.malformed("scope \(scope.rawValue.debugDescription) is not of the form kind:id") }
        guard !user.isEmpty, user.utf8.count <= 256 else { throw SyncServiceError.malformed("a user id is 1 to 256 bytes") }
    }
}
