import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import NIOHTTP1
import OpenSwiftDataSyncProtocol

/// The transport to `osd-server`: `POST /v1/push`, `GET /v1/pull` and the
/// `/v1/scopes/{scope}/members` routes over AsyncHTTPClient, and the `/v1/live` WebSocket.
/// Every request carries a bearer token from the token provider; an answer of 401 asks the
/// provider for a new token once and retries the request.
public final class HTTPSyncTransport: SyncTransport {
    /// The server's base URL (`http://host:port`).
    public let server: URL
    let tokenProvider: @Sendable () async throws -> String
    let client: HTTPClient
    let timeout: TimeAmount
    private let logger: Logger

    /// Makes a transport to the server at `server`; `tokenProvider` returns a current bearer
    /// token (it is asked again after a 401). `timeout` bounds each request, from sending it
    /// to the end of the answer's body.
    public convenience init(
        server: URL, timeout: Duration = .seconds(60), logger: Logger = Logger(label: "OpenSwiftDataSync.http"),
        tokenProvider: @escaping @Sendable () async throws -> String
    ) {
        self.init(server: server, client: HTTPSyncTransport.sharedClient, timeout: timeout, logger: logger, tokenProvider: tokenProvider)
    }

    /// Makes a transport over a given AsyncHTTPClient (tests).
    package init(
        server: URL, client: HTTPClient, timeout: Duration = .seconds(60), logger: Logger = Logger(label: "OpenSwiftDataSync.http"),
        tokenProvider: @escaping @Sendable () async throws -> String
    ) {
        self.server = server
        self.client = client
        // Whole nanoseconds, saturating: a timeout beyond Int64's nanoseconds (292 years) is
        // the largest one.
        let (seconds, attoseconds) = max(timeout, .zero).components
        let (whole, overflowed) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflowedAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        self.timeout = .nanoseconds(overflowed || overflowedAgain ? Int64.max : total)
        self.logger = logger
        self.tokenProvider = tokenProvider
    }

