import Foundation
import GRDB
import OpenSwiftDataSyncProtocol
import Testing

@testable import OpenSwiftData

/// The sync log blob written in format version 1 (stores written before issue 18's compact
/// form): names table, change count, then per change kind, entity, record id as text, scope,
/// base version, every field with its name and kind code, links.
private func versionOneBlob(_ changes: [SyncChange]) -> Data {
    var names: [String] = []
    func index(_ name: String) -> UInt64 {
        if let found = names.firstIndex(of: name) { return UInt64(found) }
        names.append(name)
        return UInt64(names.count - 1)
    }
    let body = HistoryCoding.ByteWriter(capacity: 256)
    for change in changes {
        body.byte(change.kind.rawValue)
        body.unsigned(index(change.entity))
        body.string(change.recordID)
        if let scope = change.scope {
            body.byte(1)
            body.string(scope)
        } else {
            body.byte(0)
        }
        if let base = change.baseVersion {
            body.byte(1)
            body.signed(base)
        } else {
            body.byte(0)
        }
        body.unsigned(UInt64(change.fields.count))
        for field in change.fields {
            body.unsigned(index(field.name))
            body.byte(UInt8(SyncValueKind.allCases.firstIndex(of: field.value.kind) ?? 0))
            body.value(field.value.stored.databaseValue)
        }
        body.unsigned(UInt64(change.links.count))
        for link in change.links {
            body.unsigned(index(link.relationship))
            body.unsigned(UInt64(link.added.count))
            for id in link.added { body.string(id) }
            body.unsigned(UInt64(link.removed.count))
            for id in link.removed { body.string(id) }
        }
    }
    let blob = HistoryCoding.ByteWriter(capacity: body.count + 256)
    blob.byte(1)
    blob.unsigned(UInt64(names.count))
    for name in names { blob.string(name) }
    blob.unsigned(UInt64(changes.count))
    blob.append(body)
    return blob.data
}

/// The sync log blob written in format version 2 (stores written before the flags byte and
/// record id differences): names, field lists, change count, then per change kind, entity,
/// record id form (0 text, 1 a UUID's 16 bytes), scope, base version, field form (0 listed, 1
/// every field of the entity's list), fields, links.
private func versionTwoBlob(fieldLists: [(entity: String, fields: [(String, SyncValueKind)])], _ changes: [SyncChange]) -> Data {
    var names: [String] = []
    func index(_ name: String) -> UInt64 {
        if let found = names.firstIndex(of: name) { return UInt64(found) }
        names.append(name)
        return UInt64(names.count - 1)
    }
    let lists = HistoryCoding.ByteWriter(capacity: 256)
    lists.unsigned(UInt64(fieldLists.count))
    for list in fieldLists {
        lists.unsigned(index(list.entity))
        lists.unsigned(UInt64(list.fields.count))
        for (name, kind) in list.fields {
            lists.unsigned(index(name))
            lists.byte(SyncLogCoding.Encoder.code(of: kind))
        }
    }
    let body = HistoryCoding.ByteWriter(capacity: 256)
    for change in changes {
        body.byte(change.kind.rawValue)
        body.unsigned(index(change.entity))
        if let words = SyncRecords.uuidWords(change.recordID) {
            body.byte(1)
            body.bigEndian(words.high)
            body.bigEndian(words.low)
        } else {
            body.byte(0)
            body.string(change.recordID)
        }
        if let scope = change.scope {
            body.byte(1)
            body.string(scope)
        } else {
            body.byte(0)
        }
        if let base = change.baseVersion {
            body.byte(1)
            body.signed(base)
        } else {
            body.byte(0)
        }
        let listed = fieldLists.first { $0.entity == change.entity }.map { $0.fields.map(\.0) }
        if change.kind == .insert, listed == change.fields.map(\.name) {
            body.byte(1)
            for field in change.fields { body.value(field.value.stored.databaseValue) }
        } else {
            body.byte(0)
            body.unsigned(UInt64(change.fields.count))
            for field in change.fields {
                body.unsigned(index(field.name))
                body.byte(SyncLogCoding.Encoder.code(of: field.value.kind))
                body.value(field.value.stored.databaseValue)
            }
        }
        body.unsigned(UInt64(change.links.count))
        for link in change.links {
            body.unsigned(index(link.relationship))
            body.unsigned(UInt64(link.added.count))
            for id in link.added { body.string(id) }
            body.unsigned(UInt64(link.removed.count))
            for id in link.removed { body.string(id) }
        }
    }
    let blob = HistoryCoding.ByteWriter(capacity: body.count + lists.count + 256)
    blob.byte(2)
    blob.unsigned(UInt64(names.count))
    for name in names { blob.string(name) }
    blob.append(lists)
    blob.unsigned(UInt64(changes.count))
    blob.append(body)
    return blob.data
}

