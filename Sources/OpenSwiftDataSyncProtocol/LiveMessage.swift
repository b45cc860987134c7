import Foundation

/// A message on the `GET /v1/live` WebSocket, from server to client. The channel only says
/// that there is news; the client then pulls. A client without it polls with backoff.
///
/// ```json
/// {"type": "changed", "scopes": ["user:alice"], "version": 1042}
/// ```
public struct LiveMessage: Hashable, Codable, Sendable {
    /// The kind of message.
    public enum Kind: String, Codable, Sendable {
        /// Sent once on connection: the client should pull now (it may have missed news).
        case hello
        /// Scopes the client may read have changed at or before `version`.
        case changed
        /// The client's grants changed (a scope granted or revoked): pull now.
        case grantsChanged
    }

    /// The kind of message.
    public var type: Kind
    /// The scopes that changed.
    public var scopes: [ScopeID]
    /// The server version of the newest change announced.
    public var version: ServerVersion?

    /// Makes a message.
    public init(type: Kind, scopes: [ScopeID] = [], version: ServerVersion? = nil) {
        self.type = type
        self.scopes = scopes
        self.version = version
    }
}
