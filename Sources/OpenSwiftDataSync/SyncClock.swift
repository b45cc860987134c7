import Foundation

/// The engine's time: the wall clock that stamps saves and status, and sleeping between retries.
/// The engine never reads `Date()` or calls `Task.sleep` itself, so a simulator drives it on a
/// virtual clock. A test and simulator knob: `package`, not part of the library's API.
package protocol SyncClock: Sendable {
    /// The current wall-clock time.
    func now() -> Date
    /// Suspends for `seconds` (or until the task is cancelled, which throws).
    func sleep(seconds: Double) async throws
}

/// The system clock: `Date()` and `Task.sleep`.
package struct SystemSyncClock: SyncClock {
    /// Makes the system clock.
    package init() {}

    /// The current time.
    package func now() -> Date { Date() }

    /// Sleeps on the continuous clock.
    package func sleep(seconds: Double) async throws {
        try await Task.sleep(for: .nanoseconds(Int64(max(0, seconds) * 1_000_000_000)))
    }
}
