import Foundation
import GRDB
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

@Suite("Backups, restores and epoch rotation", .serialized)
struct BackupTests {
    @Test("a backup taken while a client pushes is one consistent snapshot: whole pushes only, the client's last mutation id matching its records")
    func backupUnderWriteLoad() async throws {
        try await LiveServer.run { server in
            let alice = try await server.token("alice")
            guard case .sqlite(_, let path) = server.storage else {
                Issue.record("the SQLite backend")
                return
            }
            let pushes = Task {
                var acknowledged = 0
                for id in 1...300 {
                    // Two records in one mutation: a torn copy would hold one without the other.
                    var single = mutation(MutationID(id), .insert, "a\(id)", fields: ["n": .int(Int64(id))])
                    single.changes.append(RecordChange(op: .insert, entity: "Note", recordID: "b\(id)", scope: .user("alice")))
                    let request = PushRequest(clientID: "writer", mutations: [single])
                    let answer = try await server.push(request, token: alice)
                    guard answer.status == 200 else { throw SyncServiceError(500, .internalError, "push \(id): \(answer.text)") }
                    acknowledged = id
                }
                return acknowledged
            }
            // Back up while the pushes go on.
            for _ in 0..<200 {
                if (try await server.footprint()["osd_clients"] ?? 0) > 0 { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            let backup = server.directory.path("backup.sqlite")
            let summary = try SQLiteMaintenance.backup(databasePath: path, to: backup)
            let acknowledged = try await pushes.value
            #expect(acknowledged == 300)
            #expect(summary.bytes > 0 && summary.path == backup)
            #expect(!FileManager.default.fileExists(atPath: backup + "-wal"), "the backup is one file")
            let copy = try DatabaseQueue(path: backup)
            let (records, last, head, check) = try await copy.read { db in
                (
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records") ?? -1,
                    try Int.fetchOne(db, sql: "SELECT last_mutation_id FROM osd_clients WHERE client_id = 'writer'") ?? 0,
                    try Int64.fetchOne(db, sql: "SELECT seq FROM osd_head") ?? -1,
                    try String.fetchAll(db, sql: "PRAGMA integrity_check")
                )
            }
            #expect(check == ["ok"])
            #expect(records == 2 * last, "whole mutations only: \(records) records for \(last) mutations")
            #expect(last > 0 && last < 300, "taken during the pushes (held \(last) of 300)")
            #expect(head == summary.head)
            // It refuses to overwrite.
            await expectError(.internalError) { _ = try SQLiteMaintenance.backup(databasePath: path, to: backup) }
            await expectError(.internalError) {
                _ = try SQLiteMaintenance.backup(databasePath: server.directory.path("missing.sqlite"), to: server.directory.path("other.sqlite"))
            }
        }
    }

    @Test(
        "restore installs a backup with a new epoch: the server answers old cursors reset epochChanged, and pushes made on the lost history are staleEpoch"
    )
    func restoreGivesNewEpoch() async throws {
        let directory = try TemporaryDirectory()
        let live = directory.path("live.sqlite")
        let backup = directory.path("backup.sqlite")
        let storage = try SQLiteSyncStorage(path: live)
        let clock = ManualClock()
        let service = try await SyncService(storage: storage, now: clock.clock)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "kept")]))
        let summary = try SQLiteMaintenance.backup(databasePath: live, to: backup)
        #expect(summary.epoch == service.epoch)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(2, .insert, "lost")]))
        let cursor = try await service.pull(user: "alice", request: PullRequest(clientID: "a")).cursor
        try await storage.close()

        let change = try SQLiteMaintenance.restore(backup: backup, to: live)
        #expect(change.previous == summary.epoch && change.current != summary.epoch)
        let restored = try await SyncService(storage: try SQLiteSyncStorage(path: live), now: clock.clock)
        #expect(restored.epoch == change.current)
        let page = try await restored.pull(user: "alice", request: PullRequest(clientID: "a", cursor: cursor))
        #expect(page.reset == .epochChanged)
        #expect(page.lastMutationID == 1, "the restored server holds mutation 1, not 2")
        #expect(page.changes.map(\.recordID) == ["kept"])
        await expectError(.staleEpoch) {
            _ = try await restored.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(2, .insert, "lost")], cursor: cursor))
        }
        try await restored.storage.close()
        // The backup itself is untouched and can be restored again.
        #expect(try SQLiteMaintenance.restore(backup: backup, to: directory.path("second.sqlite")).previous == summary.epoch)
        await expectError(.internalError) { try SQLiteMaintenance.restore(backup: directory.path("missing.sqlite"), to: live) }
    }

    @Test("epoch rotate gives a database a new epoch in place and keeps its data")
    func rotate() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        let storage = try SQLiteSyncStorage(path: path)
        let service = try await SyncService(storage: storage, now: { Date() })
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        try await storage.close()
        let change = try SQLiteMaintenance.rotateEpoch(databasePath: path)
        #expect(change.previous == service.epoch && change.current != service.epoch)
        let reopened = try await SyncService(storage: try SQLiteSyncStorage(path: path), now: { Date() })
        #expect(reopened.epoch == change.current)
        #expect(try await reopened.pull(user: "alice", request: PullRequest(clientID: "b")).changes.count == 1)
        try await reopened.storage.close()
        let empty = directory.path("not-osd.sqlite")
        try await DatabaseQueue(path: empty).write { db in try db.execute(sql: "CREATE TABLE t (x)") }
        await expectError(.internalError) { try SQLiteMaintenance.rotateEpoch(databasePath: empty) }
    }

    @Test("epoch rotate on PostgreSQL (after pg_restore): a new epoch in place, the data kept, old cursors reset", arguments: Backend.postgresOnly)
    func rotatePostgres(_ backend: Backend) async throws {
        let configuration = try PostgresTestDatabase.freshConfiguration()
        let storage = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        let clock = ManualClock()
        let service = try await SyncService(storage: storage, now: clock.clock)
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        let cursor = try await service.pull(user: "alice", request: PullRequest(clientID: "a")).cursor
        let change = try await storage.rotateEpoch()
        #expect(change.previous == service.epoch && change.current != service.epoch)
        try await storage.close()
        let reopened = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        let restarted = try await SyncService(storage: reopened, now: clock.clock)
        #expect(restarted.epoch == change.current)
        let page = try await restarted.pull(user: "alice", request: PullRequest(clientID: "a", cursor: cursor))
        #expect(page.reset == .epochChanged)
        #expect(page.changes.map(\.recordID) == ["n1"] && page.lastMutationID == 1)
        try await reopened.close()
    }
}
