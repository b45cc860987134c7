import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

@Suite("Store files and bad input")
struct StoreFileTests {
    @Test("a file that is not SQLite is refused with a typed error and left unmodified")
    func notSQLite() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("garbage.store")
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try garbage.write(to: url)
        #expect(throws: SwiftDataError.notAStore) {
            try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        }
        #expect(try Data(contentsOf: url) == garbage)
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
    }

    @Test("a store whose header is corrupt is refused and left unmodified")
    func corruptStore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("corrupt.store")
        do {
            let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Note(title: "x"))
            try context.save()
        }
        try checkpoint(url)
        var bytes = try Data(contentsOf: url)
        for index in 0..<16 { bytes[index] = 0x42 }
        try bytes.write(to: url)
        #expect(throws: SwiftDataError.notAStore) {
            try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        }
        #expect(try Data(contentsOf: url) == bytes)
    }

    @Test("an SQLite database OpenSwiftData did not create is refused and left unmodified")
    func foreignDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("foreign.sqlite")
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT)") }
        try queue.close()
        let before = try Data(contentsOf: url)
        #expect(throws: SwiftDataError.notAStore) {
            try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        }
        #expect(try Data(contentsOf: url) == before)
    }

    @Test("opening a store with a different schema fails with a typed error naming the difference, file untouched")
    func differentSchema() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("schema.store")
        do {
            let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Note(title: "keep me"))
            try context.save()
        }
        try checkpoint(url)
        let before = try Data(contentsOf: url)
        do {
            _ = try ModelContainer(for: OtherSchema.Note.self, configurations: ModelConfiguration(url: url))
            Issue.record("opening with another schema should throw")
        } catch let error as SwiftDataError {
            #expect(error == .incompatibleSchema)
            #expect(error.detail.contains("priority"))
        }
        #expect(try Data(contentsOf: url) == before)
        let reopened = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(reopened).fetch(FetchDescriptor<Note>()).map(\.title) == ["keep me"])
    }

    @Test("allowsSave: false makes save() throw and writes nothing")
    func readOnly() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("readonly.store")
        do {
            let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Note(title: "original"))
            try context.save()
        }
        try checkpoint(url)
        let before = try Data(contentsOf: url)
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url, allowsSave: false))
        let context = ModelContext(container)
        let note = try #require(try context.fetch(FetchDescriptor<Note>()).first)
        #expect(note.title == "original")
        note.title = "changed"
        context.insert(Note(title: "new"))
        #expect(throws: SwiftDataError.readOnlyStore) { try context.save() }
        #expect(context.hasChanges)
        #expect(try Data(contentsOf: url) == before)
    }

    @Test("a stored value that does not fit its property fails the fetch with a typed error, never a trap")
    func undecodableRow() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("hostile.store")
        do {
            let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Note(title: "fine"))
            try context.save()
        }
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "UPDATE \"Note\" SET status = 'no-such-case'") }
        try queue.close()
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        do {
            _ = try ModelContext(container).fetch(FetchDescriptor<Note>())
            Issue.record("fetching a row with an unknown enum raw value should throw")
        } catch let error as SwiftDataError {
            #expect(error == .valueDecodingFailure)
            #expect(error.propertyName == "status")
            #expect(error.detail.contains("no-such-case"))
        }
    }

    @Test("the store file records its identifier, schema version and layout")
    func metadata() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("meta.store")
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        context.insert(Note(title: "x"))
        try context.save()
        let storeID = try #require(try context.fetch(FetchDescriptor<Note>()).first?.persistentModelID.storeIdentifier)
        let queue = try DatabaseQueue(path: url.path)
        let entries = try queue.read { db in
            Dictionary(
                uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT key, value FROM osd_metadata").map {
                    ($0["key"] as String, $0["value"] as String)
                })
        }
        #expect(entries["storeIdentifier"] == storeID)
        #expect(entries["schemaVersion"] == "1.0.0")
        #expect(entries["layout"]?.contains("table Note(") == true)
        #expect(entries["layoutHash"]?.count == 16)
    }

    /// Folds the WAL into the main file so that its bytes hold every committed change.
    private func checkpoint(_ url: URL) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
    }
}
