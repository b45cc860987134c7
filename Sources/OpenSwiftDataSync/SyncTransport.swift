import Foundation
import OpenSwiftDataSyncProtocol

/// The engine's only access to the network: push a batch, pull a page, listen on the live
/// channel, and read and change a scope's members. ``HTTPSyncTransport`` speaks HTTP and
/// WebSocket to `osd-server`; tests and the simulator plug in an in-memory transport that calls
/// the server's core directly.
///
/// Errors are ``SyncTransportError``s: the engine decides from them whether to retry, refresh
/// its client id, or give up on a request.
public protocol SyncTransport: Sendable {
    /// Sends a push request and returns the server's answer.
    func push(_ request: PushRequest) async throws -> PushResponse
    /// Asks for one page of changes.
    func pull(_ request: PullRequest) async throws -> PullResponse
    /// Opens the live channel: a stream of the server's notifications that ends (or throws)
    /// when the channel drops. The engine opens it again with backoff.
    func live(clientID: ClientID) -> AsyncThrowingStream<LiveMessage, any Error>
    /// Asks who may read and write a scope (`GET /v1/scopes/{scope}/members`): its owner,
    /// writers and readers. Only they may ask.
    func members(of scope: ScopeID) async throws -> ScopeMembersResponse
    /// Grants a user a scope, or sets their role (`POST /v1/scopes/{scope}/members`), and
    /// returns the scope's members after it. Only the owner may.
    func grant(_ request: GrantRequest, in scope: ScopeID) async throws -> ScopeMembersResponse
    /// Revokes a user's grant of a scope (`DELETE /v1/scopes/{scope}/members/{user}`), and
    /// returns the scope's members after it. Only the owner may.
    func revoke(_ user: String, in scope: ScopeID) async throws -> ScopeMembersResponse
    /// Starts or resumes the upload of a blob (`POST /v1/blobs/{digest}`): how many of its bytes
    /// the server holds for this user.
    func blobUploadState(_ blob: BlobReference) async throws -> BlobUploadState
    /// Sends the bytes of the file at `path` from `offset` (the server's `received`) to its end
    /// (`PATCH /v1/blobs/{digest}`), streamed: never the whole file in memory. `progress` is
    /// told how many bytes of the blob have been sent so far. Returns the server's state after.
    func uploadBlob(
        _ blob: BlobReference, from path: String, offset: Int64, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> BlobUploadState
    /// Downloads a blob (`GET /v1/blobs/{digest}`) into the file at `path`, streamed. A file
    /// that holds a start of the blob already is continued with a byte range; any other is
    /// written anew. `progress` is told how many bytes of the blob the file holds so far.
    func downloadBlob(_ blob: BlobReference, to path: String, progress: @escaping @Sendable (Int64) -> Void) async throws
}

extension SyncTransport {
    /// A transport without blobs refuses every blob request (404, `notFound`).
    public func blobUploadState(_ blob: BlobReference) async throws -> BlobUploadState {
        throw SyncTransportError.refused(status: 404, error: SyncError(.notFound, "this transport carries no blobs"))
    }

    /// A transport without blobs refuses every blob request (404, `notFound`).
    public func uploadBlob(
        _ blob: BlobReference, from path: String, offset: Int64, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> BlobUploadState {
        throw SyncTransportError.refused(status: 404, error: SyncError(.notFound, "this transport carries no blobs"))
    }

    /// A transport without blobs refuses every blob request (404, `notFound`).
    public func downloadBlob(_ blob: BlobReference, to path: String, progress: @escaping @Sendable (Int64) -> Void) async throws {
        throw SyncTransportError.refused(status: 404, error: SyncError(.notFound, "this transport carries no blobs"))
    }
}

/// Why a transport request failed.
public enum SyncTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server refused the request with an HTTP status and a protocol error (nothing of it
    /// was stored).
    case refused(status: Int, error: SyncError)
    /// The server could not be reached, or the connection failed before an answer arrived
    /// (the request may or may not have been processed).
    case unreachable(String)
    /// The server answered with something that is not a protocol message.
    case malformedResponse(String)

    /// Whether the same request may succeed later without anything changing on the client:
    /// network failures, 5xx, 429 and 401 (a refreshed token).
    public var isTransient: Bool {
        switch self {
        case .unreachable: return true
        case .malformedResponse: return false
        case let .refused(status, error):
            return status >= 500 || status == 429 || status == 401 || error.code == .unavailable || error.code == .rateLimited
                || error.code == .internalError || error.code == .unauthorized
        }
    }

    /// The protocol error code, when the server sent one.
    public var code: SyncErrorCode? {
        if case let .refused(_, error) = self { return error.code }
        return nil
    }

    /// A readable explanation.
    public var description: String {
        switch self {
        case let .refused(status, error): return "server refused the request (\(status)): \(error)"
        case let .unreachable(reason): return "server unreachable: \(reason)"
        case let .malformedResponse(reason): return "malformed server answer: \(reason)"
        }
    }
}
