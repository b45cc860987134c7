/// A counter's value or a contribution to it: a 64-bit integer or a double, never mixed.
///
/// Integer arithmetic is checked: a sum or a difference that does not fit 64 bits is nil, so a
/// save that would overflow a counter fails instead of wrapping, and a server refuses it.
public enum CounterValue: Hashable, Sendable, CustomStringConvertible {
    /// An integer counter (`Int`, `Int64`), held as 64 bits.
    case int(Int64)
    /// A floating-point counter (`Double`, `Float`).
    case double(Double)

    /// The zero of the same kind as `self`.
    public var zero: CounterValue {
        switch self {
        case .int: .int(0)
        case .double: .double(0)
        }
    }

    /// Whether it is zero (a contribution of zero changes nothing and is not sent).
    public var isZero: Bool {
        switch self {
        case let .int(value): value == 0
        case let .double(value): value == 0
        }
    }

    /// `self + other`, or nil when the kinds differ or an integer sum overflows.
    public func adding(_ other: CounterValue) -> CounterValue? {
        switch (self, other) {
        case let (.int(lhs), .int(rhs)):
            let (sum, overflow) = lhs.addingReportingOverflow(rhs)
            return overflow ? nil : .int(sum)
        case let (.double(lhs), .double(rhs)):
            return .double(lhs + rhs)
        default:
            return nil
        }
    }

    /// `self - other`: the contribution that takes `other` to `self`. Nil when the kinds differ
    /// or an integer difference overflows.
    public func subtracting(_ other: CounterValue) -> CounterValue? {
        switch (self, other) {
        case let (.int(lhs), .int(rhs)):
            let (difference, overflow) = lhs.subtractingReportingOverflow(rhs)
            return overflow ? nil : .int(difference)
        case let (.double(lhs), .double(rhs)):
            return .double(lhs - rhs)
        default:
            return nil
        }
    }

    /// The value negated (the contribution that undoes this one), or nil for `Int64.min`.
    public var negated: CounterValue? { zero.subtracting(self) }

    public var description: String {
        switch self {
        case let .int(value): "\(value)"
        case let .double(value): "\(value)"
        }
    }
}
