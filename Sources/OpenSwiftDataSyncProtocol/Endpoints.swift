import Foundation

/// The protocol's paths, relative to the server's base URL.
public enum SyncEndpoint {
    /// `POST`: a batch of mutations (``PushRequest`` → ``PushResponse``).
    public static let push = "/v1/push"
    /// `GET`: a page of changes (``PullRequest`` query → ``PullResponse``).
    public static let pull = "/v1/pull"
    /// `GET`, upgraded to a WebSocket: ``LiveMessage``s.
    public static let live = "/v1/live"
    /// `GET`: the caller's scopes (``ScopeListResponse``); `/v1/scopes/{scope}/members`:
    /// membership (``ScopeMembersResponse``, ``GrantRequest``).
    public static let scopes = "/v1/scopes"
    /// Blobs, by digest: `/v1/blobs/{digest}`. `POST` with ``BlobHeader/length`` starts or
    /// resumes an upload, `PATCH` with ``BlobHeader/offset`` sends a part of it (both answer
    /// ``BlobUploadState``), `GET` reads the blob, whole or a `Range` of it.
    public static let blobs = "/v1/blobs"
    /// `GET`: 200 while the process runs.
    public static let health = "/health"
    /// `GET`: 200 when the server can serve (its database is open), 503 otherwise.
    public static let ready = "/ready"
    /// `GET`: metrics in Prometheus' text format.
    public static let metrics = "/metrics"
}

extension JSONEncoder {
    /// An encoder for protocol messages: sorted keys, so equal messages are equal bytes.
    public static func syncProtocol() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
