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
    /// For a ``ScopeRole/member``, what the owner granted: ``ScopeGrantRole/writer`` or
    /// ``ScopeGrantRole/reader`` (nil for the owner). A reader is listed as a `member` with
    /// `grant` `reader`, rather than under a role of its own, so that a client that knows only
    /// `owner` and `member` keeps reading the list; servers before roles leave it out (every
    /// member was a writer).
    public var grant: ScopeGrantRole?

    /// Makes an access entry.
    public init(scope: ScopeID, role: ScopeRole, grant: ScopeGrantRole? = nil) {
        self.scope = scope
        self.role = role
        self.grant = grant
    }

    /// Whether the user may write into the scope: its owner, or a member granted it as a
    /// writer.
    public var canWrite: Bool { role == .owner || grant != .reader }
}

/// A user's role in a scope.
public enum ScopeRole: String, Codable, Sendable {
    /// Created the scope (or it is their private scope): reads, writes, grants and revokes.
    case owner
    /// Granted by the owner: reads, and writes unless granted it as a reader (see
    /// ``ScopeAccess/grant``).
    case member
}

/// What the owner of a scope grants a user: reading it, or reading and writing it.
public enum ScopeGrantRole: String, Codable, Sendable, CaseIterable {
    /// Reads the scope; every write into it is refused (``RejectionReason/readOnly``, or
    /// ``RejectionReason/scopeNotGranted`` for a client of protocol version 1).
    case reader
    /// Reads and writes the scope. The role of a grant that names none.
    case writer
}

/// `GET /v1/scopes/{scope}/members`: who may read and write a scope.
public struct ScopeMembersResponse: Hashable, Codable, Sendable {
    /// The scope.
    public var scope: ScopeID
    /// Its owner.
    public var owner: String
    /// The users granted it as writers, sorted.
    public var members: [String]
    /// The users granted it as readers, sorted (absent in the JSON of servers before roles,
    /// decoded as empty).
    public var readers: [String]

    /// Makes a membership list.
    public init(scope: ScopeID, owner: String, members: [String], readers: [String] = []) {
        self.scope = scope
        self.owner = owner
        self.members = members
        self.readers = readers
    }

    private enum CodingKeys: String, CodingKey {
        case scope, owner, members, readers
    }

    /// Decodes a membership list; `readers` may be absent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        scope = try container.decode(ScopeID.self, forKey: .scope)
        owner = try container.decode(String.self, forKey: .owner)
        members = try container.decode([String].self, forKey: .members)
        readers = try container.decodeIfPresent([String].self, forKey: .readers) ?? []
    }
}

/// `POST /v1/scopes/{scope}/members`: the owner grants a user the scope (creating the scope,
/// owned by the caller, if nobody has written into it yet), as a reader or a writer; granting
/// a member again sets their role. `DELETE /v1/scopes/{scope}/members/{user}` revokes it: from
/// that moment the user can neither read nor write it.
public struct GrantRequest: Hashable, Codable, Sendable {
    /// The protocol version the client speaks.
    public var protocolVersion: ProtocolVersion
    /// The user to grant the scope to.
    public var user: String
    /// What the user may do in the scope. Nil (absent in the JSON, as in every grant from
    /// before roles): a user granted the scope already keeps their role, and a new one becomes
    /// a ``ScopeGrantRole/writer``.
    public var role: ScopeGrantRole?

    /// Makes a grant request.
    public init(protocolVersion: ProtocolVersion = .plainFields, user: String, role: ScopeGrantRole? = nil) {
        self.protocolVersion = protocolVersion
        self.user = user
        self.role = role
    }

    private enum CodingKeys: String, CodingKey {
        case protocolVersion, user, role
    }

    /// Decodes a grant request; `role` may be absent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        protocolVersion = try container.decode(ProtocolVersion.self, forKey: .protocolVersion)
        user = try container.decode(String.self, forKey: .user)
        role = try container.decodeIfPresent(ScopeGrantRole.self, forKey: .role)
    }
}
