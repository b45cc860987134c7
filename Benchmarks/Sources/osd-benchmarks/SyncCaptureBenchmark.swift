import Foundation
import OpenSwiftData

/// The cost of sync capture (issue 18), OpenSwiftData against itself:
///
/// - `osd-benchmarks --sync-capture`: 100,000 models inserted in one save into a new store,
///   capture off against capture on, median of five runs each, alternating.
/// - `osd-benchmarks --sync-apply`: the same 100,000 models as remote inserts (taken from another
///   store's sync log, as a server would relay them) applied in pages of 1,000 through
///   `applyRemoteChanges`, against inserting the same models locally, in saves of 1,000 and in
///   one save, all on capture-enabled stores; median of three runs each.
enum SyncCaptureBenchmark {
    static let count = 100_000
    static let page = 1_000

    static func runCapture(in workbench: Workbench) throws {
        var off = Timings()
        var on = Timings()
        for run in 1...5 {
            for capture in [false, true] {
                let url = workbench.freshURL(for: OpenSwiftDataContender.self)
                defer { workbench.remove(url) }
                let container = try container(at: url, capture: capture)
                let context = ModelContext(container)
                let elapsed = try ContinuousClock().measure {
                    for index in 0..<count { context.insert(BenchItem(SampleValues(index: index))) }
                    try context.save()
                }
                if capture {
                    try OpenSwiftDataContender.expect(try container.syncLogEntries().first?.changes.count ?? 0, count, "captured inserts")
                    on.append(elapsed)
                } else {
                    off.append(elapsed)
                }
                print("insert run \(run)/5 capture \(capture ? "on " : "off") \(elapsed.formatted)")
            }
        }
        print(
            "insert \(grouped(count)) models, one save: capture off \(off.median.formatted), on \(on.median.formatted), ratio \(String(format: "%.2f", on.median / off.median))"
        )
    }

    static func runApply(in workbench: Workbench) throws {
        // The remote batch: another device's log of the same inserts.
        let source = workbench.freshURL(for: OpenSwiftDataContender.self)
        defer { workbench.remove(source) }
        let origin = try container(at: source, capture: true)
        let originContext = ModelContext(origin)
        for index in 0..<count { originContext.insert(BenchItem(SampleValues(index: index))) }
        try originContext.save()
        var version: Int64 = 0
        let remote = try origin.syncLogEntries().flatMap(\.changes).map { change -> RemoteRecordChange in
            version += 1
            return .upsert(change.entity, recordID: change.recordID, serverVersion: version, scope: change.scope, fields: change.fields)
        }
        try OpenSwiftDataContender.expect(remote.count, count, "remote changes")

        var apply = Timings()
        var paged = Timings()
        var single = Timings()
        for run in 1...3 {
            do {
                let url = workbench.freshURL(for: OpenSwiftDataContender.self)
                defer { workbench.remove(url) }
                let target = try container(at: url, capture: true)
                let elapsed = try ContinuousClock().measure {
                    for start in stride(from: 0, to: remote.count, by: page) {
                        try target.applyRemoteChanges(Array(remote[start..<min(start + page, remote.count)]))
                    }
                }
                try OpenSwiftDataContender.expect(try ModelContext(target).fetchCount(FetchDescriptor<BenchItem>()), count, "applied models")
                try OpenSwiftDataContender.expect(try target.syncLogCount(), 0, "echoed entries")
                apply.append(elapsed)
                print("apply run \(run)/3 pages of \(page) \(elapsed.formatted)")
            }
            for pageSize in [page, count] {
                let url = workbench.freshURL(for: OpenSwiftDataContender.self)
                defer { workbench.remove(url) }
                let local = try container(at: url, capture: true)
                let context = ModelContext(local)
                let elapsed = try ContinuousClock().measure {
                    for start in stride(from: 0, to: count, by: pageSize) {
                        for index in start..<min(start + pageSize, count) { context.insert(BenchItem(SampleValues(index: index))) }
                        try context.save()
                    }
                }
                if pageSize == page { paged.append(elapsed) } else { single.append(elapsed) }
                print("local run \(run)/3 saves of \(grouped(pageSize)) \(elapsed.formatted)")
            }
        }
        print(
            "apply \(grouped(count)) remote inserts in pages of \(grouped(page)): \(apply.median.formatted); local inserts in saves of \(grouped(page)): \(paged.median.formatted), ratio \(String(format: "%.2f", apply.median / paged.median)); in one save: \(single.median.formatted), ratio \(String(format: "%.2f", apply.median / single.median))"
        )
    }

    private static func container(at url: URL, capture: Bool) throws -> ModelContainer {
        let container = try OpenSwiftDataContender.openContainer(at: url)
        if capture { try container.enableSyncCapture(SyncCaptureConfiguration(BenchItem.self)) }
        return container
    }
}
