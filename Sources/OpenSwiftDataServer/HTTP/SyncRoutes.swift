import Foundation
import Hummingbird
import OpenSwiftDataSyncProtocol

/// The protocol's HTTP routes over a ``SyncService``: a thin layer that authenticates, reads
/// the request, calls the core and encodes its answer.
struct SyncRoutes: Sendable {
    let service: SyncService
    let verifier: TokenVerifier
    let metrics: ServerMetrics
    let maxBodySize: Int
    /// Where answered and refused pushes and pulls are recorded for the admin console (nil
    /// without it).
    let activity: ServerActivity?
    /// The time the activity is stamped with (the server's).
    let now: @Sendable () -> Date

    /// Adds `/v1/push`, `/v1/pull`, the `/v1/scopes` routes and the `/v1/blobs` routes.
    func add<Context: RequestContext>(to router: RouteCollection<Context>) {
        BlobRoutes(service: service, verifier: verifier).add(to: router)
        router.post("/v1/push") { request, context in try await push(request, context) }
        router.get("/v1/pull") { request, context in try await pull(request, context) }
        router.get("/v1/scopes") { request, _ in
            let user = try await authenticate(request)
            try Self.checkQueryVersion(request)
            return JSONBody.response(try await service.scopes(user: user))
        }
        router.get("/v1/scopes/:scope/members") { request, context in
            let user = try await authenticate(request)
            try Self.checkQueryVersion(request)
            return JSONBody.response(try await service.members(user: user, scope: try scope(context)))
        }
        router.post("/v1/scopes/:scope/members") { request, context in
            let user = try await authenticate(request)
            var request = request
            let body = try await readBody(&request)
            let grant = try JSONBody.decode(GrantRequest.self, from: body)
            return JSONBody.response(try await service.grant(user: user, scope: try scope(context), request: grant))
        }
        router.delete("/v1/scopes/:scope/members/:user") { request, context in
            let user = try await authenticate(request)
            try Self.checkQueryVersion(request)
            guard let member = context.parameters.get("user").map({ $0.removingPercentEncoding ?? $0 }) else {
                throw SyncServiceError.malformed("the path names no user")
            }
            return JSONBody.response(try await service.revoke(user: user, scope: try scope(context), member: member))
        }
    }

    /// Adds `/health`, `/ready` and `/metrics`.
    func addMonitoring<Context: RequestContext>(to router: RouteCollection<Context>) {
        let service = service
        let metrics = metrics
        router.get("/health") { _, _ in JSONBody.response(["status": "ok"]) }
        router.get("/ready") { _, _ in
            guard await service.storage.isReady() else {
                throw SyncServiceError(503, .unavailable, "the database cannot serve: it cannot be reached, read or written")
            }
            return JSONBody.response(["status": "ready"])
        }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.render())))
        }
    }

    /// Checks the `protocolVersion` query parameter of a request without a body other than a
    /// pull (the scopes routes, the live channel): optional there, the current version when
    /// absent; a version the server does not speak is `400 unsupportedProtocolVersion`.
    static func checkQueryVersion(_ request: Request) throws {
        guard let text = URLComponents(string: request.uri.description)?.queryItems?.first(where: { $0.name == "protocolVersion" })?.value else {
            return
        }
        guard let number = Int(text) else {
            throw SyncServiceError.malformed("protocolVersion must be an integer, not \(text.debugDescription)")
        }
        let version = ProtocolVersion(rawValue: number)
        guard ProtocolVersion.supported.contains(version) else { throw SyncServiceError.unsupportedVersion(version) }
    }

    private func authenticate(_ request: Request) async throws -> String {
        try await verifier.user(authorization: request.headers[.authorization])
    }

    private func scope(_ context: some RequestContext) throws -> ScopeID {
        guard let text = context.parameters.get("scope") else { throw SyncServiceError.malformed("the path names no scope") }
        return ScopeID(rawValue: text.removingPercentEncoding ?? text)
    }

    private func readBody(_ request: inout Request) async throws -> ByteBuffer {
        do {
            return try await request.collectBody(upTo: maxBodySize)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw SyncServiceError(413, .bodyTooLarge, "the body is larger than the limit of \(maxBodySize) bytes")
        }
    }

    private func push(_ request: Request, _ context: some RequestContext) async throws -> Response {
        var user: String?
        var clientID: ClientID?
        do {
            let caller = try await authenticate(request)
            user = caller
            var request = request
            let body = try await readBody(&request)
            let push = try JSONBody.decode(PushRequest.self, from: body)
            clientID = push.clientID
            let start = ContinuousClock.now
            let response = try await service.push(user: caller, request: push)
            metrics.pushDuration(nanoseconds: (ContinuousClock.now - start).nanoseconds)
            activity?.pushed(user: caller, clientID: push.clientID, response: response, at: now())
            return JSONBody.response(response)
        } catch let error as SyncServiceError {
            activity?.refused(route: "push", user: user, clientID: clientID, error: error, at: now())
            throw error
        }
    }

    private func pull(_ request: Request, _ context: some RequestContext) async throws -> Response {
        let items = URLComponents(string: request.uri.description)?.queryItems ?? []
        var user: String?
        do {
            let caller = try await authenticate(request)
            user = caller
            let pull: PullRequest
            do {
                pull = try PullRequest(queryItems: items)
            } catch let error as SyncError {
                throw SyncServiceError(400, error.code, error.message)
            }
            let start = ContinuousClock.now
            let response = try await service.pull(user: caller, request: pull)
            metrics.pulled(nanoseconds: (ContinuousClock.now - start).nanoseconds)
            activity?.pulled(user: caller, clientID: pull.clientID, at: now())
            return JSONBody.response(response)
        } catch let error as SyncServiceError {
            let clientID = items.first { $0.name == "clientID" }?.value
            activity?.refused(route: "pull", user: user, clientID: clientID, error: error, at: now())
            throw error
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
