import Foundation

/// A hybrid-logical-clock time: physical milliseconds since 1970 in the high bits (at most 47 of
/// them, so that a stamp fits the signed 64-bit integers SQLite and PostgreSQL store), a logical
/// counter in the low 16. Stamps order the writes of all devices consistently with
/// causality, and stay close to wall time.
///
/// On the wire it is a decimal string (`"118233602457108480"`), so that clients whose numbers
/// are doubles do not round it.
public struct HLCTimestamp: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The packed value: `milliseconds << 16 | counter`.
    public var rawValue: UInt64

    /// Makes a stamp from its packed value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Makes a stamp from its parts; milliseconds beyond ``maxMilliseconds`` are clamped.
    public init(milliseconds: UInt64, counter: UInt16) {
        self.rawValue = (min(milliseconds, HLCTimestamp.maxMilliseconds) << 16) | UInt64(counter)
    }

    /// The largest physical time a stamp holds (year 6429): 47 bits, so that every stamp is
    /// below 2^63 and keeps its order as a signed 64-bit integer.
    public static let maxMilliseconds: UInt64 = (1 << 47) - 1

    /// Milliseconds since 1970 of a date, as a stamp's physical part: 0 before 1970, clamped to
    /// ``maxMilliseconds``.
    public static func milliseconds(of date: Date) -> UInt64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard value > 0 else { return 0 }
        return value >= Double(maxMilliseconds) ? maxMilliseconds : UInt64(value)
    }

    /// The zero stamp, before every other.
    public static let zero = HLCTimestamp(rawValue: 0)

    /// The physical part, in milliseconds since 1970.
    public var milliseconds: UInt64 { rawValue >> 16 }

    /// The logical part.
    public var counter: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    public static func < (lhs: HLCTimestamp, rhs: HLCTimestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = UInt64(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "an HLC timestamp is a decimal string of an unsigned 64-bit integer, not \(text.debugDescription)")
        }
        rawValue = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(rawValue))
    }

    public var description: String { "\(milliseconds).\(counter)" }
}

/// A hybrid logical clock (Kulkarni et al.): `now()` never goes backwards and never repeats,
/// and `observe(_:)` moves it past a stamp received from elsewhere. The physical time comes
/// from an injected function, so that tests and the simulator drive it.
///
/// A value type: whoever owns it persists ``last`` where monotonicity across restarts matters
/// (the client in its store, the server in its database).
public struct HybridLogicalClock: Sendable {
    /// The last stamp this clock issued or observed.
    public private(set) var last: HLCTimestamp

    /// How far ahead of the local wall clock an observed stamp may be before it is clamped to
    /// it, so that one device whose clock says 2099 cannot push every clock into the future.
    public var maximumDrift: UInt64

    /// The default ``maximumDrift``: one minute.
    public static let defaultMaximumDrift: UInt64 = 60_000

    /// Makes a clock that continues after `last`.
    public init(last: HLCTimestamp = .zero, maximumDrift milliseconds: UInt64 = HybridLogicalClock.defaultMaximumDrift) {
        self.last = last
        self.maximumDrift = milliseconds
    }

    /// A new stamp, later than every stamp issued or observed so far.
    public mutating func now(wallMilliseconds: UInt64) -> HLCTimestamp {
        let physical = min(wallMilliseconds, HLCTimestamp.maxMilliseconds)
        if physical > last.milliseconds {
            last = HLCTimestamp(milliseconds: physical, counter: 0)
        } else {
            last = HLCTimestamp(rawValue: last.rawValue &+ 1)
        }
        return last
    }

    /// Moves the clock past a stamp received from another node, limited to `maximumDrift`
    /// ahead of the local wall time. Returns the stamp it accepted (the received one, or the
    /// clamped one).
    @discardableResult
    public mutating func observe(_ remote: HLCTimestamp, wallMilliseconds: UInt64) -> HLCTimestamp {
        let ceiling = HLCTimestamp(
            milliseconds: min(wallMilliseconds, HLCTimestamp.maxMilliseconds) + min(maximumDrift, HLCTimestamp.maxMilliseconds), counter: UInt16.max)
        let accepted = min(remote, ceiling)
        if accepted > last { last = accepted }
        return accepted
    }
}
