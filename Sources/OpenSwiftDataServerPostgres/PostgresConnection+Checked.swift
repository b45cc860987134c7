import Dispatch
import Logging
import OpenSwiftDataServer
import PostgresNIO
import Synchronization

/// The statements of one transaction, each released with `503 unavailable` if its connection
/// closes under it.
///
/// PostgresNIO hands a query to the connection's channel without a promise for the write: on a
/// channel that has closed (the database stopped, the pool not yet told), the write is dropped
/// and the query waits forever, and cancelling it does not end it. So each statement runs in a
/// task of its own, and the caller waits on a continuation that either the statement or
/// ``fail()`` resumes: the transaction's watcher calls `fail()` once it sees the connection
/// closed, and the request is answered. A statement abandoned that way stays parked on its
/// dropped write, holding nothing but its own memory.
final class TransactionStatements: Sendable {
    private struct State {
        var waiting: [Int: @Sendable (any Error) -> Void] = [:]
        var next = 0
        var failed = false
        var finished = false
        var connection: PostgresConnection?
    }

    private let state = Mutex(State())

    /// The statements of the transaction the current task runs, if it runs one.
    @TaskLocal static var current: TransactionStatements?

    static let closed = SyncServiceError(503, .unavailable, "the database cannot be reached: its connection closed")

    /// The connection the transaction got from the pool.
    var connection: PostgresConnection? {
        get { state.withLock { $0.connection } }
        set { state.withLock { $0.connection = newValue } }
    }

    /// Whether the transaction has ended (or never got its connection).
    var finished: Bool {
        get { state.withLock { $0.finished } }
        set { state.withLock { $0.finished = newValue } }
    }

    /// Waits `duration`, or less when the task is cancelled during the wait; a task already
    /// cancelled (for which `Task.sleep` returns at once) waits on a timer instead, so a loop
    /// of pauses never spins.
    static func pause(_ duration: Duration) async {
        guard Task.isCancelled else {
            try? await Task.sleep(for: duration)
            return
        }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { continuation.resume() }
        }
    }

    /// Whether the connection has closed.
    var connectionClosed: Bool { connection?.isClosed ?? false }

    /// Runs `operation` (one statement, read to its end) in a task of its own, released by
    /// ``fail()``.
    func run<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
            let id: Int? = state.withLock { state in
                guard !state.failed else { return nil }
                let id = state.next
                state.next += 1
                state.waiting[id] = { continuation.resume(throwing: $0) }
                return id
            }
            guard let id else {
                continuation.resume(throwing: Self.closed)
                return
            }
            Task {
                let result: Result<Value, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                // Whichever removes the entry resumes the continuation: this task or `fail()`.
                if state.withLock({ $0.waiting.removeValue(forKey: id) }) != nil { continuation.resume(with: result) }
            }
        }
    }

    /// Releases every statement still waiting, and refuses those that come after, with
    /// `503 unavailable`.
    func fail() {
        let waiting = state.withLock { state in
            state.failed = true
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for release in waiting { release(Self.closed) }
    }
}

extension PostgresConnection {
    /// `query(_:logger:)`, refused with `503 unavailable` on a connection that has closed, and
    /// inside a transaction released if the connection closes while it waits
    /// (``TransactionStatements``).
    @discardableResult
    func checkedQuery(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        guard !isClosed else { throw TransactionStatements.closed }
        guard let statements = TransactionStatements.current else { return try await self.query(query, logger: logger) }
        return try await statements.run { try await self.query(query, logger: logger) }
    }

    /// The rows of a prepared statement, read to the end, with the same guarantees as
    /// ``checkedQuery(_:logger:)``: a prepared statement's write is dropped on a closed channel
    /// just as a query's is.
    @discardableResult
    func checkedRows<Statement: PostgresPreparedStatement & Sendable>(
        _ statement: Statement, logger: Logger
    ) async throws -> [Statement.Row] where Statement.Row: Sendable {
        guard !isClosed else { throw TransactionStatements.closed }
        let rows: @Sendable () async throws -> [Statement.Row] = {
            var rows: [Statement.Row] = []
            for try await row in try await self.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
        guard let statements = TransactionStatements.current else { return try await rows() }
        return try await statements.run(rows)
    }
}
