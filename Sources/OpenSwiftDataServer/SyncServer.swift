import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import OpenSwiftDataSyncProtocol
import ServiceLifecycle

/// The settings of a running server.
public struct SyncServerConfiguration: Sendable {
    /// The address to listen on.
    public var hostname: String
    /// The port (0: any free port; the bound one is reported to `onServerRunning`).
    public var port: Int
    /// Where token keys come from.
    public var auth: AuthConfiguration
    /// The largest request body accepted, in bytes.
    public var maxBodySize: Int
    /// The sync semantics' settings (limits, retention, policies).
    public var sync: SyncServiceConfiguration
    /// How often tombstones and old log entries are compacted, in seconds.
    public var compactionInterval: TimeInterval
    /// The most seconds a graceful shutdown takes, whatever clients do: live connections are
    /// closed with `1001 going away` at once, requests in flight are answered, and whatever is
    /// still running when the period ends is cancelled.
    public var shutdownGracePeriod: TimeInterval
    /// The seconds a `503 unavailable` answer tells clients to wait before retrying, in its
    /// `Retry-After` header (the storage cannot serve: the database is unreachable or cannot
    /// write).
    public var retryAfter: Int
    /// The secret of the admin console at `/admin` (nil or empty: no console, and `/admin` is
    /// `404` like any unknown path). The console takes it as `Authorization: Bearer <token>`
    /// or as a Basic password; it is not a user token, and user tokens do not open the
    /// console. Serve the console only over TLS: the token travels in every request.
    public var adminToken: String?

    /// Makes a configuration.
    public init(
        hostname: String = "127.0.0.1", port: Int = 8080, auth: AuthConfiguration = AuthConfiguration(), maxBodySize: Int = 8 * 1024 * 1024,
        sync: SyncServiceConfiguration = SyncServiceConfiguration(), compactionInterval: TimeInterval = 3600, shutdownGracePeriod: TimeInterval = 10,
        retryAfter: Int = 5, adminToken: String? = nil
    ) {
        self.adminToken = adminToken
        self.retryAfter = max(1, retryAfter)
        self.hostname = hostname
        self.port = port
        self.auth = auth
        self.maxBodySize = maxBodySize
        self.sync = sync
        self.compactionInterval = compactionInterval
        self.shutdownGracePeriod = shutdownGracePeriod
    }
}

/// The sync server assembled: core, storage, auth, metrics and live hub, with its routes.
///
/// Run it alone with ``makeApplication(logger:onServerRunning:)`` (what `osd-server` does), or
/// mount its routes in your own Hummingbird application, at a path of your choice:
///
/// ```swift
/// let server = try await SyncServer(configuration: configuration, storage: try SQLiteSyncStorage(path: "sync.sqlite"))
/// let router = Router(context: BasicSyncRequestContext.self)
/// router.get("/hello") { _, _ in "hello" }
/// router.addRoutes(server.routes(), atPath: "/sync")             // /sync/v1/push, /sync/v1/pull, …
/// router.addRoutes(server.monitoringRoutes(), atPath: "/sync")   // /sync/health, /sync/ready, /sync/metrics
/// let app = Application(router: router, server: .http1WebSocketUpgrade(webSocketRouter: router))
/// ```
///
/// The routes' middleware (errors as the protocol's JSON, `x-request-id`, logs, metrics) applies
/// to them only, not to the application's other routes. Run ``relayRemoteEvents()`` in a task
/// when the storage is shared by several servers (PostgreSQL), and ``close()`` after the
/// application stopped.
public final class SyncServer: Sendable {
    /// The settings.
    public let configuration: SyncServerConfiguration
    /// The transport-free core.
    public let service: SyncService
    /// The token verifier.
    public let verifier: TokenVerifier
    /// The metrics.
    public let metrics: ServerMetrics
    /// The live connections.
    public let hub: LiveHub
    /// What this server did lately, for the admin console: nil without an admin token, so a
    /// server without the console keeps no record of it.
    package let activity: ServerActivity?
    private let startedAt: Date
    private let now: @Sendable () -> Date

