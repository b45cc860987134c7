import Foundation

/// Hybrid-logical-clock stamps: `milliseconds since 1970 << 16 | counter`, so that stamps order
/// like time where clocks agree, and still strictly increase when a clock stalls or goes back.
@_spi(Sync) public enum HybridLogicalClock {
    /// The stamp after `last` at wall-clock time `now`: the current millisecond with counter 0
    /// when that is later than `last`, else `last + 1` (the counter grows; past 65,535 it carries
    /// into the milliseconds, which keeps the order).
    public static func next(after last: UInt64, now: Date) -> UInt64 {
        let physical = stamp(milliseconds: milliseconds(of: now), counter: 0)
        return physical > last ? physical : last &+ 1
    }

    /// A stamp from its parts.
    public static func stamp(milliseconds: UInt64, counter: UInt16) -> UInt64 {
        (milliseconds << 16) | UInt64(counter)
    }

    /// The milliseconds part of a stamp.
    public static func milliseconds(of stamp: UInt64) -> UInt64 { stamp >> 16 }

    /// The counter part of a stamp.
    public static func counter(of stamp: UInt64) -> UInt16 { UInt16(truncatingIfNeeded: stamp) }

    /// Milliseconds since 1970 of a date (0 before 1970; capped below 2^47 so a stamp stays
    /// below 2^63 and fits SQLite's signed integers).
    static func milliseconds(of date: Date) -> UInt64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard value > 0 else { return 0 }
        return value >= Double(UInt64(1) << 47) ? (UInt64(1) << 47) - 1 : UInt64(value)
    }
}
