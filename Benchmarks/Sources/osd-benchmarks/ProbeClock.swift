import Foundation

/// The clock of the phase probes: wall time, or with `OSD_PROBE_CPU=1` in the environment the
/// CPU time of the calling thread (steadier on a machine busy with other work).
struct ProbeClock {
    private let cpu = ProcessInfo.processInfo.environment["OSD_PROBE_CPU"] == "1"

    /// How long `body` took.
    func measure(_ body: () throws -> Void) rethrows -> Duration {
        guard cpu else { return try ContinuousClock().measure(body) }
        let start = Self.threadCPUTime()
        try body()
        return Self.threadCPUTime() - start
    }

    private static func threadCPUTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
