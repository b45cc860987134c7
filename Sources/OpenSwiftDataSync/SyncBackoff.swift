/// Capped exponential backoff with full jitter: the n-th consecutive failure waits a random
/// time in `[0, min(cap, base · 2ⁿ⁻¹)]`, drawn from the engine's seeded generator.
public struct SyncBackoff: Sendable, Hashable {
    /// The first delay's ceiling.
    public var base: Duration
    /// The largest delay.
    public var cap: Duration

    /// Makes a backoff policy.
    public init(base: Duration = .milliseconds(500), cap: Duration = .seconds(60)) {
        self.base = base
        self.cap = cap
    }

    /// The delay before retry number `attempt` (1 for the first retry), in seconds.
    package func delay(attempt: Int, using random: inout SyncRandom) -> Double {
        let unit = Double(random.next() >> 11) / Double(1 << 53)
        return ceiling(attempt: attempt) * unit
    }

    /// The longest delay before retry number `attempt`, in seconds: `min(cap, base · 2ⁿ⁻¹)`.
    package func ceiling(attempt: Int) -> Double {
        let exponent = Double(min(max(attempt - 1, 0), 30))
        return min(cap.secondsValue, base.secondsValue * pow2(exponent))
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

extension Duration {
    /// The duration in seconds, as the engine's clock sleeps.
    var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
