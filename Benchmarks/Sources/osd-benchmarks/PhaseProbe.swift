import Foundation
import GRDB
import OpenSwiftData

/// `osd-benchmarks --phases <osd store> <grdb store>`: times the fetch benchmark's three phases
/// (fetch, read every property, release) separately on both sides, to see where time goes.
enum PhaseProbe {
    static let flag = "--phases"

    static func run(osdStore: URL, grdbStore: URL) throws {
        let clock = ProbeClock()
        for round in 1...3 {
            let container = try OpenSwiftDataContender.openContainer(at: osdStore)
            var items: [BenchItem]? = nil
            let fetch = try clock.measure { items = try ModelContext(container).fetch(FetchDescriptor<BenchItem>()) }
            var checksum = Checksum()
            let read = clock.measure { checksum = OpenSwiftDataContender.fold(items ?? []) }
            let release = clock.measure { items = nil }

            let pool = try DatabasePool(path: grdbStore.path)
            var records: [BenchRecord]? = nil
            let baseFetch = try clock.measure { records = try GRDBBaseline.fetchAll(pool) }
            var baseChecksum = Checksum()
            let baseRead = clock.measure { baseChecksum = GRDBBaseline.fold(records ?? []) }
            let baseRelease = clock.measure { records = nil }
            print(
                "round \(round): osd fetch \(fetch) read \(read) release \(release) | grdb fetch \(baseFetch) read \(baseRead) release \(baseRelease) | same data: \(checksum == baseChecksum)"
            )
        }
    }
}
