import Foundation
import OpenSwiftData

/// `osd-benchmarks --prefetch-phases <store>`: times the prefetched relationship benchmark's
/// phases (open, fetch with prefetching, read the children, release) separately, next to the
/// hand-written JOIN, to see where time goes. The store is populated first if it does not exist.
enum PrefetchProbe {
    static let flag = "--prefetch-phases"

    static func run(store: URL) throws {
        if !FileManager.default.fileExists(atPath: store.path) {
            try RelationshipBenchmark.populate(store, parents: RelationshipBenchmark.parentCount, children: RelationshipBenchmark.childrenPerParent)
        }
        let clock = ProbeClock()
        for round in 1...5 {
            var container: ModelContainer? = nil
            let open = try clock.measure { container = try RelationshipBenchmark.container(store) }
            guard let container else { return }
            var parents: [BenchParent]? = nil
            // Kept until the release phase: a context that goes unloads its models' relationships.
            var context: ModelContext? = ModelContext(container)
            let fetch = try clock.measure {
                var descriptor = FetchDescriptor<BenchParent>()
                descriptor.relationshipKeyPathsForPrefetching = [\.children]
                parents = try context?.fetch(descriptor)
            }
            var count = 0
            let read = clock.measure {
                for parent in parents ?? [] {
                    for child in parent.children { count &+= child.title.utf8.count }
                }
            }
            let release = clock.measure {
                parents = nil
                context = nil
            }
            let join = try clock.measure { _ = try RelationshipBenchmark.joinedChildCount(store) }
            print("round \(round): osd open \(open) fetch \(fetch) read \(read) release \(release) | grdb join \(join) | \(count)")
        }
    }
}
