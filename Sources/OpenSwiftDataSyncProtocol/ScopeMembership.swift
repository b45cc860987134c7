import Foundation

/// `GET /v1/scopes`: the scopes the caller may read and write.
public struct ScopeListResponse: Hashable, Codable, Sendable {
    /// Each scope with the caller's role in it.
    public var scopes: [ScopeAccess]

    /// Makes a list.
    public init(scopes: [ScopeAccess]) { self.scopes = scopes }
}

/// A scope and a user's role in it.
public struct ScopeAccess: Hashable, Codable, Sendable {
    /// The scope.
    public var scope: ScopeID
    /// Whether the user owns it (may grant and revoke) or was granted it.
    public var role: ScopeRole

    /// Makes an access entry.
    public init(scope: ScopeID, role: ScopeRole) {
        self.scope = scope
        self.role = role
    }
}

/// A user's role in a scope.
public enum ScopeRole: String, Codable, Sendable {
    /// Created the scope (or it is their private scope): reads, writes, grants and revokes.
    case owner
    /// Granted by the owner: reads and writes.
    case member
}

/// `GET /v1/scopes/{scope}/members`: who may read and write a scope.
public struct ScopeMembersResponse: Hashable, Codable, Sendable {
    /// The scope.
    public var scope: ScopeID
    /// Its owner.
    public var owner: String
    /// The users granted it, sorted.
    public var members: [String]

    /// Makes a membership list.
    public init(scope: ScopeID, owner: String, members: [String]) {
        self.scope = scope
        self.owner = owner
        self.members = members
    }
}

/// `POST /v1/scopes/{scope}/members`: the owner grants a user the scope (creating the scope,
/// owned by the caller, if nobody has written into it yet). `DELETE
/// /v1/scopes/{scope}/members/{user}` revokes it: from that moment the user can neither read
/// nor write it.
public struct GrantRequest: Hashable, Codable, Sendable {
    /// The protocol version the client speaks.
    public var protocolVersion: ProtocolVersion
    /// The user to grant the scope to.
    public var user: String

    /// Makes a grant request.
    public init(protocolVersion: ProtocolVersion = .plainFields, user: String) {
        self.protocolVersion = protocolVersion
        self.user = user
    }
}
