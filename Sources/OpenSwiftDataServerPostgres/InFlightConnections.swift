import PostgresNIO
import Synchronization

/// The connections that transactions are using, so that an outage noticed anywhere ends them
/// all.
///
/// A database that stops answering without closing its connections (a network that drops
/// packets, a host that froze) leaves a query waiting for as long as TCP takes to give up. Once
/// an outage is noticed (a transaction fails with an outage error, a request finds no
/// connection within the connect timeout, or `/ready` gets no answer), every registered
/// connection is closed: the queries waiting on them fail, the transactions map that to
/// `503 unavailable`, and the clients retry later, which the protocol makes safe (a resent
/// mutation is recognised and answered, never applied twice).
final class InFlightConnections: Sendable {
    private let connections = Mutex<[ObjectIdentifier: PostgresConnection]>([:])

    /// Registers a connection a transaction starts using.
    func register(_ connection: PostgresConnection) {
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
    }

    /// Forgets a connection whose transaction has ended.
    func unregister(_ connection: PostgresConnection) {
        _ = connections.withLock { $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// Closes every registered connection (their pending queries fail); the pool replaces them.
    func closeAll() {
        let open = connections.withLock { Array($0.values) }
        for connection in open {
            // The future reports when the channel has closed; nothing waits for it.
            let _: EventLoopFuture<Void> = connection.close()
        }
    }

    /// How many connections are registered.
    var count: Int { connections.withLock { $0.count } }
}
