import Foundation

/// What was wrong with a request. A request error never rejects a change: the client fixes
/// the cause (refreshes its token, re-reads its last mutation id, upgrades) and retries.
public enum SyncErrorCode: String, Codable, Sendable, CaseIterable {
    /// The body is not valid JSON, or not the shape the endpoint takes.
    case malformedRequest
    /// The body is larger than the server's limit.
    case bodyTooLarge
    /// The batch holds more mutations or changes than the server's limit.
    case batchTooLarge
    /// The server does not speak the request's protocol version.
    case unsupportedProtocolVersion
    /// The record operation is not one the protocol knows.
    case unknownOperation
    /// No bearer token, or one that is expired, forged or malformed (HTTP 401).
    case unauthorized
    /// The caller may not do this (HTTP 403): a scope not granted, a membership change by
    /// someone who does not own the scope.
    case forbidden
    /// The client id belongs to another user.
    case clientIDOwnedByAnotherUser
    /// The first mutation id is more than one past the last one the server processed.
    case mutationGap
    /// The client's ids are behind the server's, or equal with other content: the device was
    /// restored from a backup. The client takes a new client id.
    case clientForked
    /// The cursor was not made by this server, or was altered.
    case invalidCursor
    /// A push carries a cursor of another epoch: it was made against a history the server no
    /// longer has (restored from a backup since). Nothing of it was processed; the client pulls
    /// (its cursor resets and it resends what the server lost) and pushes again.
    case staleEpoch
    /// A value has another kind than the one the field holds.
    case wrongValueType
    /// No such route or resource.
    case notFound
    /// A blob upload's part starts elsewhere than where the server's copy ends; the message
    /// names the server's offset (HTTP 409).
    case uploadOffsetMismatch
    /// The bytes of a blob upload do not hash to the digest it names: nothing of it is kept
    /// (HTTP 422).
    case blobDigestMismatch
    /// A blob is larger than the server's limit per blob, or would take the user past the
    /// limit on the bytes of their blobs; the message names the limit (HTTP 413).
    case blobTooLarge
    /// The client sends too many requests.
    case rateLimited
    /// The server is shutting down or not ready.
    case unavailable
    /// The server failed; the request may be retried.
    case internalError
}

/// The body of every error answer, `{"error": {"code": …, "message": …}}`, and the error the
/// protocol's own decoding throws.
public struct SyncError: Error, Hashable, Codable, Sendable, CustomStringConvertible {
    /// What kind of error.
    public var code: SyncErrorCode
    /// What was wrong, for a developer: names the field, value or limit.
    public var message: String
    /// The protocol versions the server accepts (with ``SyncErrorCode/unsupportedProtocolVersion``).
    public var supportedVersions: [ProtocolVersion]?
    /// The last mutation id the server processed for the client (with
    /// ``SyncErrorCode/mutationGap`` and ``SyncErrorCode/clientForked``).
    public var lastMutationID: MutationID?

    /// Makes an error.
    public init(_ code: SyncErrorCode, _ message: String, supportedVersions: [ProtocolVersion]? = nil, lastMutationID: MutationID? = nil) {
        self.code = code
        self.message = message
        self.supportedVersions = supportedVersions
        self.lastMutationID = lastMutationID
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// The JSON wrapper of an error answer.
public struct ErrorResponse: Hashable, Codable, Sendable {
    /// The error.
    public var error: SyncError

    /// Wraps an error.
    public init(error: SyncError) { self.error = error }
}
