/// Capped exponential backoff with full jitter: the n-th consecutive failure waits a random
/// time in `[0, min(cap, base · 2ⁿ)]`, drawn from the engine's seeded generator.
public struct SyncBackoff: Sendable, Hashable {
    /// The first delay's ceiling, in seconds.
    public var base: Double
    /// The largest delay, in seconds.
    public var cap: Double

    /// Makes a backoff policy.
    public init(base: Double = 0.5, cap: Double = 60) {
        self.base = base
        self.cap = cap
    }

    /// The delay before retry number `attempt` (1 for the first retry).
    public func delay(attempt: Int, using random: inout SyncRandom) -> Double {
        let exponent = Double(min(max(attempt - 1, 0), 30))
        let ceiling = min(cap, base * pow2(exponent))
        let unit = Double(random.next() >> 11) / Double(1 << 53)
        return ceiling * unit
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        var remaining = Int(exponent)
        while remaining > 0 {
            value *= 2
            remaining -= 1
        }
        return value
    }
}
