/// Events counted per second over a sliding window of whole seconds, and in all.
struct RateWindow: Sendable {
    /// The seconds the rate is averaged over.
    let seconds: Int
    /// One bucket per second of the window, indexed by the second modulo ``seconds``.
    private var buckets: [(second: Int64, count: Int)]
    /// Every event counted since the window was made.
    private(set) var total = 0

    /// Makes an empty window of `seconds` seconds (at least one).
    init(seconds: Int) {
        self.seconds = max(1, seconds)
        buckets = Array(repeating: (Int64.min, 0), count: self.seconds)
    }

    /// Counts `count` events in the second `second`.
    mutating func add(_ count: Int, at second: Int64) {
        guard count > 0 else { return }
        total += count
        let index = Int(second.magnitude % UInt64(seconds))
        if buckets[index].second == second {
            buckets[index].count += count
        } else {
            buckets[index] = (second, count)
        }
    }

    /// The events per second over the window that ends with the second `second`.
    func perSecond(at second: Int64) -> Double {
        let counted = buckets.reduce(0) { sum, bucket in
            bucket.second <= second && bucket.second > second - Int64(seconds) ? sum + bucket.count : sum
        }
        return Double(counted) / Double(seconds)
    }
}
