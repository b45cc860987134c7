import Foundation

/// One implementation under test: OpenSwiftData, or the hand-written GRDB baseline.
///
/// Every timed operation opens the store at `url` (not timed), runs the measured part once and
/// returns its duration. The store files are created and removed by the caller.
protocol Contender {
    /// The short name passed to `--memory-child`.
    static var key: String { get }

    /// Creates a store at `url` holding `count` records built from ``SampleValues`` (not timed).
    static func populate(at url: URL, count: Int) throws

    /// Builds `count` records and writes them to a new, empty store at `url` in one transaction.
    static func timeInsert(count: Int, at url: URL) throws -> Duration

    /// Fetches every record of the store at `url` and reads every property.
    static func timeFetch(at url: URL) throws -> (elapsed: Duration, checksum: Checksum)

    /// Changes two properties of every `step`-th record and saves, after an untimed fetch of all.
    static func timeUpdate(every step: Int, at url: URL) throws -> Duration

    /// Deletes every `step`-th record and saves, after an untimed fetch of all.
    static func timeDelete(every step: Int, at url: URL) throws -> Duration

    /// Fetches every record and reads every property, untimed: the work of a memory child.
    static func readAll(at url: URL) throws -> (count: Int, checksum: Checksum)
}

/// A check of a benchmark's result that failed.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Contender {
    /// Throws unless `actual` equals `expected`.
    static func expect(_ actual: Int, _ expected: Int, _ what: String) throws {
        guard actual == expected else {
            throw BenchmarkError("\(key): expected \(expected) \(what), found \(actual)")
        }
    }
}
