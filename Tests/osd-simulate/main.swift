// The deterministic sync simulator's command:
//   swift run -c release osd-simulate --seeds 10000 [--first-seed S] [--steps N]
//   swift run -c release osd-simulate --seed S        (replays one schedule, printing its trace)
// The last line of a run is `N passed, M failed`; each failing seed is printed above it with
// the command that replays it.
import Foundation
import OpenSwiftDataSimulator

#if canImport(Glibc)
import Glibc
#endif

// Swift seeds its hashing per process; the simulator's schedules are the same in every process
// only with deterministic hashing, so the command restarts itself with it.
if ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"] == nil {
    setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
    let arguments = CommandLine.arguments
    var pointers: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
    pointers.append(nil)
    // `execv` only returns on failure; the process then goes on without deterministic hashing.
    execv("/proc/self/exe", pointers)
}

func value(_ flag: String) -> UInt64? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return UInt64(arguments[index + 1])
}

func faults() -> Set<SimFault> {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: "--faults"), index + 1 < arguments.count else { return Set(SimFault.allCases) }
    let names = arguments[index + 1].split(separator: ",").map(String.init)
    return Set(names.compactMap(SimFault.init(rawValue:)))
}

let simulation = Simulation(steps: value("--steps").map(Int.init) ?? 60, faults: faults())

if let seed = value("--seed") {
    let result = await simulation.run(seed: seed)
    for line in result.trace { print(line) }
    for failure in result.failures { print("FAILED: \(failure)") }
    print(result.passed ? "seed \(seed) passed" : "seed \(seed) failed")
    exit(result.passed ? 0 : 1)
}

let count = value("--seeds") ?? 100
let first = value("--first-seed") ?? 1
var passed = 0
var failed = 0
var totals: [String: Int] = [:]
let start = ContinuousClock.now
for seed in first..<(first + count) {
    let result = await simulation.run(seed: seed)
    for (key, value) in result.counts { totals[key, default: 0] += value }
    if result.passed {
        passed += 1
    } else {
        failed += 1
        print("seed \(seed) FAILED: \(result.failures.first ?? "")")
        print("  replay: \(result.replayCommand)")
    }
}
let elapsed = ContinuousClock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print("counts:")
for key in totals.keys.sorted() { print("  \(key): \(totals[key] ?? 0)") }
print(String(format: "%.1f schedules/s (%d schedules in %.1f s)", Double(count) / max(seconds, 0.001), Int(count), seconds))
print("\(passed) passed, \(failed) failed")
exit(failed == 0 ? 0 : 1)
