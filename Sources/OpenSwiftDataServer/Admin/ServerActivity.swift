import Foundation
import OpenSwiftDataSyncProtocol
import Synchronization

/// What this server did lately, in memory, for the admin console: pushes, pulls and mutations
/// per second, the latest refusals with their reasons, and when each client was last seen.
/// Everything it holds is bounded: rates over a window of seconds, a ring of refusals, and at
/// most ``clientCapacity`` clients (the least recently seen are forgotten first).
package final class ServerActivity: Sendable {
    /// A refused mutation or request.
    package struct Rejection: Sendable, Hashable {
        /// When it was refused.
        package var at: Date
        /// The route: `push` or `pull`.
        package var route: String
        /// The user, when the request's token was accepted.
        package var user: String?
        /// The client, when the request named one.
        package var clientID: ClientID?
        /// The mutation, for a refused mutation of an accepted push.
        package var mutationID: MutationID?
        /// The reason: a `RejectionReason` for a mutation, a `SyncErrorCode` for a request.
        package var reason: String
        /// The server's explanation.
        package var message: String
    }

    /// A client's latest request to this server.
    package struct ClientSeen: Sendable, Hashable {
        /// The client.
        package var clientID: ClientID
        /// Its user.
        package var user: String
        /// When it was last seen.
        package var at: Date
        /// The last mutation id a push of it reported, if it pushed.
        package var lastMutationID: MutationID?
    }

    /// Events per second over the window, and in all.
    package struct Rate: Sendable, Hashable {
        /// Every event since the server started.
        package var total: Int
        /// Events per second over the window.
        package var perSecond: Double
    }

    /// What the activity holds at one moment.
    package struct Snapshot: Sendable {
        /// The seconds the rates are averaged over.
        package var windowSeconds: Int
        /// Pushes answered.
        package var pushes: Rate
        /// Pulls answered.
        package var pulls: Rate
        /// Mutations processed (applied or rejected; replays are not counted again).
        package var mutations: Rate
        /// The latest refusals, newest first.
        package var rejections: [Rejection]
        /// The clients seen, the most recently seen first.
        package var clients: [ClientSeen]
        /// Pushes and pulls refused because their token was missing or not accepted.
        package var refusedWithoutToken: Int
    }

    private struct State {
        var pushes: RateWindow
        var pulls: RateWindow
        var mutations: RateWindow
        var rejections: RingBuffer<Rejection>
        var clients: [ClientID: ClientSeen] = [:]
        var refusedWithoutToken = 0
    }

    /// The most clients remembered.
    package let clientCapacity: Int
    private let origin = ContinuousClock.now
    private let state: Mutex<State>

    /// Makes an empty record: rates over `windowSeconds`, the latest `rejectionCapacity`
    /// refusals, and the latest `clientCapacity` clients.
    package init(windowSeconds: Int = 10, rejectionCapacity: Int = 100, clientCapacity: Int = 1_000) {
        self.clientCapacity = max(1, clientCapacity)
        state = Mutex(
            State(
                pushes: RateWindow(seconds: windowSeconds), pulls: RateWindow(seconds: windowSeconds),
                mutations: RateWindow(seconds: windowSeconds), rejections: RingBuffer(capacity: rejectionCapacity)))
    }

    private var second: Int64 { (ContinuousClock.now - origin).components.seconds }

    /// Records an answered push and the mutations it refused (a replayed refusal already in
    /// the ring is not added again).
    package func pushed(user: String, clientID: ClientID, response: PushResponse, at date: Date) {
        let second = second
        state.withLock { state in
            state.pushes.add(1, at: second)
            let refused = response.results.filter { $0.status == .rejected }
            let recent: Set<MutationID> =
                refused.isEmpty ? [] : Set(state.rejections.newestFirst.lazy.filter { $0.clientID == clientID }.compactMap(\.mutationID))
            for result in refused where !recent.contains(result.id) {
                state.rejections.append(
                    Rejection(
                        at: date, route: "push", user: user, clientID: clientID, mutationID: result.id,
                        reason: result.reason?.rawValue ?? "rejected", message: Self.bounded(result.message ?? "", 512)))
            }
            Self.see(&state, ClientSeen(clientID: clientID, user: user, at: date, lastMutationID: response.lastMutationID), capacity: clientCapacity)
        }
    }

    /// Records an answered pull.
    package func pulled(user: String, clientID: ClientID, at date: Date) {
        let second = second
        state.withLock { state in
            state.pulls.add(1, at: second)
            let known = state.clients[clientID]?.lastMutationID
            Self.see(&state, ClientSeen(clientID: clientID, user: user, at: date, lastMutationID: known), capacity: clientCapacity)
        }
    }

    /// Counts mutations a push processed now.
    package func processed(_ mutations: Int) {
        let second = second
        state.withLock { $0.mutations.add(mutations, at: second) }
    }

    /// Records a refused push or pull. A request without an accepted token is only counted
    /// (``Snapshot/refusedWithoutToken``): anyone can send one, and listing them would let
    /// anyone push the real refusals out of the ring.
    package func refused(route: String, user: String?, clientID: ClientID?, error: SyncServiceError, at date: Date) {
        state.withLock { state in
            guard let user else {
                state.refusedWithoutToken += 1
                return
            }
            state.rejections.append(
                Rejection(
                    at: date, route: route, user: Self.bounded(user, 256), clientID: clientID.map { Self.bounded($0, 256) }, mutationID: nil,
                    reason: "\(error.statusCode) \(error.error.code.rawValue)",
                    message: Self.bounded(error.error.message, 512)))
        }
    }

    /// `text`, cut to at most `bytes` bytes of UTF-8 on a character boundary, with an ellipsis
    /// when cut: what a request names is kept in memory, however long the request made it.
    static func bounded(_ text: String, _ bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var result = ""
        var count = 0
        for character in text {
            let size = character.utf8.count
            if count + size > bytes - 3 { break }
            result.append(character)
            count += size
        }
        return result + "…"
    }

    /// What the activity holds now: at most `clients` clients.
    package func snapshot(clients limit: Int) -> Snapshot {
        let second = second
        return state.withLock { state in
            func rate(_ window: RateWindow) -> Rate { Rate(total: window.total, perSecond: window.perSecond(at: second)) }
            let clients = state.clients.values.sorted { ($0.at, $0.clientID) > ($1.at, $1.clientID) }
            return Snapshot(
                windowSeconds: state.pushes.seconds, pushes: rate(state.pushes), pulls: rate(state.pulls), mutations: rate(state.mutations),
                rejections: state.rejections.newestFirst, clients: Array(clients.prefix(max(0, limit))),
                refusedWithoutToken: state.refusedWithoutToken)
        }
    }

    /// Remembers a client's latest request, forgetting the least recently seen tenth of the
    /// clients when there are more than `capacity`.
    private static func see(_ state: inout State, _ seen: ClientSeen, capacity: Int) {
        state.clients[seen.clientID] = seen
        guard state.clients.count > capacity else { return }
        let oldest = state.clients.values.sorted { $0.at < $1.at }.prefix(max(1, capacity / 10))
        for client in oldest { state.clients.removeValue(forKey: client.clientID) }
    }
}
