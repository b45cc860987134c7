import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftDataSync

@Suite("Sync engine: its own tables, read without decoding the queue again")
struct EngineStoreTests {
    /// The shadow table alone, in memory.
    private func shadowDatabase() throws -> DatabaseQueue {
        let database = try DatabaseQueue()
        try database.write { db in try SyncEngineStore.create(in: db) }
        return database
    }

    private typealias Shadows = [SyncEngineStore.ShadowKey: (value: SyncEngineStore.ShadowValue, version: Int64)]

    private func key(_ record: String, _ part: SyncShadowPart) -> SyncEngineStore.ShadowKey {
        SyncEngineStore.ShadowKey(entity: "Note", recordID: record, part: part)
    }

    private func same(_ a: Shadows, _ b: Shadows) -> Bool {
        a.count == b.count && a.allSatisfy { key, entry in b[key].map { $0.value == entry.value && $0.version == entry.version } ?? false }
    }

    @Test("a memo reuses a value only for the bytes it was decoded from, and keeps only the rows of the last full read")
    func memoMatchesBytes() throws {
        let memo = DecodeMemo<Int, String>()
        var decoded = 0
        func read(_ key: Int, _ text: String) -> String {
            memo.value(key, bytes: Data(text.utf8)) { bytes in
                decoded += 1
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        #expect(read(1, "first") == "first")
        memo.keepOnly([(1, Data("first".utf8), "first"), (2, Data("second".utf8), "second")])
        #expect(read(1, "first") == "first")
        #expect(read(2, "second") == "second")
        #expect(decoded == 1)
        // The row rewritten under the same key (a renumbered or split mutation) is decoded.
        #expect(read(1, "rewritten") == "rewritten")
        #expect(decoded == 2)
        memo.keepOnly([(2, Data("second".utf8), "second")])
        #expect(read(1, "first") == "first")
        #expect(decoded == 3)
    }

    @Test("writing shadows over what was read leaves the table as writing them all would: changed, added and removed")
    func shadowUpdateMatchesReplace() throws {
        let database = try shadowDatabase()
        let stored: Shadows = [
            key("n1", .field("title")): (.field(.string("old")), 3),
            key("n1", .record): (.record(exists: true), 3),
            key("n2", .link("tags", "t1")): (.link(present: true), 4),
            key("n3", .field("pinned")): (.field(.bool(false)), 5),
        ]
        try database.write { db in try SyncEngineStore.replaceShadows(stored, in: db) }
        let next: Shadows = [
            key("n1", .field("title")): (.field(.string("new")), 6),
            key("n1", .record): (.record(exists: true), 3),
            key("n3", .field("pinned")): (.field(.bool(false)), 7),
            key("n4", .record): (.record(exists: false), 8),
        ]
        let memo = DecodeMemo<SyncEngineStore.ShadowKey, SyncEngineStore.ShadowValue>()
        let read = try database.read { db in try SyncEngineStore.shadows(in: db, memo: memo) }
        #expect(same(read, stored))
        try database.write { db in try SyncEngineStore.updateShadows(next, from: read, in: db) }
        #expect(same(try database.read { db in try SyncEngineStore.shadows(in: db, memo: memo) }, next))
        #expect(same(try database.read { db in try SyncEngineStore.shadows(in: db) }, next))
    }

    @Test("a shadow row that cannot be decoded is not kept past the next write")
    func undecodableShadowIsReplaced() throws {
        let database = try shadowDatabase()
        try database.write { db in
            try db.execute(
                sql: "INSERT INTO \(SyncEngineStore.shadowTable) (entity, record_id, key, value, version) VALUES ('Note', 'n9', 'f:title', X'FF', 1)")
        }
        let read = try database.read { db in try SyncEngineStore.shadows(in: db) }
        #expect(read.isEmpty)
        let next: Shadows = [key("n1", .record): (.record(exists: true), 2)]
        try database.write { db in try SyncEngineStore.updateShadows(next, from: read, in: db) }
        let rows = try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(SyncEngineStore.shadowTable)") }
        #expect(rows == 1)
        #expect(same(try database.read { db in try SyncEngineStore.shadows(in: db) }, next))
    }

    @Test("every shadow part is stored as the text earlier versions wrote and read back as itself; text that names no part is refused")
    func shadowPartStorageKeys() throws {
        let parts: [(SyncShadowPart, String)] = [
            (.record, "#record"),
            (.field("title"), "f:title"),
            (.field("a:b"), "f:a:b"),
            (.link("tags", "t1"), "l:tags\u{1F}t1"),
            (.link("tags", ""), "l:tags\u{1F}"),
            (.linkSet(relationship: "tags"), "s:tags"),
        ]
        for (part, text) in parts {
            #expect(part.storageKey == text)
            #expect(SyncShadowPart(storageKey: text) == part)
        }
        for text in ["r", "", "x:title", "l:tags-without-separator"] {
            #expect(SyncShadowPart(storageKey: text) == nil)
        }
        // A shadow written under each part's text comes back under the same key.
        let database = try shadowDatabase()
        let written: Shadows = Dictionary(
            uniqueKeysWithValues: parts.enumerated().map { index, part in
                (key("n\(index)", part.0), (SyncEngineStore.ShadowValue.record(exists: true), Int64(index)))
            })
        try database.write { db in try SyncEngineStore.replaceShadows(written, in: db) }
        #expect(same(try database.read { db in try SyncEngineStore.shadows(in: db) }, written))
    }

    @Test("a long queue of offline saves, each its own mutation, is pushed and settled by one sync, and another device sees every save")
    func longOfflineQueue() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a", pageSize: 100)
        try await a.engine.syncNow()
        for index in 0..<600 {
            a.context.insert(Note(title: "queued \(index)"))
            try a.context.save()
        }
        #expect(try await a.engine.pendingChangeCount() == 600)
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
        let b = try Device.open(server, directory: directory, name: "b", pageSize: 100)
        try await b.engine.syncNow()
        #expect(try b.fetch(Note.self).count == 600)
        #expect(try a.noteState() == b.noteState())
    }
}
