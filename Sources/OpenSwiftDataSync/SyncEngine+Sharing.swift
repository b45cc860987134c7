import Foundation
import OpenSwiftDataSyncProtocol

// Sharing from the app: the owner of a scope grants other users reading it, or reading and
// writing it, and takes the grant back; anyone granted a scope can list its members. Each call
// is one request to the server, through the engine's transport, made at once (they do not wait
// for a sync, and need the server to be reachable).
extension SyncEngine {
    /// Shares a scope the signed-in user owns with another user, as a reader or a writer, and
    /// returns the scope's members after it. Sharing with a user who was granted the scope
    /// already changes their role; sharing a scope nobody has written into yet claims it for
    /// the signed-in user. The user's engine downloads the scope on its next pull; a reader's
    /// saves into it are rejected (`RejectionReason.readOnly`) and rolled back.
    ///
    /// Emits ``SyncEvent/grantsChanged(_:)`` with the members. Throws
    /// ``SyncEngineError/notScopeOwner(_:)`` when another user owns the scope,
    /// ``SyncEngineError/invalidSharing(scope:reason:)`` for a malformed scope or user id,
    /// ``SyncEngineError/transport(_:)`` when the server cannot be reached, and
    /// ``SyncEngineError/badServerAnswer(_:)`` when the server granted another role than the one
    /// asked for (a server from before roles grants every user writing: the engine then takes
    /// that grant back at once, so the user is left without the scope rather than writing it).
    @discardableResult
    public func share(_ scope: ScopeID, with user: String, role: ScopeGrantRole = .writer) async throws -> ScopeMembers {
        try checkSharing(scope, user: user)
        let request = GrantRequest(protocolVersion: protocolVersion, user: user, role: role)
        let members = try await sharingCall(scope, owned: true) { try await self.transport.grant(request, in: scope) }
        emit(.grantsChanged(SyncGrantsChange(members: members)))
        if members.role(of: user) != role, user != members.owner {
            // A server from before roles ignores the role and grants writing: taken back at
            // once, so that a user meant to read only never keeps writing.
            if role == .reader, members.role(of: user) == .writer {
                let after = try? await sharingCall(scope, owned: true) { try await self.transport.revoke(user, in: scope) }
                if let after { emit(.grantsChanged(SyncGrantsChange(members: after))) }
            }
            throw SyncEngineError.badServerAnswer(
                "asked to share scope \(scope) with \(user) as a \(role.rawValue), the server granted \(members.role(of: user).map { "a \($0.rawValue)" } ?? "nothing") (a server without reader grants?)"
            )
        }
        return members
    }

    /// Takes back a user's grant of a scope the signed-in user owns, and returns the scope's
    /// members after it. From then on that user can neither read nor write the scope: their
    /// engine removes its records on its next pull and reports ``SyncEvent/revoked(_:)``.
    /// Unsharing a user who was not granted the scope changes nothing.
    ///
    /// Emits ``SyncEvent/grantsChanged(_:)`` with the members. Throws
    /// ``SyncEngineError/notScopeOwner(_:)`` when the signed-in user does not own the scope.
    @discardableResult
    public func unshare(_ scope: ScopeID, from user: String) async throws -> ScopeMembers {
        try checkSharing(scope, user: user)
        let members = try await sharingCall(scope, owned: true) { try await self.transport.revoke(user, in: scope) }
        emit(.grantsChanged(SyncGrantsChange(members: members)))
        return members
    }

    /// Who may read and write a scope: its owner, writers and readers. Throws
    /// ``SyncEngineError/scopeNotGranted(_:)`` when the signed-in user may not read it.
    public func members(of scope: ScopeID) async throws -> ScopeMembers {
        try checkSharing(scope, user: nil)
        return try await sharingCall(scope, owned: false) { try await self.transport.members(of: scope) }
    }

    /// Refuses, before any request, a call the server would refuse as malformed.
    private func checkSharing(_ scope: ScopeID, user: String?) throws {
        guard !signedOut else { throw SyncEngineError.signedOut }
        guard scope.isWellFormed else { throw SyncEngineError.invalidSharing(scope: scope, reason: "a scope is of the form kind:id") }
        if let user, user.isEmpty || user.utf8.count > 256 {
            throw SyncEngineError.invalidSharing(scope: scope, reason: "a user id is 1 to 256 bytes, not \(user.debugDescription)")
        }
    }

    /// Makes one membership request, turning the server's refusals into errors that name the
    /// scope. `owned`: the call needs the signed-in user to own the scope.
    private func sharingCall(_ scope: ScopeID, owned: Bool, _ call: () async throws -> ScopeMembersResponse) async throws -> ScopeMembers {
        let response: ScopeMembersResponse
        do {
            response = try await call()
        } catch let error as SyncTransportError {
            switch error.code {
            case .forbidden? where owned, .notFound? where owned:
                // `notFound`: nobody has claimed the scope, so the signed-in user does not own it.
                throw SyncEngineError.notScopeOwner(scope)
            case .forbidden?:
                throw SyncEngineError.scopeNotGranted(scope)
            case .malformedRequest?:
                if case let .refused(_, refusal) = error { throw SyncEngineError.invalidSharing(scope: scope, reason: refusal.message) }
                throw SyncEngineError.transport(error)
            default:
                throw SyncEngineError.transport(error)
            }
        }
        guard response.scope == scope else {
            throw SyncEngineError.badServerAnswer("asked about the members of scope \(scope), the server answered about \(response.scope)")
        }
        return ScopeMembers(response)
    }
}
