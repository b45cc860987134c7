import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import OpenSwiftDataSyncProtocol

/// `GET /v1/live`: a WebSocket on which the server says when the caller's scopes changed.
/// The token travels in the `Authorization` header, or as `access_token` in the query for
/// clients that cannot set headers on a WebSocket.
///
/// A refused handshake is answered `401` with the protocol's JSON error body and an
/// `x-request-id`. Hummingbird's WebSocket channel answers every handshake its router does not
/// accept with a bare `400` and no body, and offers no way to change that answer; so the route
/// checks the token before the upgrade is decided and, when it is refused, writes the `401`
/// itself on the connection, then adds a handler that swallows the library's `400` written
/// next (``AnsweredRefusalHandler``); the library then closes the connection.
struct LiveRoute: Sendable {
    let verifier: TokenVerifier
    let hub: LiveHub
    let metrics: ServerMetrics

    func add<Context: SyncRequestContext>(to router: RouteCollection<Context>) {
        let verifier = verifier
        let hub = hub
        let metrics = metrics
        router.ws("/v1/live") { request, context in
            // A plain GET (no handshake) reaches this route when the application's router is
            // also its WebSocket router: it is answered as HTTP, not on the connection.
            guard request.headers[.upgrade]?.lowercased().contains("websocket") == true else {
                throw SyncServiceError.malformed("GET /v1/live is a WebSocket handshake: send Upgrade: websocket")
            }
            do {
                _ = try await Self.user(request, verifier)
                try SyncRoutes.checkQueryVersion(request)
            } catch {
                let refusal = error as? SyncServiceError ?? SyncServiceError(401, .unauthorized, "the bearer token could not be checked")
                await Self.refuse(refusal, context: context)
                metrics.request(route: "/v1/live", method: "GET", status: refusal.statusCode)
                context.logger.info(
                    "request", metadata: ["method": "GET", "path": "\(request.uri.path)", "route": "/v1/live", "status": "\(refusal.statusCode)"])
                return .dontUpgrade
            }
            metrics.request(route: "/v1/live", method: "GET", status: 101)
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

    /// Answers a refused handshake with `refusal` as the protocol's JSON error, then puts a
    /// handler on the connection that swallows what the WebSocket library writes next (its bare
    /// `400`); the library then closes the connection.
    static func refuse(_ refusal: SyncServiceError, context: some SyncRequestContext) async {
        let body =
            (try? JSONEncoder.syncProtocol().encode(ErrorResponse(error: refusal.error)))
            ?? Data(#"{"error":{"code":"unauthorized","message":"unauthorized"}}"#.utf8)
        let headers = HTTPHeaders([
            ("content-type", "application/json"), ("content-length", "\(body.count)"), ("connection", "close"), ("x-request-id", context.id),
        ])
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: refusal.statusCode), headers: headers)
        let channel = context.channel
        do {
            channel.write(HTTPServerResponsePart.head(head), promise: nil)
            channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
            try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(AnsweredRefusalHandler())
            }.get()
        } catch {
            context.logger.debug("the refusal of a live handshake could not be written", metadata: ["error": "\(error)"])
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

/// On a connection whose refused live handshake the route answered itself, swallows the
/// response the WebSocket library writes after it (a bare `400`), so that the client reads one
/// answer: the route's.
final class AnsweredRefusalHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promise?.succeed(())
    }
}
