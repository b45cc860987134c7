import Foundation
import OpenSwiftDataSyncProtocol

/// The connected live clients, by user: the core's events become `LiveMessage`s for the
/// connections of the users who may read what changed.
public actor LiveHub {
    private var connections: [UUID: (user: String, since: Date, continuation: AsyncStream<LiveMessage>.Continuation)] = [:]
    private var closed = false
    private let onCount: @Sendable (Int) -> Void

    /// Makes a hub; `onCount` hears the number of connections after each change.
    package init(onCount: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.onCount = onCount
    }

    /// Registers a connection of `user`; its messages arrive on the stream, starting with
    /// `hello`. The stream ends when the hub shuts down.
    package func connect(user: String) -> (UUID, AsyncStream<LiveMessage>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<LiveMessage>.makeStream(bufferingPolicy: .bufferingNewest(64))
        continuation.yield(LiveMessage(type: .hello))
        if closed {
            continuation.finish()
        } else {
            connections[id] = (user, Date(), continuation)
        }
        onCount(connections.count)
        return (id, stream)
    }

    /// Removes a connection.
    package func disconnect(_ id: UUID) {
        connections.removeValue(forKey: id)?.continuation.finish()
        onCount(connections.count)
    }

    /// The number of connections.
    public var count: Int { connections.count }

    /// The connections by user: the `limit` users with the most connections (then by name),
    /// each with their count and when the oldest one opened, and how many users there are.
    package func byUser(limit: Int) -> (users: [LiveUser], userCount: Int) {
        var users: [String: LiveUser] = [:]
        for connection in connections.values {
            var entry = users[connection.user] ?? LiveUser(user: connection.user, connections: 0, since: connection.since)
            entry.connections += 1
            entry.since = min(entry.since, connection.since)
            users[connection.user] = entry
        }
        let sorted = users.values.sorted { ($0.connections, $1.user) > ($1.connections, $0.user) }
        return (Array(sorted.prefix(max(0, limit))), users.count)
    }

    /// Delivers an event of the core.
    package func publish(_ event: SyncServiceEvent) {
        switch event {
        case .changed(let scopes, let version, let readers):
            let message = LiveMessage(type: .changed, scopes: scopes, version: version)
            for connection in connections.values where readers.contains(connection.user) {
                connection.continuation.yield(message)
            }
        case .grantsChanged(let users):
            for connection in connections.values where users.contains(connection.user) {
                connection.continuation.yield(LiveMessage(type: .grantsChanged))
            }
        }
    }

    /// Sends `hello` ("pull now") to every connection: after an epoch rotation, so that every
    /// live device learns of it at once rather than at its next change.
    package func greetAll() {
        for connection in connections.values { connection.continuation.yield(LiveMessage(type: .hello)) }
    }

    /// Ends every connection's stream (graceful shutdown): each live handler then closes its
    /// socket with `1001 going away` and disconnects, so ``count`` falls to zero as they do.
    /// Later connections get `hello` and are closed at once.
    public func shutdown() {
        closed = true
        for connection in connections.values { connection.continuation.finish() }
    }
}

/// A user's open live channels.
package struct LiveUser: Sendable, Hashable {
    /// The user.
    package var user: String
    /// How many live channels the user has open.
    package var connections: Int
    /// When the oldest of them opened.
    package var since: Date
}