@Suite("Sync log format")
struct SyncLogFormatTests {
    @Test("an entry an earlier version wrote (format 1: record ids as text, every field named) reads back unchanged next to the entries saved since")
    func versionOneEntriesStillRead() throws {
        let url = syncStoreURL()
        let container = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
        try container.enableSyncCapture(SyncCaptureConfiguration(SyncProject.self, SyncTask.self, SyncUser.self, SyncLabel.self))
        let old = [
            SyncChange(
                kind: .insert, entity: "SyncUser", recordID: "u1", scope: nil, baseVersion: nil,
                fields: [
                    SyncField(name: "handle", value: SyncFieldValue(kind: .string, stored: .text("u1"))),
                    SyncField(name: "name", value: SyncFieldValue(kind: .string, stored: .text("Ada"))),
                ]),
            SyncChange(
                kind: .update, entity: "SyncLabel", recordID: "0190A1B2-C3D4-7E5F-8A6B-7C8D9E0F1A2B", scope: "team", baseVersion: 7,
                fields: [
                    SyncField(name: "name", value: SyncFieldValue(kind: .string, stored: .text("urgent")))
                ], links: [SyncLinkChange(relationship: "tasks", added: ["0190A1B2-C3D4-7E5F-8A6B-7C8D9E0F1A2C"], removed: [])]),
            SyncChange(kind: .delete, entity: "SyncUser", recordID: "u2", scope: nil, baseVersion: 3),
        ]
        try container.store.write { db in
            try db.execute(
                sql: "INSERT INTO osd_sync_log (stamp, author, timestamp, changes) VALUES (?, ?, ?, ?)",
                arguments: [1, "app", 0.0, versionOneBlob(old)]
            )
        }
        let context = ModelContext(container)
        context.insert(SyncUser(handle: "u3", name: "Grace"))
        try context.save()

        let reopened = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
        let entries = try reopened.syncLogEntries()
        #expect(entries.count == 2)
        #expect(entries.first?.changes == old)
        #expect(entries.last?.changes.map(\.recordID) == ["u3"])
        #expect(entries.last?.changes.first?.fields.map(\.name) == ["handle", "name"])
    }

