// The cost of the server's delete rules, through the core over the SQLite storage (no HTTP):
//   swift run -c release osd-server-benchmarks --delete-rules [items, default 5,000: a push
//   holds at most 10,000 changes]
// Each figure is the median of 5 rounds, each on a fresh database, in process CPU time (the
// core runs in this process; on a shared machine wall time mostly measures the wait for a
// core), with its yardstick in the
// same run: item inserts that set a reference (indexed) against inserts of the same items
// without one, under a cascade rule against no rule; and a list's delete with its items
// deleted in the same mutation (what a client that holds them sends) with the cascade rule
// against no rule, and with the server finding the items by cascade alone.
import Foundation
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol

private func deleteRuleSchema(_ rule: SyncDeleteRule?) -> SchemaDescriptor {
    SchemaDescriptor(entities: [
        EntityDescriptor(name: "List", fields: [FieldDescriptor(name: "name", kind: .string, optional: true)]),
        EntityDescriptor(
            name: "Item",
            fields: [
                FieldDescriptor(name: "title", kind: .string, optional: true),
                FieldDescriptor(name: "list", kind: .reference, optional: true, destination: "List", deleteRule: rule),
            ]),
    ])
}

/// One round on a fresh database: inserts a list and `items` items (in batches of 500
/// mutations of one item), then deletes the list, with or without the items' deletes in the
/// same mutation. Returns the CPU milliseconds of the inserts and of the delete.
private func deleteRuleRound(
    items: Int, rule: SyncDeleteRule?, reference: Bool, explicitDeletes: Bool
) async throws -> (insert: Double, delete: Double) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-delete-rules-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let storage = try SQLiteSyncStorage(path: directory.appendingPathComponent("bench.sqlite").path)
    let service = try await SyncService(storage: storage, now: { Date() })
    let schema = deleteRuleSchema(rule)
    let scope = ScopeID.user("alice")
    let base: UInt64 = 1_790_000_000_000
    var id: MutationID = 1
    func next(_ changes: [RecordChange]) -> Mutation {
        defer { id += 1 }
        return Mutation(id: id, stamp: HLCTimestamp(milliseconds: base + UInt64(id), counter: 0), changes: changes)
    }
    _ = try await service.push(
        user: "alice",
        request: PushRequest(
            clientID: "c1",
            mutations: [next([RecordChange(op: .insert, entity: "List", recordID: "l1", scope: scope, fields: ["name": .string("list")])])],
            schema: schema))
    let insertStart = cpuMilliseconds()
    var done = 0
    while done < items {
        let count = min(500, items - done)
        let batch = (done..<done + count).map { index in
            var fields: [SyncName: SyncValue] = ["title": .string("item \(index)")]
            if reference { fields["list"] = .reference("l1") }
            return next([RecordChange(op: .insert, entity: "Item", recordID: "i\(index)", scope: scope, fields: fields)])
        }
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: batch))
        done += count
    }
    let insert = cpuMilliseconds() - insertStart
    var changes = [RecordChange(op: .delete, entity: "List", recordID: "l1", scope: scope)]
    if explicitDeletes {
        changes += (0..<items).map { RecordChange(op: .delete, entity: "Item", recordID: "i\($0)", scope: scope) }
    }
    let deleteStart = cpuMilliseconds()
    let response = try await service.push(user: "alice", request: PushRequest(clientID: "c1", mutations: [next(changes)]))
    let delete = cpuMilliseconds() - deleteStart
    guard response.results.allSatisfy({ $0.status == .applied }) else { throw SyncServiceError(500, .internalError, "the delete was refused") }
    try await storage.close()
    return (insert, delete)
}

func deleteRuleBenchmark(items: Int) async throws {
    let rounds = 5
    func median(_ values: [Double]) -> Double { percentile(values, 0.5) }
    var figures: [String: (insert: [Double], delete: [Double])] = [:]
    let variants: [(String, SyncDeleteRule?, Bool, Bool)] = [
        ("no reference, no rule", nil, false, true),
        ("reference, no rule", nil, true, true),
        ("reference, cascade", .cascade, true, true),
        ("reference, cascade, list delete only", .cascade, true, false),
    ]
    // Rounds interleave the variants, so that load from other work falls on all of them.
    for _ in 0..<rounds {
        for (name, rule, reference, explicit) in variants {
            let round = try await deleteRuleRound(items: items, rule: rule, reference: reference, explicitDeletes: explicit)
            figures[name, default: ([], [])].insert.append(round.insert)
            figures[name, default: ([], [])].delete.append(round.delete)
        }
    }
    func ms(_ name: String, _ path: KeyPath<(insert: [Double], delete: [Double]), [Double]>) -> Double { median(figures[name]?[keyPath: path] ?? []) }
    let plain = ms("no reference, no rule", \.insert)
    let referenced = ms("reference, no rule", \.insert)
    let cascade = ms("reference, cascade", \.insert)
    let deleteNoRule = ms("reference, no rule", \.delete)
    let deleteCascade = ms("reference, cascade", \.delete)
    let deleteByCascade = ms("reference, cascade, list delete only", \.delete)
    print(
        """
        | delete rules, SQLite core, \(items) items, median of \(rounds) | CPU ms | ratio |
        |---|---|---|
        | insert items, no reference field (yardstick) | \(String(format: "%.1f", plain)) | 1.00 |
        | insert items with a reference, no rule (index rows written) | \(String(format: "%.1f", referenced)) | \(String(format: "%.2f", referenced / plain)) |
        | insert items with a reference, cascade rule (targets loaded and checked) | \(String(format: "%.1f", cascade)) | \(String(format: "%.2f", cascade / plain)) |
        | delete the list and its items in one mutation, no rule (yardstick) | \(String(format: "%.1f", deleteNoRule)) | 1.00 |
        | same, cascade rule (referrers loaded, cascade finds them deleted) | \(String(format: "%.1f", deleteCascade)) | \(String(format: "%.2f", deleteCascade / deleteNoRule)) |
        | delete the list alone, cascade rule (the server deletes the items) | \(String(format: "%.1f", deleteByCascade)) | \(String(format: "%.2f", deleteByCascade / deleteNoRule)) |
        """)
}
