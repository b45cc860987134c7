import Foundation
import OpenSwiftDataSync

/// The simulated clock shared by the server and every client: time moves only when the
/// simulator advances it; sleeping returns at once (the simulator never starts the engine's
/// background tasks, so nothing waits on it).
///
/// `@unchecked Sendable`: `milliseconds` is only read and written while holding `lock`.
final class SimClock: SyncClock, @unchecked Sendable {
    private let lock = NSLock()
    private var milliseconds: Int64 = 1_800_000_000_000

    func now() -> Date { Date(timeIntervalSince1970: Double(lock.withLock { milliseconds }) / 1000) }

    /// Moves time forward.
    func advance(milliseconds delta: Int64) { lock.withLock { milliseconds += max(0, delta) } }

    func sleep(seconds: Double) async throws {}
}
