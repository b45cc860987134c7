import Foundation

/// The durations of repeated runs of one operation on one side.
struct Timings {
    private(set) var runs: [Duration] = []

    mutating func append(_ duration: Duration) { runs.append(duration) }

    /// The median run (the middle one of an odd number of runs).
    var median: Duration {
        let sorted = runs.sorted()
        return sorted.isEmpty ? .zero : sorted[sorted.count / 2]
    }
}

extension Duration {
    /// The duration in milliseconds.
    var milliseconds: Double {
        Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15
    }

    /// `123.4 ms`.
    var formatted: String { String(format: "%.1f ms", milliseconds) }
}

/// Runs `body` once and returns how long it took and what it returned.
func timed<T>(_ body: () throws -> T) throws -> (elapsed: Duration, value: T) {
    let clock = ContinuousClock()
    var value: T?
    let elapsed = try clock.measure { value = try body() }
    guard let value else { throw BenchmarkError("no result") }
    return (elapsed, value)
}
