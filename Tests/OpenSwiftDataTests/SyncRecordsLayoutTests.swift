import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

/// The layout of `osd_sync_records` and the upgrade of stores written before entity codes.
@Suite("Sync records layout")
struct SyncRecordsLayoutTests {
    private func container(at url: URL, clock: ManualClock) throws -> ModelContainer {
        let container = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
        var configuration = SyncCaptureConfiguration(clock: { clock.now })
        configuration.sync(SyncProject.self) { "project:\($0.title)" }
        configuration.sync(SyncTask.self)
        configuration.sync(SyncUser.self)
        configuration.sync(SyncLabel.self)
        try container.enableSyncCapture(configuration)
        return container
    }

    /// Rewrites the store's records in the layout before entity codes: the entity's name as text
    /// in `entity`, the id in its stored form (`textIDs`: every id as text, the first layout).
    private func writeLayoutBeforeCodes(_ url: URL, textIDs: Bool, serverVersion: (pk: Int64, version: Int64)) throws {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        try queue.write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT e.name, r.pk, r.record_id, r.scope, r.server_version FROM osd_sync_records r \
                    JOIN osd_sync_entities e ON e.code = r.entity_code
                    """)
            try db.execute(sql: "DROP TABLE osd_sync_records")
            try db.execute(sql: "DROP TABLE osd_sync_entities")
            try db.execute(
                sql: """
                    CREATE TABLE osd_sync_records ("entity" TEXT NOT NULL, "pk" INTEGER NOT NULL, \
                    "record_id" \(textIDs ? "TEXT" : "ANY") NOT NULL, "scope" TEXT, "server_version" INTEGER, \
                    PRIMARY KEY ("entity", "pk")) STRICT, WITHOUT ROWID
                    """)
            try db.execute(sql: "CREATE UNIQUE INDEX osd_sync_records_by_id ON osd_sync_records (\"entity\", \"record_id\")")
            for row in rows {
                let entity: String = row[0]
                let pk: Int64 = row[1]
                var recordID: DatabaseValue = row[2]
                if textIDs, case let .blob(data) = recordID.storage {
                    let uuid = data.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
                    recordID = uuid.uuidString.databaseValue
                }
                let version: DatabaseValue = entity == "SyncProject" && pk == serverVersion.pk ? serverVersion.version.databaseValue : row[4]
                try db.execute(
                    sql: "INSERT INTO osd_sync_records VALUES (?, ?, ?, ?, ?)",
                    arguments: [entity.databaseValue, pk.databaseValue, recordID, row[3], version])
            }
        }
    }

    @Test(
        "a store whose sync records predate entity codes is rewritten when opened: every record keeps its id, scope and server version, found both ways",
        arguments: [false, true])
    func upgradesRecordsBeforeEntityCodes(textIDs: Bool) throws {
        let url = syncStoreURL()
        let clock = ManualClock()
        var ids: [PersistentIdentifier: String] = [:]
        var projectKey: Int64 = 0
        do {
            let container = try container(at: url, clock: clock)
            let context = ModelContext(container)
            let project = SyncProject(title: "A")
            let task = SyncTask(title: "t", project: project)
            let user = SyncUser(handle: "u42", name: "Ann")
            task.assignee = user
            context.insert(task)
            context.insert(SyncLabel(name: "l"))
            try context.save()
            for model in [project as any PersistentModel, task, user] {
                ids[model.persistentModelID] = try container.syncRecordID(for: model.persistentModelID)
            }
            #expect(ids.count == 3)
            #expect(ids[user.persistentModelID] == "u42")
            projectKey = try #require(project.persistentModelID.rowID)
        }
        try writeLayoutBeforeCodes(url, textIDs: textIDs, serverVersion: (projectKey, 7))

        let reopened = try container(at: url, clock: clock)
        for (identifier, recordID) in ids {
            #expect(try reopened.syncRecordID(for: identifier) == recordID)
            #expect(try reopened.persistentIdentifier(forSyncRecord: recordID, entity: identifier.entityName) == identifier)
        }
        let projectID = try #require(ids.first { $0.key.entityName == "SyncProject" })
        #expect(try reopened.syncServerVersion(entity: "SyncProject", recordID: projectID.value) == 7)
        let entries = try DatabaseQueue(path: url.path).read { db in try ModelContainer.syncRecordEntries(in: db) }
        #expect(Set(entries.map(\.recordID)) == Set(ids.values).union(entries.filter { $0.entity == "SyncLabel" }.map(\.recordID)))
        #expect(entries.count == 4)

        // The layout is the current one, and capture goes on with the same records.
        let columns = try DatabaseQueue(path: url.path).read { db in
            try Row.fetchAll(db, sql: "PRAGMA table_info(osd_sync_records)").map { $0["name"] as String }
        }
        #expect(columns == ["entity_code", "pk", "record_id", "scope", "server_version"])
        #expect(try !sqliteTables(url).contains("osd_sync_records_before_codes"))
        let context = ModelContext(reopened)
        let project = try #require(try context.fetch(FetchDescriptor<SyncProject>()).first)
        project.budget = 5
        try context.save()
        context.delete(project)
        try context.save()
        let changes = try reopened.syncLogEntries().suffix(2).flatMap(\.changes)
        let update = try #require(changes.first { $0.entity == "SyncProject" && $0.kind == .update })
        #expect(update.recordID == projectID.value)
        #expect(update.baseVersion == 7)
        let deletion = try #require(changes.first { $0.entity == "SyncProject" && $0.kind == .delete })
        #expect(deletion.recordID == projectID.value)
        #expect(deletion.scope == "project:A")
        #expect(try reopened.persistentIdentifier(forSyncRecord: projectID.value, entity: "SyncProject") == nil)
    }

    @Test(
        "sync capture's tables are recorded as the store's own: recorded when capture is enabled, and on the first open of a store that has them unrecorded; no component can claim them"
    )
    func captureTablesAreRecorded() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-capture-tables-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store.sqlite")
        let captureTables = [
            "osd_sync_consumers", "osd_sync_entities", "osd_sync_log", "osd_sync_pending", "osd_sync_records", "osd_sync_state", "osd_sync_text_ops",
            "osd_sync_texts",
        ]
        func owners() throws -> [String: String] {
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            return try queue.read { db in
                Dictionary(
                    uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT name, owner FROM osd_store_tables WHERE name LIKE 'osd_sync_%'").map {
                        ($0["name"] as String, $0["owner"] as String)
                    })
            }
        }
        do {
            let container = try container(at: url, clock: ManualClock())
            let context = ModelContext(container)
            context.insert(SyncUser(handle: "u1", name: "Ada"))
            try context.save()
        }
        #expect(try owners() == Dictionary(uniqueKeysWithValues: captureTables.map { ($0, "store") }))

        // A store whose record does not name them (written before they were recorded).
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "DELETE FROM osd_store_tables WHERE name LIKE 'osd_sync_%'") }
        try queue.close()
        #expect(try owners().isEmpty)
        let reopened = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
        #expect(try owners() == Dictionary(uniqueKeysWithValues: captureTables.map { ($0, "store") }))
        #expect(try ModelContext(reopened).fetch(FetchDescriptor<SyncUser>()).map(\.handle) == ["u1"])

        // A component asking for one of them by name is refused, and the table is left as it is.
        do {
            try reopened.createComponentTables([StoreComponentTable(name: "osd_sync_log", createStatements: [])], owner: "other")
            Issue.record("a component was given sync capture's log table")
        } catch let error as SwiftDataError {
            #expect(error.description.contains("osd_sync_log"))
        }
        #expect(try owners()["osd_sync_log"] == "store")
    }

}
