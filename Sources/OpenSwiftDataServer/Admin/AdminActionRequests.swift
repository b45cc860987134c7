import OpenSwiftDataSyncProtocol

// The bodies of the admin console's actions and their answers.

/// `POST /admin/api/grant`: grant `user` the scope as `role` (absent: a member keeps their
/// role, a new one becomes a writer); an unclaimed scope is claimed for `owner`.
struct AdminGrantRequest: Codable, Sendable {
    var scope: String
    var user: String
    var owner: String?
    var role: ScopeGrantRole?
}

/// `POST /admin/api/revoke`: revoke `user`'s grant of the scope.
struct AdminRevokeRequest: Codable, Sendable {
    var scope: String
    var user: String
}

/// `POST /admin/api/rotate-epoch`: rotate the epoch, which must still be `epoch`.
struct AdminRotationRequest: Codable, Sendable {
    var epoch: String
}

/// The answer to a rotation.
struct AdminRotationAnswer: Codable, Sendable {
    /// The epoch before.
    var previous: String
    /// The epoch now, served by this server.
    var current: String
    /// Whether other servers may share the database: they serve the old epoch until they
    /// restart.
    var restartOtherServers: Bool
}
