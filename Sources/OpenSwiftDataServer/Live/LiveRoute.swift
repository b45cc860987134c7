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
            // Two tasks; when either ends, the other is cancelled and the handler returns. The
            // writer ends when the hub shuts down, after closing with 1001: the reader must not
            // wait for a client that never answers the close frame, or the socket, and the
            // server's shutdown with it, would never end (Hummingbird's close timeout starts
            // only when this handler returns).
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    let encoder = JSONEncoder.syncProtocol()
                    for await message in messages {
                        guard let data = try? encoder.encode(message) else { continue }
                        do {
                            try await outbound.write(.text(String(decoding: data, as: UTF8.self)))
                        } catch {
                            return
                        }
                    }
                    guard !Task.isCancelled else { return }
                    try? await outbound.close(.goingAway, reason: "server shutting down")
                }
                tasks.addTask {
                    do {
                        for try await _ in inbound {}
                    } catch {}
                }
                await tasks.next()
                tasks.cancelAll()
            }
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
