import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

@Suite(".externalStorage values in files beside the store")
struct ExternalStorageTests {
    private let threshold = StoreAttachments.threshold

    private func container(_ url: URL) throws -> ModelContainer {
        try ModelContainer(for: ExternalPhoto.self, configurations: ModelConfiguration(url: url))
    }

    @Test("a value of exactly 128 KiB stays in the row; one byte more goes to a file named by its SHA-256, and reads back")
    func thresholdBoundary() throws {
        #expect(threshold == 131_072)
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let inline = externalBytes(threshold, seed: 1)
        let external = externalBytes(threshold + 1, seed: 2)
        do {
            let context = ModelContext(try container(url))
            context.insert(ExternalPhoto(name: "inline", code: 1, image: inline))
            context.insert(ExternalPhoto(name: "external", code: 2, image: external))
            try context.save()
        }
        let stored = try storedBlobs(url, table: "ExternalPhoto", column: "image")
        #expect(stored[0] == inline, "at the threshold: inline")
        let reference = try #require(stored[1].flatMap { AttachmentReference(stored: $0) })
        #expect(stored[1]?.count == 56)
        #expect(reference.size == UInt64(threshold + 1))
        #expect(reference == AttachmentReference(of: external))
        let hex = AttachmentReference.hex(SHA256.hash(external))
        #expect(attachmentFiles(of: url) == [hex])
        let path = url.path + ".attachments/" + hex.prefix(2) + "/" + hex
        #expect(FileManager.default.contents(atPath: path) == external)
        let photos = try ModelContext(try container(url)).fetch(FetchDescriptor<ExternalPhoto>(sortBy: [SortDescriptor(\.code)]))
        #expect(photos.map(\.image) == [inline, external])
    }

