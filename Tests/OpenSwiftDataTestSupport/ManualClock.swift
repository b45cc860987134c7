import Foundation

/// A clock the tests move by hand, shared by whatever reads it (a capture configuration's
/// `clock`, a server's `now`, the engine's clock).
/// `@unchecked Sendable`: its only state, `current`, is read and written under `lock`.
public final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    /// A clock at `start`.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }

    /// The time it shows; setting it moves the clock.
    public var now: Date {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }

    /// The time it shows.
    public var date: Date { now }

    /// Moves the clock forward by `seconds`.
    public func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }

    /// The clock as a closure, for APIs that take one (`now:`).
    public var clock: @Sendable () -> Date { { self.now } }
}
