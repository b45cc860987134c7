import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol

/// A transport that calls the server's transport-free core directly, as one user, with hooks
/// that tests (and the simulator) use to cut the network, lose answers, or tamper with them.
///
/// `@unchecked Sendable`: its mutable state (`online`, the hooks, counters and live
/// continuations) is only read and written while holding `lock`.
public final class InMemorySyncTransport: SyncTransport, @unchecked Sendable {
    private var currentService: SyncService
    private var pushesBlocked = false
    private var helloOnConnect = true
    /// The user the requests authenticate as.
    public let user: String
    private let lock = NSLock()
    private var isOnline = true
    private var pushHook: (@Sendable (PushRequest, Result<PushResponse, any Error>) throws -> PushResponse)?
    private var pullHook: (@Sendable (PullResponse) throws -> PullResponse)?
    private var liveContinuations: [UUID: AsyncThrowingStream<LiveMessage, any Error>.Continuation] = [:]
    private var pushes: [PushRequest] = []

    /// Makes a transport for `user` to `service`.
    public init(service: SyncService, user: String) {
        self.currentService = service
        self.user = user
    }

    /// The server core requests go to (replace it to simulate a restored or another server).
    public var service: SyncService {
        get { lock.withLock { currentService } }
        set { lock.withLock { currentService = newValue } }
    }

    /// Whether a new live channel says `hello` at once (false: it stays silent until
    /// ``announce(_:)``).
    public var sendsHello: Bool {
        get { lock.withLock { helloOnConnect } }
        set { lock.withLock { helloOnConnect = newValue } }
    }

    /// Whether pushes fail as unreachable before reaching the server (pulls still work).
    public var blockPushes: Bool {
        get { lock.withLock { pushesBlocked } }
        set { lock.withLock { pushesBlocked = newValue } }
    }

    /// Whether requests reach the server (false: they fail as unreachable, live channels drop).
    public var online: Bool {
        get { lock.withLock { isOnline } }
        set {
            let dropped: [AsyncThrowingStream<LiveMessage, any Error>.Continuation] = lock.withLock {
                isOnline = newValue
                if newValue { return [] }
                let all = Array(liveContinuations.values)
                liveContinuations = [:]
                return all
            }
            for continuation in dropped { continuation.finish(throwing: SyncTransportError.unreachable("offline")) }
        }
    }

    /// Every push request sent to the server, in order.
    public var sentPushes: [PushRequest] { lock.withLock { pushes } }

    /// Replaces push answers (after the server processed the request): return an answer, or
    /// throw to make the answer "lost".
    public func onPush(_ hook: (@Sendable (PushRequest, Result<PushResponse, any Error>) throws -> PushResponse)?) {
        lock.withLock { pushHook = hook }
    }

    /// Replaces pull answers.
    public func onPull(_ hook: (@Sendable (PullResponse) throws -> PullResponse)?) { lock.withLock { pullHook = hook } }

    /// Sends a live message to every open channel.
    public func announce(_ message: LiveMessage) {
        let all = lock.withLock { Array(liveContinuations.values) }
        for continuation in all { continuation.yield(message) }
    }

    private func map(_ error: any Error) -> any Error {
        if let error = error as? SyncServiceError { return SyncTransportError.refused(status: error.statusCode, error: error.error) }
        return error
    }

    /// Pushes through the server core (unreachable while offline or while pushes are blocked);
    /// the push hook may replace or lose the answer.
    public func push(_ request: PushRequest) async throws -> PushResponse {
        guard online, !blockPushes else { throw SyncTransportError.unreachable("offline") }
        lock.withLock { pushes.append(request) }
        let result: Result<PushResponse, any Error>
        do { result = .success(try await service.push(user: user, request: request)) } catch { result = .failure(map(error)) }
        if let hook = lock.withLock({ pushHook }) { return try hook(request, result) }
        return try result.get()
    }

    /// Pulls through the server core (unreachable while offline); the pull hook may replace
    /// the answer.
    public func pull(_ request: PullRequest) async throws -> PullResponse {
        guard online else { throw SyncTransportError.unreachable("offline") }
        let response: PullResponse
        do { response = try await service.pull(user: user, request: request) } catch { throw map(error) }
        if let hook = lock.withLock({ pullHook }) { return try hook(response) }
        return response
    }

    /// Asks the server core for a scope's members (unreachable while offline).
    public func members(of scope: ScopeID) async throws -> ScopeMembersResponse {
        guard online else { throw SyncTransportError.unreachable("offline") }
        do { return try await service.members(user: user, scope: scope) } catch { throw map(error) }
    }

    /// Grants through the server core (unreachable while offline).
    public func grant(_ request: GrantRequest, in scope: ScopeID) async throws -> ScopeMembersResponse {
        guard online else { throw SyncTransportError.unreachable("offline") }
        do { return try await service.grant(user: user, scope: scope, request: request) } catch { throw map(error) }
    }

    /// Revokes through the server core (unreachable while offline).
    public func revoke(_ member: String, in scope: ScopeID) async throws -> ScopeMembersResponse {
        guard online else { throw SyncTransportError.unreachable("offline") }
        do { return try await service.revoke(user: user, scope: scope, member: member) } catch { throw map(error) }
    }

    /// A live channel that says `hello` at once, then carries ``announce(_:)``'s messages, and
    /// drops when the transport goes offline.
    public func live(clientID: ClientID) -> AsyncThrowingStream<LiveMessage, any Error> {
        let (stream, continuation) = AsyncThrowingStream<LiveMessage, any Error>.makeStream()
        guard online else {
            continuation.finish(throwing: SyncTransportError.unreachable("offline"))
            return stream
        }
        let key = UUID()
        lock.withLock { liveContinuations[key] = continuation }
        if sendsHello { continuation.yield(LiveMessage(type: .hello)) }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.liveContinuations.removeValue(forKey: key) }
        }
        return stream
    }
}
