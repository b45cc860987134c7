import Hummingbird

/// The request context of the sync routes.
public struct SyncRequestContext: RequestContext {
    /// Hummingbird's per-request storage (logger with the request id, route parameters).
    public var coreContext: CoreRequestContextStorage

    /// Makes a context for a request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
    }

    /// Bodies are read with the server's own limit (``SyncServerConfiguration/maxBodySize``),
    /// so the framework's limit is only a backstop.
    public var maxUploadSize: Int { 64 * 1024 * 1024 }
}