    @Test("a small value that starts with the reference's magic is kept in a file, so a stored value shaped like a reference is one")
    func magicPrefixedValue() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let tricky = Data(AttachmentReference.magic + [UInt8](repeating: 9, count: 40))
        let context = ModelContext(try container(url))
        context.insert(ExternalPhoto(name: "tricky", code: 1, image: tricky))
        try context.save()
        #expect(attachmentFiles(of: url).count == 1)
        #expect(try ModelContext(try container(url)).fetch(FetchDescriptor<ExternalPhoto>()).first?.image == tricky)
    }

    @Test("equal values share one file, which stays until the last row naming it goes")
    func dedupe() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = externalBytes(threshold * 2)
        let container = try container(url)
        let context = ModelContext(container)
        let first = ExternalPhoto(name: "a", code: 1, image: value)
        let second = ExternalPhoto(name: "b", code: 2, image: value)
        context.insert(first)
        context.insert(second)
        try context.save()
        #expect(attachmentFiles(of: url).count == 1)
        context.delete(first)
        try context.save()
        #expect(attachmentFiles(of: url).count == 1, "b still names it")
        context.delete(second)
        try context.save()
        #expect(attachmentFiles(of: url).isEmpty)
    }

    @Test("a file goes when the value is replaced, set to nil or made small, and when its row is deleted")
    func removedAfterUpdateAndDelete() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let container = try container(url)
        let context = ModelContext(container)
        let photo = ExternalPhoto(name: "a", code: 1, image: externalBytes(threshold + 10, seed: 1))
        context.insert(photo)
        try context.save()
        let before = attachmentFiles(of: url)
        #expect(before.count == 1)
        // The update's new value is named by its history entry; the inserted one is not.
        photo.image = externalBytes(threshold + 10, seed: 2)
        try context.save()
        let after = attachmentFiles(of: url)
        #expect(after.count == 1 && after != before)
        try context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        photo.image = Data([1, 2, 3])
        try context.save()
        #expect(attachmentFiles(of: url).isEmpty, "replaced by a small value, and no history names it any more")
        let other = ExternalPhoto(name: "b", code: 2, image: externalBytes(threshold + 10, seed: 3))
        context.insert(other)
        try context.save()
        #expect(attachmentFiles(of: url).count == 1)
        context.delete(other)
        try context.save()
        #expect(attachmentFiles(of: url).isEmpty, "deleted with its row")
        let erased = ExternalPhoto(name: "c", code: 3, image: externalBytes(threshold + 10, seed: 4))
        context.insert(erased)
        try context.save()
        try container.erase()
        #expect(attachmentFiles(of: url).isEmpty, "erase")
    }

    @Test("a save that fails after writing a file leaves no file, and a rolled-back context never writes one")
    func failedSaveAndRollback() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let container = try container(url)
        let context = ModelContext(container)
        context.insert(ExternalPhoto(name: "a", code: 1))
        context.insert(ExternalPhoto(name: "b", code: 2))
        try context.save()
        // Matches a on its name and b on its code: two rows, the save fails after the file.
        let clash = ExternalPhoto(name: "a", code: 2, image: externalBytes(threshold * 3))
        context.insert(clash)
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        #expect(everyAttachmentEntry(of: url).isEmpty)
        context.rollback()
        context.insert(ExternalPhoto(name: "c", code: 3, image: externalBytes(threshold * 3)))
        context.rollback()
        try context.save()
        #expect(everyAttachmentEntry(of: url).isEmpty)
        #expect(try context.fetchCount(FetchDescriptor<ExternalPhoto>()) == 2)
    }

    @Test("opening the store removes temporary files a crash left and files no row names, and keeps the others")
    func sweepAtOpen() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let kept = externalBytes(threshold + 1)
        do {
            let context = ModelContext(try container(url))
            context.insert(ExternalPhoto(name: "a", code: 1, image: kept))
            try context.save()
        }
        let root = url.path + AttachmentDirectory.suffix
        let orphan = AttachmentReference(of: externalBytes(threshold + 1, seed: 9))
        let shard = root + "/" + orphan.hex.prefix(2)
        try FileManager.default.createDirectory(atPath: shard, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: shard + "/" + orphan.hex, contents: externalBytes(threshold + 1, seed: 9)))
        #expect(FileManager.default.createFile(atPath: shard + "/" + AttachmentDirectory.temporaryPrefix + "crashed", contents: Data([1])))
        #expect(everyAttachmentEntry(of: url).count == 3)
        let photos = try ModelContext(try container(url)).fetch(FetchDescriptor<ExternalPhoto>())
        #expect(photos.first?.image == kept)
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: kept).hex])
        #expect(everyAttachmentEntry(of: url).count == 1)
    }

    #if os(Linux)
    @Test("a fetch maps the file instead of reading it: the bytes come from disk when first touched")
    func lazyRead() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = externalBytes(threshold * 4)
        do {
            let context = ModelContext(try container(url))
            context.insert(ExternalPhoto(name: "a", code: 1, image: value))
            try context.save()
        }
        let path = url.path + ".attachments/" + AttachmentReference(of: value).hex.prefix(2) + "/" + AttachmentReference(of: value).hex
        let photo = try #require(try ModelContext(try container(url)).fetch(FetchDescriptor<ExternalPhoto>()).first)
        let image = try #require(photo.image)
        let address = image.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        // The value's bytes are a mapping of the file, as /proc/self/maps lists it. Read to its
        // end: `String(contentsOfFile:)` stops after the first page of a /proc file, and a test
        // process's mappings run far past it.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
        let maps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try handle.close()
        let mapped = maps.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, String(fields[5...].joined(separator: " ")) == path else { return false }
            let range = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
            return range.count == 2 && range[0] <= address && address < range[1]
        }
        let lines = maps.split(separator: "\n").filter { $0.contains(AttachmentReference(of: value).hex) }
        #expect(mapped, "address \(String(address, radix: 16)); the file's lines in /proc/self/maps: \(lines)")
        #expect(image == value)
    }
    #endif

    @Test("a missing file is a typed error from the fetch naming the entity, the property and the digest")
    func missingFile() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = externalBytes(threshold + 5)
        do {
            let context = ModelContext(try container(url))
            context.insert(ExternalPhoto(name: "a", code: 1, image: value))
            try context.save()
        }
        let hex = AttachmentReference(of: value).hex
        try FileManager.default.removeItem(atPath: url.path + ".attachments/" + hex.prefix(2) + "/" + hex)
        do {
            _ = try ModelContext(try container(url)).fetch(FetchDescriptor<ExternalPhoto>())
            Issue.record("the fetch succeeded")
        } catch let error as SwiftDataError {
            #expect(error == .missingExternalData)
            #expect(error.entityName == "ExternalPhoto" && error.propertyName == "image")
            #expect(error.detail.contains(hex))
        }
    }

    @Test("an in-memory container keeps large values in its rows")
    func inMemory() throws {
        let container = try ModelContainer(for: ExternalPhoto.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        #expect(container.store.attachments == nil)
        let value = externalBytes(threshold * 2)
        let context = ModelContext(container)
        context.insert(ExternalPhoto(name: "a", code: 1, image: value))
        try context.save()
        let stored = try container.store.read { db in try Data.fetchOne(db, sql: "SELECT image FROM ExternalPhoto") }
        #expect(stored == value)
        #expect(try ModelContext(container).fetch(FetchDescriptor<ExternalPhoto>()).first?.image == value)
    }

    @Test("a migration that rebuilds the table copies the references unchanged, and the files stay")
    func migrationKeepsReferences() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("docs.store")
        let value = externalBytes(threshold * 2)
        do {
            let container = try ModelContainer(for: ExternalDocsV1.ExternalDoc.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(ExternalDocsV1.ExternalDoc(name: "a", body: value))
            try context.save()
        }
        let before = try storedBlobs(url, table: "ExternalDoc", column: "body")
        let container = try ModelContainer(for: ExternalDocsV2.ExternalDoc.self, configurations: ModelConfiguration(url: url))
        let columns = try container.store.read { db in try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('ExternalDoc')") }
        #expect(!columns.contains("note"), "the table was rebuilt")
        #expect(try storedBlobs(url, table: "ExternalDoc", column: "body") == before)
        #expect(before.first??.count == 56)
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: value).hex])
        #expect(try ModelContext(container).fetch(FetchDescriptor<ExternalDocsV2.ExternalDoc>()).first?.body == value)
    }

    @Test("history hands out values, not references; a file stays while history names it")
    func history() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let container = try container(url)
        let context = ModelContext(container)
        let original = externalBytes(threshold + 3, seed: 5)
        let updated = externalBytes(threshold + 3, seed: 6)
        let photo = ExternalPhoto(name: "a", code: 1)
        photo.original = original
        context.insert(photo)
        try context.save()
        photo.image = updated
        try context.save()
        context.delete(photo)
        try context.save()
        #expect(attachmentFiles(of: url).sorted() == [AttachmentReference(of: original).hex, AttachmentReference(of: updated).hex].sorted())
        let changes = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).flatMap(\.changes)
        let update = try #require(changes.first { if case .update = $0 { true } else { false } })
        #expect(update.storedValues["image"] == .blob(updated))
        guard case let .delete(deletion) = changes.last, let deletion = deletion as? DefaultHistoryDelete<ExternalPhoto> else {
            Issue.record("no deletion")
            return
        }
        #expect(deletion.tombstone[\ExternalPhoto.original] as? Data == original)
        try context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(attachmentFiles(of: url).isEmpty, "no history names them any more")
    }

    @Test("undo puts a replaced value back, its file written again if it was collected")
    func undo() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let container = try container(url)
        let context = ModelContext(container)
        let undoManager = UndoManager()
        context.undoManager = undoManager
        let first = externalBytes(threshold + 7, seed: 1)
        let photo = ExternalPhoto(name: "a", code: 1, image: first)
        context.insert(photo)
        try context.save()
        photo.image = externalBytes(threshold + 7, seed: 2)
        try context.save()
        #expect(!attachmentFiles(of: url).contains(AttachmentReference(of: first).hex), "the first value's file was collected")
        undoManager.undo()
        #expect(photo.image == first)
        try context.save()
        #expect(attachmentFiles(of: url).contains(AttachmentReference(of: first).hex))
        #expect(try ModelContext(container).fetch(FetchDescriptor<ExternalPhoto>()).first?.image == first)
    }

    @Test("a container with several configurations keeps each file's values in its own directory")
    func severalConfigurations() throws {
        let directory = try TemporaryDirectory()
        let photos = directory.file("photos.store")
        let docs = directory.file("docs.store")
        let container = try ModelContainer(
            for: Schema([ExternalPhoto.self, ExternalDocsV2.ExternalDoc.self]),
            configurations: ModelConfiguration("Photos", schema: Schema([ExternalPhoto.self]), url: photos),
            ModelConfiguration("Docs", schema: Schema([ExternalDocsV2.ExternalDoc.self]), url: docs))
        let context = ModelContext(container)
        let photo = externalBytes(threshold + 1, seed: 1)
        let doc = externalBytes(threshold + 1, seed: 2)
        context.insert(ExternalPhoto(name: "a", code: 1, image: photo))
        context.insert(ExternalDocsV2.ExternalDoc(name: "d", body: doc))
        try context.save()
        #expect(attachmentFiles(of: photos) == [AttachmentReference(of: photo).hex])
        #expect(attachmentFiles(of: docs) == [AttachmentReference(of: doc).hex])
        let fresh = ModelContext(container)
        #expect(try fresh.fetch(FetchDescriptor<ExternalPhoto>()).first?.image == photo)
        #expect(try fresh.fetch(FetchDescriptor<ExternalDocsV2.ExternalDoc>()).first?.body == doc)
    }

    @Test("a reference in history bytes is found when a magic starts less than a reference's length before it")
    func occurrencesAfterAFalseMagic() {
        let value = externalBytes(threshold + 5, seed: 8)
        let reference = AttachmentReference(of: value)
        // An inline value that starts with the magic, 10 bytes long, then the real reference.
        let bytes = Data([9, 9] + AttachmentReference.magic + [1, 2] + reference.encoded + [3])
        let found = bytes.withUnsafeBytes { AttachmentReference.occurrences(in: $0) }
        #expect(found.contains(reference.hex))
    }

    @Test("== and != with a Data constant match a value kept in a file, on disk and in memory", arguments: [false, true])
    func predicateEquality(inMemory: Bool) throws {
        let directory = try TemporaryDirectory()
        let configuration = inMemory ? ModelConfiguration(isStoredInMemoryOnly: true) : ModelConfiguration(url: directory.file("photos.store"))
        let container = try ModelContainer(for: ExternalPhoto.self, configurations: configuration)
        let large = externalBytes(threshold + 100, seed: 1)
        let other = externalBytes(threshold + 100, seed: 2)
        let small = Data([1, 2, 3])
        let tricky = Data(AttachmentReference.magic + [7, 7, 7])
        let context = ModelContext(container)
        context.insert(ExternalPhoto(name: "large", code: 1, image: large))
        context.insert(ExternalPhoto(name: "other", code: 2, image: other))
        context.insert(ExternalPhoto(name: "small", code: 3, image: small))
        context.insert(ExternalPhoto(name: "tricky", code: 4, image: tricky))
        context.insert(ExternalPhoto(name: "none", code: 5, image: nil))
        try context.save()
        let fresh = ModelContext(container)
        func names(_ predicate: Predicate<ExternalPhoto>) throws -> [String] {
            try fresh.fetch(FetchDescriptor(predicate: predicate, sortBy: [SortDescriptor(\.code)])).map(\.name)
        }
        #expect(try names(#Predicate { $0.image == large }) == ["large"])
        #expect(try names(#Predicate { $0.image != large }) == ["other", "small", "tricky", "none"])
        #expect(try names(#Predicate { $0.image == small }) == ["small"])
        #expect(try names(#Predicate { $0.image == tricky }) == ["tricky"])
        #expect(try names(#Predicate { $0.image == large || $0.image == other }) == ["large", "other"])
        #expect(try fresh.fetchCount(FetchDescriptor(predicate: #Predicate<ExternalPhoto> { $0.image == other })) == 1)
        // Membership in a captured array (`IN`) matches as `==` does.
        let wanted: [Data?] = [large, small, tricky]
        #expect(try names(#Predicate { wanted.contains($0.image) }) == ["large", "small", "tricky"])
        #expect(try names(#Predicate { !wanted.contains($0.image) }) == ["other", "none"])
    }
}
