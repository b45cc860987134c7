import Foundation
import Hummingbird
import HummingbirdWebSocket
import OpenSwiftDataSyncProtocol

/// `GET /v1/live`: a WebSocket on which the server says when the caller's scopes changed.
/// The token travels in the `Authorization` header, or as `access_token` in the query for
/// clients that cannot set headers on a WebSocket.
struct LiveRoute: Sendable {
    let verifier: TokenVerifier
    let hub: LiveHub

    func add(to router: Router<BasicWebSocketRequestContext>) {
        let verifier = verifier
        let hub = hub
        router.ws("/v1/live") { request, _ in
            _ = try await Self.user(request, verifier)
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            guard let user = try? await Self.user(context.request, verifier) else { return }
            let (id, messages) = await hub.connect(user: user)
            let writer = Task {
                let encoder = JSONEncoder.syncProtocol()
                for await message in messages {
                    guard let data = try? encoder.encode(message) else { continue }
                    try await outbound.write(.text(String(decoding: data, as: UTF8.self)))
                }
                // The hub shut down: close, so that the read loop below ends too.
                try? await outbound.close(.goingAway, reason: "server shutting down")
            }
            do {
                for try await _ in inbound {}
            } catch {}
            writer.cancel()
            await hub.disconnect(id)
        }
    }

    static func user(_ request: Request, _ verifier: TokenVerifier) async throws -> String {
        if let header = request.headers[.authorization] {
            return try await verifier.user(authorization: header)
        }
        let token = URLComponents(string: request.uri.description)?.queryItems?.first { $0.name == "access_token" }?.value
        guard let token else { throw SyncServiceError(401, .unauthorized, "no bearer token: send Authorization: Bearer <JWT> or ?access_token=") }
        return try await verifier.user(token: token)
    }
}
