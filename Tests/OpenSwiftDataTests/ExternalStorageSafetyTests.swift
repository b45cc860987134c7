import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Synchronization
import Testing

@testable import OpenSwiftData

#if canImport(Glibc)
import Glibc
#endif

@Suite("Files of .externalStorage values are removed only when nothing can still need them")
struct ExternalStorageSafetyTests {
    private let threshold = StoreAttachments.threshold

    private func container(_ url: URL) throws -> ModelContainer {
        try ModelContainer(for: ExternalPhoto.self, configurations: ModelConfiguration(url: url))
    }

    /// Saves one photo with a large image and returns the image.
    private func savePhoto(_ url: URL, seed: Int = 1) throws -> Data {
        let value = externalBytes(threshold + 11, seed: seed)
        let context = ModelContext(try container(url))
        context.insert(ExternalPhoto(name: "a\(seed)", code: seed, image: value))
        try context.save()
        return value
    }

    @Test("a read in progress in another container keeps the file it may map; the file goes once the read has ended")
    func readInAnotherContainer() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = try savePhoto(url)
        let hex = AttachmentReference(of: value).hex
        let reader = try container(url)
        let writer = try container(url)
        let writing = ModelContext(writer)
        let photo = try #require(try writing.fetch(FetchDescriptor<ExternalPhoto>()).first)
        let attachments = try #require(reader.store.attachments)
        let mapped = try reader.store.read { db -> Data? in
            // The snapshot starts here, before the other container deletes the row.
            let stored = try #require(try Data.fetchOne(db, sql: "SELECT image FROM ExternalPhoto"))
            let reference = try #require(AttachmentReference(stored: stored))
            writing.delete(photo)
            try writing.save()
            #expect(attachmentFiles(of: url) == [hex], "the other container's read holds the lock file")
            return try attachments.map(reference, of: "ExternalPhoto")
        }
        #expect(mapped == value)
        #expect(attachmentFiles(of: url) == [hex], "kept until the deleting container collects again")
        // The next read of the deleting container retries once it ends.
        _ = try writing.fetchCount(FetchDescriptor<ExternalPhoto>())
        try writer.store.writer.writeWithoutTransaction { _ in }
        #expect(attachmentFiles(of: url).isEmpty)
    }

    @Test("a save during a read of the same container keeps the file; it goes once the read ends")
    func readInSameContainer() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = try savePhoto(url)
        let container = try container(url)
        let context = ModelContext(container)
        let photo = try #require(try context.fetch(FetchDescriptor<ExternalPhoto>()).first)
        let attachments = try #require(container.store.attachments)
        let mapped = try container.store.read { db -> Data? in
            let stored = try #require(try Data.fetchOne(db, sql: "SELECT image FROM ExternalPhoto"))
            let reference = try #require(AttachmentReference(stored: stored))
            context.delete(photo)
            try context.save()
            #expect(attachmentFiles(of: url) == [AttachmentReference(of: value).hex], "kept while the read is in progress")
            return try attachments.map(reference, of: "ExternalPhoto")
        }
        #expect(mapped == value)
        // The collection the read held back runs on the writer's queue once the read ended.
        try container.store.writer.writeWithoutTransaction { _ in }
        #expect(attachmentFiles(of: url).isEmpty)
    }

    @Test("a file a read kept stays when its container goes without another write (nothing runs then); the next open's sweep removes it")
    func removedByNextOpen() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = try savePhoto(url)
        let reader = try container(url)
        do {
            let writer = try container(url)
            let context = ModelContext(writer)
            let photo = try #require(try context.fetch(FetchDescriptor<ExternalPhoto>()).first)
            try reader.store.read { db in
                _ = try Data.fetchOne(db, sql: "SELECT image FROM ExternalPhoto")
                context.delete(photo)
                try context.save()
            }
        }
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: value).hex], "no write when the deleting container went")
        #expect(try ModelContext(reader).fetchCount(FetchDescriptor<ExternalPhoto>()) == 0)
        _ = try container(url)
        #expect(attachmentFiles(of: url).isEmpty, "swept by the next open")
    }

    @Test("opening a store while another connection holds the write lock succeeds; the sweep waits for a later open")
    func openWhileAnotherSaves() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = try savePhoto(url)
        let orphan = externalBytes(threshold + 3, seed: 42)
        _ = try AttachmentDirectory(storePath: url.path).store(orphan, as: AttachmentReference(of: orphan))
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: url.path, configuration: configuration)
        try other.write { db in try db.execute(sql: "CREATE TABLE other (a); DROP TABLE other") }
        try other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        do {
            let container = try container(url)
            #expect(try ModelContext(container).fetch(FetchDescriptor<ExternalPhoto>()).first?.image == value)
        }
        #expect(attachmentFiles(of: url).contains(AttachmentReference(of: orphan).hex), "not swept while the lock was held")
        try other.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        try other.close()
        _ = try container(url)
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: value).hex])
    }

    @Test("a failed migration stage that deleted rows puts the store back with every file its rows name")
    func failedStageKeepsFiles() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("album.store")
        let value = externalBytes(threshold + 9)
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: AlbumV1.self), configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(AlbumV1.Picture(name: "a", image: value))
            try context.save()
        }
        #expect(throws: SwiftDataError.loadIssueModelContainer) {
            _ = try ModelContainer(
                for: Schema(versionedSchema: AlbumV2.self), migrationPlan: FailingAlbumPlan.self, configurations: ModelConfiguration(url: url))
        }
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: value).hex])
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: AlbumV1.self), configurations: ModelConfiguration(url: url))
            #expect(try ModelContext(container).fetch(FetchDescriptor<AlbumV1.Picture>()).first?.image == value)
        }
        // Completing, the stage's deletion frees the file, removed by the open that follows.
        _ = try ModelContainer(
            for: Schema(versionedSchema: AlbumV2.self), migrationPlan: AlbumPlan.self, configurations: ModelConfiguration(url: url))
        #expect(attachmentFiles(of: url).isEmpty)
    }

    @Test("while another process's migration stage may run (its copy of the store exists), neither a save nor the sweep removes a file")
    func stageInAnotherProcessKeepsFiles() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = try savePhoto(url)
        let hex = AttachmentReference(of: value).hex
        // What a stage in another process leaves while it runs: the copy it may put back.
        let backup = url.path + StoreFile.stageBackupSuffix
        #expect(FileManager.default.createFile(atPath: backup, contents: Data()))
        do {
            let context = ModelContext(try container(url))
            let photo = try #require(try context.fetch(FetchDescriptor<ExternalPhoto>()).first)
            context.delete(photo)
            try context.save()
            #expect(attachmentFiles(of: url) == [hex], "the copy may name it")
        }
        _ = try container(url)
        #expect(attachmentFiles(of: url) == [hex], "not swept while the copy exists")
        try FileManager.default.removeItem(atPath: backup)
        _ = try container(url)
        #expect(attachmentFiles(of: url).isEmpty, "swept once the stage is over")
    }

    @Test("a read holds the lock file now at its path, even after the one it held before was removed and made again")
    func readLockFollowsARecreatedLockFile() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        _ = try savePhoto(url)
        let container = try container(url)
        // A first read opens (and caches) the lock file's descriptor.
        _ = try ModelContext(container).fetchCount(FetchDescriptor<ExternalPhoto>())
        let attachmentDirectory = AttachmentDirectory(storePath: url.path)
        #expect(unlink(attachmentDirectory.lockPath) == 0)
        try attachmentDirectory.prepare()
        let held = try container.store.read { _ in
            // What another process's removal does: take the new lock file exclusively.
            let other = open(attachmentDirectory.lockPath, O_RDWR | O_CLOEXEC)
            defer { close(other) }
            return flock(other, LOCK_EX | LOCK_NB) != 0
        }
        #expect(held, "the read holds the lock file that is at the path now")
    }

    @Test("while another process's read holds the lock file, a retry at the end of a read opens no write transaction")
    func retryWithoutTransactionWhileLockBusy() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = try savePhoto(url)
        let container = try container(url)
        let context = ModelContext(container)
        let photo = try #require(try context.fetch(FetchDescriptor<ExternalPhoto>()).first)
        // Another process's read: the lock file held shared through a descriptor of its own.
        let other = open(AttachmentDirectory(storePath: url.path).lockPath, O_RDWR | O_CLOEXEC)
        #expect(other >= 0 && flock(other, LOCK_SH) == 0)
        context.delete(photo)
        try context.save()
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: value).hex], "the other read holds it")
        let statements = Mutex<[String]>([])
        try container.store.writer.writeWithoutTransaction { db in
            db.trace { event in statements.withLock { $0.append("\(event)") } }
        }
        _ = try context.fetchCount(FetchDescriptor<ExternalPhoto>())
        try container.store.writer.writeWithoutTransaction { _ in }
        #expect(!statements.withLock { $0.contains { $0.uppercased().contains("BEGIN") } }, "no transaction while the lock is busy")
        close(other)
        _ = try context.fetchCount(FetchDescriptor<ExternalPhoto>())
        try container.store.writer.writeWithoutTransaction { db in db.trace(options: [], nil) }
        #expect(attachmentFiles(of: url).isEmpty, "removed once the lock is free")
    }

    #if os(Linux)
    @Test("when a file cannot be mapped it is read instead, with the same value")
    func readWithoutMapping() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = try savePhoto(url)
        let container = try container(url)
        let attachments = try #require(container.store.attachments)
        attachments.state.withLock { $0.mapsFiles = false }
        let image = try #require(try ModelContext(container).fetch(FetchDescriptor<ExternalPhoto>()).first?.image)
        #expect(image == value)
        let hex = AttachmentReference(of: value).hex
        // Read to its end: `String(contentsOfFile:)` stops after the first page of a /proc file.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
        let maps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try handle.close()
        #expect(!maps.contains(hex), "read, not mapped")
    }
    #endif

    @Test("a file that cannot be read is a store failure, not missing data")
    func unreadableFile() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("photos.store")
        let value = try savePhoto(url)
        let path = AttachmentDirectory(storePath: url.path).filePath(of: AttachmentReference(of: value))
        try FileManager.default.removeItem(atPath: path)
        // A link to itself: opening it fails with ELOOP, an error other than a missing file.
        #expect(symlink(path, path) == 0)
        do {
            _ = try ModelContext(try container(url)).fetch(FetchDescriptor<ExternalPhoto>())
            Issue.record("the fetch succeeded")
        } catch let error as SwiftDataError {
            #expect(error == .storeFailure)
            #expect(error.entityName == "ExternalPhoto" && error.propertyName == "image")
        }
    }

    @Test("a store of several files: a file goes from beside the file whose row dropped it, and each directory is swept at open")
    func severalFilesCollectAndSweep() throws {
        let directory = try TemporaryDirectory()
        let photos = directory.file("photos.store")
        let docs = directory.file("docs.store")
        func open() throws -> ModelContainer {
            try ModelContainer(
                for: Schema([ExternalPhoto.self, ExternalDocsV2.ExternalDoc.self]),
                configurations: ModelConfiguration("Photos", schema: Schema([ExternalPhoto.self]), url: photos),
                ModelConfiguration("Docs", schema: Schema([ExternalDocsV2.ExternalDoc.self]), url: docs))
        }
        let photo = externalBytes(threshold + 1, seed: 1)
        let doc = externalBytes(threshold + 1, seed: 2)
        do {
            let context = ModelContext(try open())
            context.insert(ExternalPhoto(name: "a", code: 1, image: photo))
            let stored = ExternalDocsV2.ExternalDoc(name: "d", body: doc)
            context.insert(stored)
            try context.save()
            // No history names it once the history is gone.
            try context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>())
            context.delete(stored)
            try context.save()
            #expect(attachmentFiles(of: docs).isEmpty, "removed from beside docs.store")
            #expect(attachmentFiles(of: photos) == [AttachmentReference(of: photo).hex])
        }
        let orphan = externalBytes(threshold + 1, seed: 3)
        _ = try AttachmentDirectory(storePath: docs.path).store(orphan, as: AttachmentReference(of: orphan))
        _ = try AttachmentDirectory(storePath: photos.path).store(orphan, as: AttachmentReference(of: orphan))
        let container = try open()
        #expect(attachmentFiles(of: docs).isEmpty)
        #expect(attachmentFiles(of: photos) == [AttachmentReference(of: photo).hex])
        #expect(try ModelContext(container).fetch(FetchDescriptor<ExternalPhoto>()).first?.image == photo)
    }
}
