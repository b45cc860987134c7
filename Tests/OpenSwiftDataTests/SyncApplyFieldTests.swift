import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol
import Testing

private func taskDevice() throws -> ModelContainer {
    let container = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: syncStoreURL()))
    var configuration = SyncCaptureConfiguration()
    configuration.sync(SyncProject.self)
    configuration.sync(SyncTask.self)
    configuration.sync(SyncUser.self)
    configuration.sync(SyncLabel.self)
    try container.enableSyncCapture(configuration)
    return container
}

private func field(_ name: String, _ kind: SyncValueKind, _ stored: SyncStoredValue) -> SyncField {
    SyncField(name: name, value: SyncFieldValue(kind: kind, stored: stored))
}

/// How an apply places field values: decoded straight into a new model's storage, or through
/// an existing model's setters.
@Suite("Applying remote changes: field values")
struct SyncApplyFieldTests {
    @Test("fields in any order, and one named twice, apply as given (the last value wins); properties not given keep their defaults")
    func fieldOrder() throws {
        let container = try taskDevice()
        let fields = [
            field("priority", .int, .integer(3)),
            field("title", .string, .text("first")),
            field("state", .string, .text("closed")),
            field("estimate", .double, .real(1.5)),
            field("title", .string, .text("second")),
        ]
        let result = try container.applyRemoteChanges([.upsert("SyncTask", recordID: "T1", serverVersion: 1, fields: fields)])
        #expect(result.inserted == 1)
        let task = try #require(try ModelContext(container).fetch(FetchDescriptor<SyncTask>()).first)
        #expect(task.title == "second")
        #expect(task.priority == 3)
        #expect(task.state == .closed)
        #expect(task.estimate == 1.5)
        #expect(task.done == false)
        #expect(task.due == nil)
        #expect(task.notes == [])
        #expect(task.labels.isEmpty)
    }

    @Test("a record created, updated, deleted and created again in one batch ends as the last upsert says, with its server version")
    func createUpdateInOneBatch() throws {
        let container = try taskDevice()
        try container.applyRemoteChanges([
            .upsert(
                "SyncTask", recordID: "T2", serverVersion: 1, fields: [field("title", .string, .text("made")), field("priority", .int, .integer(1))]),
            .upsert("SyncTask", recordID: "T2", serverVersion: 2, fields: [field("priority", .int, .integer(2))]),
            .upsert("SyncTask", recordID: "T3", serverVersion: 3, fields: [field("title", .string, .text("gone"))]),
            .delete("SyncTask", recordID: "T3", serverVersion: 4),
            .upsert("SyncTask", recordID: "T3", serverVersion: 5, fields: [field("title", .string, .text("back"))]),
        ])
        let tasks = try ModelContext(container).fetch(FetchDescriptor<SyncTask>(sortBy: [SortDescriptor(\.title)]))
        #expect(tasks.map(\.title) == ["back", "made"])
        #expect(tasks.map(\.priority) == [0, 2])
        #expect(try container.syncServerVersion(entity: "SyncTask", recordID: "T2") == 2)
        #expect(try container.syncServerVersion(entity: "SyncTask", recordID: "T3") == 5)
        // A later batch updates the local row through its setters; a value that cannot be
        // decoded changes nothing.
        try container.applyRemoteChanges([
            .upsert(
                "SyncTask", recordID: "T2", serverVersion: 6, fields: [field("done", .bool, .integer(1)), field("title", .string, .text("edited"))])
        ])
        #expect(throws: (any Error).self) {
            try container.applyRemoteChanges([
                .upsert(
                    "SyncTask", recordID: "T2", serverVersion: 7,
                    fields: [field("title", .string, .text("lost")), field("state", .string, .text("reopened"))])
            ])
        }
        let edited = try ModelContext(container).fetch(FetchDescriptor<SyncTask>(predicate: #Predicate { $0.priority == 2 }))
        #expect(edited.map(\.title) == ["edited"])
        #expect(edited.map(\.done) == [true])
        #expect(try container.syncServerVersion(entity: "SyncTask", recordID: "T2") == 6)
    }
}
