import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Peak memory of fetching a store: each side runs in a fresh child process (this executable,
/// relaunched with `--memory-child <key> <store path>`), so that neither inherits the other's heap.
///
/// On Linux, a process's `ru_maxrss` starts at the RSS of the process that launched it (the kernel
/// carries the high-water mark across `exec`), so the probe must run while this process is still
/// small: the stores are populated by child processes too (`--prepare-store <key> <path>`), and
/// the probe runs before the timed benchmarks.
enum MemoryProbe {
    static let childFlag = "--memory-child"
    static let prepareFlag = "--prepare-store"

    /// What a child reports: its peak RSS when it started and after the fetch.
    struct Report {
        let baselineKB: Int
        let peakKB: Int
        let count: Int
        let checksum: String

        /// The growth of the peak RSS caused by opening the store and fetching.
        var growthKB: Int { peakKB - baselineKB }
    }

    /// The process's peak resident set size so far, in kilobytes.
    static func peakRSSKilobytes() -> Int {
        var usage = rusage()
        #if os(Linux)
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 else { return -1 }
        return Int(usage.ru_maxrss)  // kilobytes on Linux
        #else
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return -1 }
        return Int(usage.ru_maxrss) / 1_024  // bytes on Darwin
        #endif
    }

    /// The body of a memory child: fetch, read everything, print one report line.
    static func runChild(_ contender: any Contender.Type, storeAt url: URL) throws {
        let baseline = peakRSSKilobytes()
        let result = try contender.readAll(at: url)
        let peak = peakRSSKilobytes()
        print("baseline_kb=\(baseline) peak_kb=\(peak) count=\(result.count) checksum=\(result.checksum)")
    }

    /// Populates a store of `count` records for `contender` at `url` in a child process.
    static func prepareStore(for contender: any Contender.Type, at url: URL, count: Int) throws {
        _ = try launchSelf([prepareFlag, contender.key, url.path, String(count)])
    }

    /// Launches a memory child for `contender` on the store at `url` and parses its report.
    static func measure(_ contender: any Contender.Type, storeAt url: URL) throws -> Report {
        let text = try launchSelf([childFlag, contender.key, url.path])
        let fields = fields(of: text)
        guard let baseline = fields["baseline_kb"].flatMap({ Int($0) }),
            let peak = fields["peak_kb"].flatMap({ Int($0) }),
            let count = fields["count"].flatMap({ Int($0) }),
            let checksum = fields["checksum"]
        else {
            throw BenchmarkError("memory child \(contender.key) printed an unreadable report: \(text)")
        }
        return Report(baselineKB: baseline, peakKB: peak, count: count, checksum: checksum)
    }

    /// The `key=value` pairs of a child's report line.
    static func fields(of report: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in report.split(whereSeparator: \.isWhitespace) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    /// Runs this executable with `arguments` and returns what it printed.
    static func launchSelf(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw BenchmarkError("child \(arguments.joined(separator: " ")) exited with status \(process.terminationStatus): \(text)")
        }
        return text
    }
}