    @Test("an entry in format 2 (a byte per optional part, UUID record ids as 16 bytes) reads back unchanged")
    func versionTwoEntriesStillRead() throws {
        let uuid = "0190A1B2-C3D4-7E5F-8A6B-7C8D9E0F1A2B"
        let changes = [
            SyncChange(
                kind: .insert, entity: "SyncUser", recordID: "u1", scope: "team", baseVersion: nil,
                fields: [
                    SyncField(name: "handle", value: SyncFieldValue(kind: .string, stored: .text("u1"))),
                    SyncField(name: "name", value: SyncFieldValue(kind: .string, stored: .null)),
                ]),
            SyncChange(
                kind: .update, entity: "SyncLabel", recordID: uuid, scope: nil, baseVersion: -4,
                fields: [
                    SyncField(name: "count", value: SyncFieldValue(kind: .int, stored: .integer(12)))
                ], links: [SyncLinkChange(relationship: "tasks", added: ["a"], removed: ["b", "c"])]),
            SyncChange(kind: .delete, entity: "SyncLabel", recordID: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", scope: nil, baseVersion: 9),
        ]
        let blob = versionTwoBlob(fieldLists: [("SyncUser", [("handle", .string), ("name", .string)])], changes)
        #expect(blob.first == 2)
        #expect(SyncLogCoding.decode(blob) == changes)
        #expect(SyncLogCoding.decode(blob.dropLast(3)) == nil)
    }

    @Test(
        "the compact format round-trips inserts (every field, by the entity's field list), listed updates, text and UUID record ids, scopes, base versions and links"
    )
    func compactRoundTrip() throws {
        let encoder = SyncLogCoding.Encoder(capacity: 16)
        let user = encoder.fieldList(
            entity: "SyncUser", names: ["handle", "name"],
            kindCodes: [SyncLogCoding.Encoder.code(of: .string), SyncLogCoding.Encoder.code(of: .string)])
        let label = encoder.intern("SyncLabel")
        let count = encoder.intern("count")
        encoder.change(
            .insert, entity: user.entity, recordID: CapturedRecordID("u1"), scope: "team", baseVersion: nil, links: [], allFields: true, fieldCount: 2
        )
        encoder.value("u1".databaseValue)
        encoder.value(DatabaseValue.null)
        let uuid = "0190A1B2-C3D4-7E5F-8A6B-7C8D9E0F1A2B"
        let link = SyncLinkChange(relationship: "tasks", added: ["a"], removed: ["b", "c"])
        encoder.change(
            .update, entity: label, recordID: CapturedRecordID(uuid), scope: nil, baseVersion: -4, links: [link], allFields: false, fieldCount: 1)
        encoder.field(name: count, kindCode: SyncLogCoding.Encoder.code(of: .int), value: 12.databaseValue)
        encoder.change(
            .delete, entity: label, recordID: CapturedRecordID("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"), scope: nil, baseVersion: 9, links: [],
            allFields: false, fieldCount: 0)
        // UUIDs near the one before (as a save makes them) and far from it (written whole).
        let next = "0190A1B2-C3D4-7E60-8A6B-7C8D9E0F1A2C"
        let earlier = "0190A1B2-C3D4-7E5E-8A6B-7C8D9E0F1A2A"
        let far = "F190A1B2-C3D4-7E5F-8A6B-7C8D9E0F1A2B"
        for id in [next, earlier, far] {
            encoder.change(
                .delete, entity: label, recordID: CapturedRecordID(id), scope: nil, baseVersion: nil, links: [], allFields: false, fieldCount: 0)
        }
        let blob = encoder.finish()
        #expect(blob.first == SyncLogCoding.formatVersion)
        #expect(
            SyncLogCoding.decode(blob) == [
                SyncChange(
                    kind: .insert, entity: "SyncUser", recordID: "u1", scope: "team", baseVersion: nil,
                    fields: [
                        SyncField(name: "handle", value: SyncFieldValue(kind: .string, stored: .text("u1"))),
                        SyncField(name: "name", value: SyncFieldValue(kind: .string, stored: .null)),
                    ]),
                SyncChange(
                    kind: .update, entity: "SyncLabel", recordID: uuid, scope: nil, baseVersion: -4,
                    fields: [
                        SyncField(name: "count", value: SyncFieldValue(kind: .int, stored: .integer(12)))
                    ], links: [link]),
                SyncChange(kind: .delete, entity: "SyncLabel", recordID: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", scope: nil, baseVersion: 9),
                SyncChange(kind: .delete, entity: "SyncLabel", recordID: next, scope: nil, baseVersion: nil),
                SyncChange(kind: .delete, entity: "SyncLabel", recordID: earlier, scope: nil, baseVersion: nil),
                SyncChange(kind: .delete, entity: "SyncLabel", recordID: far, scope: nil, baseVersion: nil),
            ])
        // A truncated blob is refused, not misread.
        #expect(SyncLogCoding.decode(blob.dropLast(3)) == nil)
    }

    @Test("the record ids of a save's new rows take a few bytes each in the log, and read back as saved")
    func consecutiveRecordIDsAreShort() throws {
        var generator = RandomRecordID()
        let ids = (0..<1_000).map { _ in generator.makeWords() }
        let encoder = SyncLogCoding.Encoder()
        let entity = encoder.intern("SyncLabel")
        for id in ids {
            encoder.change(
                .delete, entity: entity, recordID: .uuid(high: id.high, low: id.low), scope: nil, baseVersion: nil, links: [], allFields: false,
                fieldCount: 0)
        }
        let blob = encoder.finish()
        // Flags, entity, count: 3 bytes; the id's two differences: 2 to 5 (16 written whole).
        #expect(blob.count < 1_000 * 8)
        #expect(SyncLogCoding.decode(blob)?.map(\.recordID) == ids.map { RandomRecordID.format(high: $0.high, low: $0.low) })
    }

    @Test("an entry whose names do not fit the room left for its header reads back whole")
    func largeHeader() throws {
        let encoder = SyncLogCoding.Encoder(capacity: 16)
        let names = (0..<200).map { "field_with_a_long_name_\($0)" }
        let list = encoder.fieldList(entity: "Wide", names: names, kindCodes: names.map { _ in SyncLogCoding.Encoder.code(of: .int) })
        encoder.change(
            .insert, entity: list.entity, recordID: CapturedRecordID("w1"), scope: nil, baseVersion: 1, links: [], allFields: true,
            fieldCount: names.count)
        for index in names.indices { encoder.value(Int64(index).databaseValue) }
        let decoded = try #require(SyncLogCoding.decode(encoder.finish()))
        #expect(decoded.count == 1)
        #expect(decoded.first?.fields.map(\.name) == names)
        #expect(decoded.first?.fields.map(\.value.stored) == names.indices.map { .integer(Int64($0)) })
        #expect(decoded.first?.baseVersion == 1)
    }
}