    /// Opens the server over a storage (`SQLiteSyncStorage` from `OpenSwiftDataServerSQLite`,
    /// or `PostgresSyncStorage` from `OpenSwiftDataServerPostgres`) and loads its keys. `now` is
    /// the time the core and the token checks read. Blobs' bytes are kept in `blobs`, or where
    /// the storage keeps them (files beside a SQLite database) when it is nil.
    public init(
        configuration: SyncServerConfiguration, storage: any SyncStorage, blobs: (any BlobStorage)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws {
        let metrics = ServerMetrics()
        let hub = LiveHub(onCount: { metrics.liveClients($0) })
        let activity = AdminCredential(token: configuration.adminToken) == nil ? nil : ServerActivity()
        self.configuration = configuration
        self.metrics = metrics
        self.hub = hub
        self.activity = activity
        self.now = now
        self.startedAt = now()
        self.service = try await SyncService(
            storage: storage, configuration: configuration.sync, now: now,
            observer: SyncObserver(
                event: { event in Task { await hub.publish(event) } },
                pushed: { summary in
                    metrics.pushed(summary)
                    activity?.processed(summary.applied + summary.rejected)
                }), blobs: blobs)
        self.verifier = try await TokenVerifier(configuration: configuration.auth, now: now)
    }

    private var httpRoutes: SyncRoutes {
        SyncRoutes(service: service, verifier: verifier, metrics: metrics, maxBodySize: configuration.maxBodySize, activity: activity, now: now)
    }

    /// The admin console's routes, or nil when no admin token is configured.
    private var admin: AdminRoutes? {
        guard let credential = AdminCredential(token: configuration.adminToken), let activity else { return nil }
        return AdminRoutes(
            console: AdminConsole(service: service, hub: hub, activity: activity, startedAt: startedAt, now: now), credential: credential)
    }

    /// The protocol's routes, to mount with `router.addRoutes(_:atPath:)`: `POST /v1/push`,
    /// `GET /v1/pull`, the `/v1/scopes…` routes, and the live channel `GET /v1/live`.
    ///
    /// The HTTP routes carry the sync middleware: every error becomes the protocol's JSON error
    /// body, each answer gets an `x-request-id`, and each request is logged and counted in
    /// ``metrics``. The live channel answers a refused handshake `401` with the protocol's JSON
    /// error; it upgrades only when the application's server is built with
    /// `.http1WebSocketUpgrade(webSocketRouter:)` over a router holding these routes.
    public func routes<Context: SyncRequestContext>(context: Context.Type = Context.self) -> RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        LiveRoute(verifier: verifier, hub: hub, metrics: metrics).add(to: routes)
        routes.add(middleware: SyncMiddleware(metrics: metrics, retryAfter: configuration.retryAfter))
        httpRoutes.add(to: routes)
        return routes
    }

