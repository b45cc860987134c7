import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import OpenSwiftDataSyncProtocol

/// `osd-server`'s HTTP/1.1 channel: Hummingbird's WebSocket upgrade channel with
/// ``UpgradeGuardHandler`` in front of NIO's upgrade handler, so that every request is answered.
///
/// NIO's upgrade handler consumes the first request of a connection when it carries an
/// `Upgrade` header; when no upgrader takes it (an `h2c` upgrade, or a WebSocket handshake
/// without a key or with another version), it hands the connection to HTTP without the
/// request, which is then never answered (the client sees the connection close, or wait). The
/// guard decides before NIO does: anything but a complete WebSocket handshake reaches NIO
/// without its `Upgrade` header, so it is served as plain HTTP/1.1 (an incomplete WebSocket
/// handshake is marked, and ``UpgradeRefusalMiddleware`` answers it `400`).
struct GuardedUpgradeChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let base: HTTP1WebSocketUpgradeChannel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let upgrader = try operations.handler(type: NIOTypedHTTPServerUpgradeHandler<HTTP1WebSocketUpgradeChannel.UpgradeResult>.self)
            try operations.addHandler(UpgradeGuardHandler(), position: .before(upgrader))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with WebSocket upgrades through `webSocketRouter`, where a request with an
    /// `Upgrade` header that is not a complete WebSocket handshake is served as plain HTTP
    /// (see ``GuardedUpgradeChannel``).
    static func guardedWebSocketUpgrade<WSRouter: HTTPResponderBuilder>(
        webSocketRouter: WSRouter, configuration: HTTP1WebSocketUpgradeChannel.Configuration
    ) -> HTTPServerBuilder
    where WSRouter.Responder.Context: WebSocketRequestContext {
        let responder = webSocketRouter.buildResponder()
        return HTTPServerBuilder { httpResponder in
            GuardedUpgradeChannel(
                base: HTTP1WebSocketUpgradeChannel(responder: httpResponder, webSocketResponder: responder, configuration: configuration))
        }
    }
}

/// The header by which ``UpgradeGuardHandler`` tells ``UpgradeRefusalMiddleware`` why a
/// WebSocket handshake is incomplete. The guard removes it from every request a client sends.
let refusedUpgradeHeader = "osd-refused-upgrade"

/// Sits between the HTTP request decoder and NIO's upgrade handler (see
/// ``GuardedUpgradeChannel``):
///
/// - on the first request of a connection, lets a complete WebSocket handshake through as it
///   is (then leaves the pipeline: the connection may become a WebSocket); removes the `Upgrade`
///   header of any other request that has one, so that it is served as HTTP, marking an
///   incomplete WebSocket handshake with ``refusedUpgradeHeader``;
/// - removes ``refusedUpgradeHeader`` from what clients send;
/// - answers a request the decoder cannot parse with `400` and the protocol's JSON error, then
///   closes the connection (only when every earlier request has been answered; otherwise it
///   closes the connection).
final class UpgradeGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var firstRequest = true
    /// Requests read whose answers have not been written whole yet.
    private var unanswered = 0
    private var failed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else {
            if !failed { context.fireChannelRead(data) }
            return
        }
        guard !failed else { return }
        unanswered += 1
        head.headers.remove(name: refusedUpgradeHeader)
        guard firstRequest else {
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        firstRequest = false
        let protocols = head.headers[canonicalForm: "upgrade"].map { $0.lowercased() }
        if protocols.isEmpty {
            context.fireChannelRead(wrapInboundOut(.head(head)))
        } else if protocols.contains("websocket") {
            if let problem = Self.handshakeProblem(head) {
                head.headers.remove(name: "upgrade")
                head.headers.add(name: refusedUpgradeHeader, value: problem)
                context.fireChannelRead(wrapInboundOut(.head(head)))
            } else {
                // A complete handshake: NIO's upgrader decides, and after it the connection
                // may carry WebSocket frames, which this handler must not see.
                context.fireChannelRead(wrapInboundOut(.head(head)))
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            }
        } else {
            // h2c and any other protocol: ignored (RFC 9110 §7.8 lets a server ignore Upgrade).
            head.headers.remove(name: "upgrade")
            context.fireChannelRead(wrapInboundOut(.head(head)))
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { unanswered = max(0, unanswered - 1) }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError, !failed else {
            context.fireErrorCaught(error)
            return
        }
        failed = true
        // A request the decoder could not read: the request being read is the unanswered one.
        unanswered = max(0, unanswered - 1)
        guard unanswered == 0 else {
            Self.end(context)
            return
        }
        let refusal = SyncServiceError.malformed("the request is not valid HTTP/1.1: \(error)")
        let body =
            (try? JSONEncoder.syncProtocol().encode(ErrorResponse(error: refusal.error)))
            ?? Data(#"{"error":{"code":"malformedRequest","message":"bad request"}}"#.utf8)
        let headers = HTTPHeaders([
            ("content-type", "application/json"), ("content-length", "\(body.count)"), ("connection", "close"),
            ("x-request-id", RequestID().description),
        ])
        let head = HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            Self.end(context)
        }
    }

    /// Closes the connection after a request that could not be parsed. The handlers after this
    /// one are told the input ended first, so that NIO's upgrade handler, still waiting for a
    /// first request, ends quietly (closed under it, it fails the connection as an error).
    private static func end(_ context: ChannelHandlerContext) {
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        context.close(promise: nil)
    }

    /// Why a request asking for a WebSocket is not a complete handshake (RFC 6455 §4.2.1), or
    /// nil when it is one.
    static func handshakeProblem(_ head: HTTPRequestHead) -> String? {
        guard head.method == .GET else { return "a WebSocket handshake is a GET, not \(head.method.rawValue)" }
        guard head.version.major == 1, head.version.minor >= 1 else { return "a WebSocket handshake needs HTTP/1.1" }
        guard head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "upgrade" }) else {
            return "a WebSocket handshake needs Connection: Upgrade"
        }
        let keys = head.headers[canonicalForm: "sec-websocket-key"]
        guard keys.count == 1, let key = keys.first, Data(base64Encoded: String(key))?.count == 16 else {
            return "a WebSocket handshake needs one Sec-WebSocket-Key: 16 bytes in base64"
        }
        let versions = head.headers[canonicalForm: "sec-websocket-version"]
        guard versions.count == 1, versions.first == "13" else {
            return "a WebSocket handshake needs Sec-WebSocket-Version: 13"
        }
        // NIO's upgrade handler cannot take a body with the handshake (it drops the request).
        guard !head.headers.contains(name: "transfer-encoding"),
            head.headers["content-length"].allSatisfy({ $0.trimmingCharacters(in: .whitespaces) == "0" })
        else {
            return "a WebSocket handshake has no body"
        }
        return nil
    }
}

/// Answers a request that ``UpgradeGuardHandler`` marked as an incomplete WebSocket handshake
/// with `400 malformedRequest`, naming what is missing.
struct UpgradeRefusalMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let name = HTTPField.Name(refusedUpgradeHeader), let problem = request.headers[name] {
            throw SyncServiceError.malformed("\(problem); this request asked for a WebSocket upgrade and was not answered as one")
        }
        return try await next(request, context)
    }
}
