import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// What the sync routes need of a request context: Hummingbird's, WebSocket upgrades (the
/// live channel, `GET /v1/live`), and the connection a request came on, on which a refused
/// live handshake is answered with the protocol's JSON error.
///
/// Conform your application's context to mount ``SyncServer/routes(context:)`` in its router,
/// as Hummingbird's WebSocket and authentication modules ask of theirs:
///
/// ```swift
/// struct AppContext: SyncRequestContext {
///     var coreContext: CoreRequestContextStorage
///     let webSocket = WebSocketHandlerReference<AppContext>()
///     let channel: any Channel
///
///     init(source: ApplicationRequestContextSource) {
///         coreContext = CoreRequestContextStorage(source: source)
///         channel = source.channel
///     }
/// }
/// ```
///
/// Or use ``BasicSyncRequestContext``.
public protocol SyncRequestContext: RequestContext, WebSocketRequestContext {
    /// The connection the request came on.
    var channel: any Channel { get }
}

/// The request context of `osd-server`'s routers, and one an application may use for its own.
public struct BasicSyncRequestContext: SyncRequestContext {
    /// Hummingbird's per-request storage (logger with the request id, route parameters).
    public var coreContext: CoreRequestContextStorage
    /// Where the live route hands Hummingbird the WebSocket handler of an accepted handshake.
    public let webSocket: WebSocketHandlerReference<BasicSyncRequestContext>
    /// The connection the request came on.
    public let channel: any Channel

    /// Makes a context for a request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        webSocket = WebSocketHandlerReference()
        channel = source.channel
    }

    /// Bodies are read with the server's own limit (``SyncServerConfiguration/maxBodySize``),
    /// so the framework's limit is only a backstop.
    public var maxUploadSize: Int { 64 * 1024 * 1024 }
}