    var base: String {
        var text = server.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// Pushes a batch.
    public func push(_ request: PushRequest) async throws -> PushResponse {
        let body: Data
        do {
            if request.schema == nil {
                // The protocol's writer: the bytes `JSONEncoder` would write, without its boxes.
                var writer = SyncJSONWriter(capacity: 256 + request.mutations.count * 256)
                try writer.pushRequest(request)
                body = writer.data
            } else {
                body = try JSONEncoder.syncProtocol().encode(request)
            }
        } catch {
            throw SyncTransportError.malformedResponse("cannot encode the request: \(error)")
        }
        return try decode(PushResponse.self, from: try await send(.POST, SyncEndpoint.push, body: body), path: SyncEndpoint.push)
    }

    /// Pulls a page.
    public func pull(_ request: PullRequest) async throws -> PullResponse {
        var components = URLComponents()
        components.queryItems = request.queryItems
        let path = SyncEndpoint.pull + "?" + (components.percentEncodedQuery ?? "")
        let body = try await send(.GET, path, body: nil)
        // The page reader first (a first download is mostly decoding); `JSONDecoder` for
        // anything it does not accept, to name the fault.
        if let page = SyncJSONReader.pullResponse(body) { return page }
        return try decode(PullResponse.self, from: body, path: SyncEndpoint.pull)
    }

    /// Asks for a scope's members.
    public func members(of scope: ScopeID) async throws -> ScopeMembersResponse {
        let path = Self.membersPath(scope)
        return try decode(ScopeMembersResponse.self, from: try await send(.GET, path, body: nil), path: path)
    }

    /// Grants a user a scope (or sets their role).
    public func grant(_ request: GrantRequest, in scope: ScopeID) async throws -> ScopeMembersResponse {
        let path = Self.membersPath(scope)
        let body: Data
        do {
            body = try JSONEncoder.syncProtocol().encode(request)
        } catch {
            throw SyncTransportError.malformedResponse("cannot encode the request: \(error)")
        }
        return try decode(ScopeMembersResponse.self, from: try await send(.POST, path, body: body), path: path)
    }

    /// Revokes a user's grant of a scope.
    public func revoke(_ user: String, in scope: ScopeID) async throws -> ScopeMembersResponse {
        let path = Self.membersPath(scope) + "/" + Self.pathSegment(user)
        return try decode(ScopeMembersResponse.self, from: try await send(.DELETE, path, body: nil), path: path)
    }

    /// `/v1/scopes/{scope}/members`, the scope percent-encoded as one path segment.
    private static func membersPath(_ scope: ScopeID) -> String {
        SyncEndpoint.scopes + "/" + pathSegment(scope.rawValue) + "/members"
    }

    /// A text as one path segment: everything but unreserved characters and `:` percent-encoded.
    private static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: segmentCharacters) ?? text
    }

    private static let segmentCharacters = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:")

    func token() async throws -> String {
        do { return try await tokenProvider() } catch {
            throw SyncTransportError.refused(status: 401, error: SyncError(.unauthorized, "the token provider failed: \(error)"))
        }
    }

    /// Sends a request and returns the body of a 200 answer (or throws the server's error).
    private func send(_ method: HTTPMethod, _ path: String, body: Data?) async throws -> Data {
        var answer = try await execute(method, path, body: body, token: try await token())
        if answer.status == 401 {
            // Refresh once: the provider is asked again for a new token.
            answer = try await execute(method, path, body: body, token: try await token())
        }
        guard answer.status == 200 else {
            let error =
                (try? JSONDecoder().decode(ErrorResponse.self, from: answer.body))?.error
                ?? SyncError(
                    answer.status >= 500 ? .internalError : .malformedRequest,
                    "HTTP \(answer.status): \(String(decoding: answer.body.prefix(200), as: UTF8.self))")
            throw SyncTransportError.refused(status: answer.status, error: error)
        }
        return answer.body
    }

    private func decode<T: Decodable>(_ type: T.Type, from body: Data, path: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: body)
        } catch {
            throw SyncTransportError.malformedResponse("\(path): \(error)")
        }
    }

    private func execute(_ method: HTTPMethod, _ path: String, body: Data?, token: String) async throws -> (status: Int, body: Data) {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        do {
            let response = try await client.execute(request, timeout: timeout)
            let bytes = try await response.body.collect(upTo: 512 * 1024 * 1024)
            return (Int(response.status.code), Data(bytes.readableBytesView))
        } catch {
            throw SyncTransportError.unreachable("\(error)")
        }
    }

    /// Opens the live WebSocket; the stream ends when the socket closes.
    public func live(clientID: String) -> AsyncThrowingStream<LiveMessage, any Error> {
        let (stream, continuation) = AsyncThrowingStream<LiveMessage, any Error>.makeStream()
        var url = base + SyncEndpoint.live
        if url.hasPrefix("https://") { url = "wss://" + url.dropFirst(8) } else if url.hasPrefix("http://") { url = "ws://" + url.dropFirst(7) }
        let logger = self.logger
        let task = Task { [url] in
            do {
                var headers = HTTPFields()
                headers[.authorization] = "Bearer \(try await self.token())"
                try await WebSocketClient.connect(url: url, configuration: WebSocketClientConfiguration(additionalHeaders: headers), logger: logger) {
                    inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case let .text(text) = message else { continue }
                        guard let decoded = try? JSONDecoder().decode(LiveMessage.self, from: Data(text.utf8)) else { continue }
                        continuation.yield(decoded)
                    }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: SyncTransportError.unreachable("live channel: \(error)"))
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The client every transport uses unless given one: a failed connection fails the request
    /// at once instead of being retried until the request's deadline, because the engine
    /// retries with its own backoff (and shows the app that it is offline meanwhile).
    package static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(10)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()
}