    /// The monitoring routes, to mount with `router.addRoutes(_:atPath:)` if the application
    /// wants them: `GET /health` (always `200`), `GET /ready` (`503` while the storage cannot
    /// serve) and `GET /metrics` (Prometheus text), with the sync middleware.
    public func monitoringRoutes<Context: RequestContext>(context: Context.Type = Context.self) -> RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.add(middleware: SyncMiddleware(metrics: metrics, retryAfter: configuration.retryAfter))
        httpRoutes.addMonitoring(to: routes)
        return routes
    }

    /// The admin console's routes, to mount with `router.addRoutes(_:atPath:)` if the
    /// application wants them, with the sync middleware: `GET /admin` (the page), `GET
    /// /admin/api/state` (what it shows, as JSON), and the `POST /admin/api/…` actions (grant,
    /// revoke, rotate the epoch). Every one of them needs
    /// ``SyncServerConfiguration/adminToken``; without one the collection is empty, so
    /// `/admin` is an unknown path. Serve it only over TLS.
    public func adminRoutes<Context: RequestContext>(context: Context.Type = Context.self) -> RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        guard let admin else { return routes }
        routes.add(middleware: SyncMiddleware(metrics: metrics, retryAfter: configuration.retryAfter))
        admin.add(to: routes)
        return routes
    }

    /// A service serving the protocol, with the live channel, the monitoring routes, the admin
    /// console (when ``SyncServerConfiguration/adminToken`` is set) and periodic compaction, to
    /// run in a `ServiceGroup`. Its graceful shutdown ends within
    /// ``SyncServerConfiguration/shutdownGracePeriod`` whatever clients do: live connections are
    /// closed with `1001 going away` first, then the server stops accepting connections and
    /// answers the requests in flight, and what still runs when the period ends is cancelled.
    /// `onServerRunning` gets the bound port.
    public func makeApplication(
        logger: Logger = Logger(label: "osd-server"), onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some Service {
        // The middleware is the whole router's here, so that unknown routes and methods are
        // answered with the protocol's JSON error too.
        let router = Router(context: BasicSyncRequestContext.self)
        router.middlewares.add(SyncMiddleware(metrics: metrics, retryAfter: configuration.retryAfter))
        router.middlewares.add(UpgradeRefusalMiddleware())
        let routes = RouteCollection(context: BasicSyncRequestContext.self)
        httpRoutes.add(to: routes)
        httpRoutes.addMonitoring(to: routes)
        router.addRoutes(routes)
        if let admin {
            let adminRoutes = RouteCollection(context: BasicSyncRequestContext.self)
            admin.add(to: adminRoutes)
            router.addRoutes(adminRoutes)
        }
        let liveRoutes = RouteCollection(context: BasicSyncRequestContext.self)
        LiveRoute(verifier: verifier, hub: hub, metrics: metrics).add(to: liveRoutes)
        let liveRouter = Router(context: BasicSyncRequestContext.self)
        liveRouter.addRoutes(liveRoutes)
        let grace = Duration.milliseconds(Int64(max(0, configuration.shutdownGracePeriod) * 1000))
        let application = Application(
            router: router,
            // Hummingbird's `.http1WebSocketUpgrade(webSocketRouter:)` with a guard that has every
            // request with an `Upgrade` header answered (see `GuardedUpgradeChannel`).
            server: .guardedWebSocketUpgrade(webSocketRouter: liveRouter, configuration: .init(ws: .init(closeTimeout: grace))),
            configuration: ApplicationConfiguration(address: .hostname(configuration.hostname, port: configuration.port), serverName: "osd-server"),
            services: backgroundServices(logger: logger),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
        return DrainingService(application: application, hub: hub, gracePeriod: grace, logger: logger)
    }

    /// The services an application that mounts ``routes(context:)`` itself runs beside its
    /// server, as ``makeApplication(logger:onServerRunning:)`` does: compaction of the change
    /// log every ``SyncServerConfiguration/compactionInterval`` (without it the log grows for
    /// ever), and the relay of other servers' events to this one's live clients
    /// (``relayRemoteEvents()``). Add them to the application's `services:` or its
    /// `ServiceGroup`.
    public func backgroundServices(logger: Logger = Logger(label: "osd-server")) -> [any Service] {
        [CompactionService(service: service, interval: configuration.compactionInterval, logger: logger), RemoteEventService(server: self)]
    }

    /// Delivers to this server's live clients the events that other servers sharing the
    /// storage committed (a ``SharedSyncStorage``), until the task is cancelled; returns at once
    /// for a storage of one server. ``makeApplication(logger:onServerRunning:)`` runs it; call
    /// it in a task of your own when you mount the routes in your own application.
    public func relayRemoteEvents() async {
        guard let shared = service.storage as? any SharedSyncStorage else { return }
        for await event in shared.remoteEvents() {
            await hub.publish(event)
        }
    }

    /// Closes the storage (after the application stopped).
    public func close() async throws {
        await hub.shutdown()
        try await service.storage.close()
    }
}

/// Runs an application so that its graceful shutdown is bounded whatever clients do.
///
/// Hummingbird's WebSocket handler answers graceful shutdown by closing each socket with
/// `1000`, and its close timeout starts only once the route's handler returns, which a client
/// that never answers the close frame prevents; the server then waits for that connection
/// forever. So the application runs in a service group of its own, in a task that does not
/// inherit this service's graceful shutdown, and the shutdown goes in order: the live hub
/// closes every socket with `1001` and the live handlers stop reading; then the server is
/// shut down gracefully (no new connections, requests in flight answered); when the grace
/// period ends, what still runs is cancelled, and if even that does not end it within two
/// seconds, this service returns anyway so that the process can exit.
struct DrainingService<Wrapped: Service>: Service {
    let application: Wrapped
    let hub: LiveHub
    let gracePeriod: Duration
    let logger: Logger

    private enum Event: Sendable {
        case ended(Result<Void, any Error>)
        case shutdown
        case deadline
        case abandon
    }

    func run() async throws {
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [application], logger: logger))
        let (events, continuation) = AsyncStream<Event>.makeStream()
        // Detached: the group must not see this service's graceful shutdown before the hub
        // has closed the live sockets (see above).
        let running = Task.detached {
            do {
                try await group.run()
                continuation.yield(.ended(.success(())))
            } catch {
                continuation.yield(.ended(.failure(error)))
            }
        }
        var timers: [Task<Void, Never>] = []
        defer { for timer in timers { timer.cancel() } }
        let hub = hub
        let gracePeriod = gracePeriod
        try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                for await event in events {
                    switch event {
                    case .ended(let result):
                        return try result.get()
                    case .shutdown:
                        logger.info(
                            "graceful shutdown: closing live connections, then answering requests in flight",
                            metadata: ["gracePeriod": "\(gracePeriod)"])
                        timers.append(
                            Task {
                                await hub.shutdown()
                                // Until every live handler has sent 1001 and returned (or the period ends).
                                while await hub.count > 0, !Task.isCancelled {
                                    try? await Task.sleep(for: .milliseconds(10))
                                }
                                await group.triggerGracefulShutdown()
                            })
                        timers.append(
                            Task {
                                try? await Task.sleep(for: gracePeriod)
                                if !Task.isCancelled { continuation.yield(.deadline) }
                            })
                    case .deadline:
                        logger.warning("the shutdown grace period is over: cancelling the connections and requests still open")
                        running.cancel()
                        timers.append(
                            Task {
                                try? await Task.sleep(for: .seconds(2))
                                if !Task.isCancelled { continuation.yield(.abandon) }
                            })
                    case .abandon:
                        logger.error("the server did not stop when cancelled; leaving it to the process exit")
                        return
                    }
                }
            } onGracefulShutdown: {
                continuation.yield(.shutdown)
            }
        } onCancel: {
            running.cancel()
        }
    }
}

/// Relays other servers' events to this server's live clients until graceful shutdown.
struct RemoteEventService: Service {
    let server: SyncServer

    func run() async throws {
        guard server.service.storage is any SharedSyncStorage else {
            // Nothing to relay; a service that returns early would end the group.
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            await server.relayRemoteEvents()
        }
    }
}

/// Compacts the log and tombstones past the retention window, periodically.
struct CompactionService: Service {
    let service: SyncService
    let interval: TimeInterval
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: .seconds(max(1, interval)))
                    let result = try await service.compact()
                    if result.changesRemoved + result.tombstonesRemoved > 0 {
                        logger.info(
                            "compacted",
                            metadata: [
                                "horizon": "\(result.horizon)", "changes": "\(result.changesRemoved)", "tombstones": "\(result.tombstonesRemoved)",
                            ])
                    }
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("compaction failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
