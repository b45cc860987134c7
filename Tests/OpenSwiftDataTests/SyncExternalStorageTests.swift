import Foundation
import OpenSwiftDataSyncProtocol
import Testing

@testable import OpenSwiftData

@Suite("Sync of .externalStorage values")
struct SyncExternalStorageTests {
    private func device(_ url: URL) throws -> ModelContainer {
        let container = try ModelContainer(for: SyncedPhoto.self, configurations: ModelConfiguration(url: url))
        try container.enableSyncCapture(SyncCaptureConfiguration(SyncedPhoto.self))
        return container
    }

    /// A stored remote reference to `data`: what a pulled blob is written as.
    private func remote(_ data: Data) throws -> SyncFieldValue {
        let reference = AttachmentReference(of: data)
        let attachment = try #require(SyncAttachment(digest: reference.hex, size: Int64(data.count)))
        return SyncFieldValue(kind: .data, stored: .blob(try #require(ModelContainer.syncStoredValue(of: attachment))))
    }

    private func attachment(_ data: Data) throws -> SyncAttachment {
        try #require(SyncAttachment(digest: AttachmentReference(of: data).hex, size: Int64(data.count)))
    }

    /// Writes `data` to a new file and returns its path.
    private func download(_ data: Data, for container: ModelContainer) throws -> String {
        let path = try container.syncAttachmentDownloadPath(
            for: try #require(SyncAttachment(digest: AttachmentReference(of: data).hex, size: Int64(data.count))))
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("capture logs a value kept in a file as its reference, and keeps the file until the upload")
    func captureLogsReferences() throws {
        let url = syncStoreURL()
        let sender = try device(url)
        let context = ModelContext(sender)
        let image = externalBytes(200_000, seed: 3)
        let photo = SyncedPhoto(title: "sea", image: image)
        context.insert(photo)
        try context.save()
        let replaced = externalBytes(150_000, seed: 4)
        photo.image = replaced
        try context.save()

        let changes = try sender.syncLogEntries().flatMap(\.changes)
        #expect(changes.count == 2)
        #expect(changes.first?.value(of: "image") == SyncFieldValue(kind: .data, stored: .blob(AttachmentReference(of: image).encoded)))
        #expect(changes.last?.value(of: "image") == SyncFieldValue(kind: .data, stored: .blob(AttachmentReference(of: replaced).encoded)))
        // The row names only the second; the first stays for its upload.
        #expect(try sender.pendingSyncAttachmentUploads() == [attachment(image), attachment(replaced)])
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: image).hex, AttachmentReference(of: replaced).hex].sorted())
        #expect(try sender.syncAttachmentFile(attachment(image)) != nil)

        // Uploaded: the first is named by nothing and goes, the second stays in its row.
        try sender.syncAttachmentUploaded(attachment(image))
        try sender.syncAttachmentUploaded(attachment(replaced))
        #expect(try sender.pendingSyncAttachmentUploads().isEmpty)
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: replaced).hex])
        #expect(try ModelContext(sender).fetch(FetchDescriptor<SyncedPhoto>()).first?.image == replaced)

        // A file pinned is kept by the sweep at open too.
        let again = SyncedPhoto(title: "dune", image: image)
        context.insert(again)
        try context.save()
        context.delete(again)
        try context.save()
        try context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(attachmentFiles(of: url).contains(AttachmentReference(of: image).hex))
    }

    @Test("a pulled blob reads as absent until its bytes arrive; bytes that are not its own are refused")
    func remoteReferences() throws {
        let url = syncStoreURL()
        let receiver = try device(url)
        let image = externalBytes(300_000, seed: 5)
        try receiver.applyRemoteChanges([
            .upsert(
                "SyncedPhoto", recordID: "p1", serverVersion: 1,
                fields: [
                    SyncField(name: "title", value: SyncFieldValue(kind: .string, stored: .text("sea"))),
                    SyncField(name: "image", value: try remote(image)),
                ])
        ])
        #expect(try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>()).first?.image == nil)
        #expect(try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>()).first?.title == "sea")
        #expect(try receiver.missingSyncAttachments() == [attachment(image)])
        #expect(attachmentFiles(of: url).isEmpty)

        var wrong = image
        wrong[0] ^= 0xFF
        #expect(throws: SyncAttachmentMismatch.self) {
            try receiver.syncAttachmentArrived(try attachment(image), file: try download(wrong, for: receiver))
        }
        #expect(try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>()).first?.image == nil)
        #expect(attachmentFiles(of: url).isEmpty)
        #expect(everyAttachmentEntry(of: url).isEmpty, "the refused download is removed")

        let context = ModelContext(receiver)
        let shown = try #require(try context.fetch(FetchDescriptor<SyncedPhoto>()).first)
        #expect(shown.image == nil)
        #expect(try receiver.syncAttachmentArrived(try attachment(image), file: try download(image, for: receiver)) == 1)
        #expect(try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>()).first?.image == image)
        // A context that showed the photo without its bytes shows them once it fetches again.
        #expect(try context.fetch(FetchDescriptor<SyncedPhoto>()).first?.image == image)
        #expect(shown.image == image)
        #expect(try receiver.missingSyncAttachments().isEmpty)
        #expect(attachmentFiles(of: url) == [AttachmentReference(of: image).hex])
        #expect(try storedBlobs(url, table: "SyncedPhoto", column: "image").first ?? nil == AttachmentReference(of: image).encoded)

        // A second record naming bytes that are here takes them at once.
        try receiver.applyRemoteChanges([
            .upsert(
                "SyncedPhoto", recordID: "p2", serverVersion: 2,
                fields: [
                    SyncField(name: "title", value: SyncFieldValue(kind: .string, stored: .text("copy"))),
                    SyncField(name: "image", value: try remote(image)),
                ])
        ])
        #expect(try receiver.missingSyncAttachments().isEmpty)
        let copy = try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>(predicate: #Predicate { $0.title == "copy" })).first
        #expect(copy?.image == image)
    }

    @Test("in memory, a pulled blob reads as absent and its bytes arrive into the row")
    func remoteReferencesInMemory() throws {
        let receiver = try ModelContainer(for: SyncedPhoto.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        try receiver.enableSyncCapture(SyncCaptureConfiguration(SyncedPhoto.self))
        let image = externalBytes(300_000, seed: 6)
        try receiver.applyRemoteChanges([
            .upsert(
                "SyncedPhoto", recordID: "p1", serverVersion: 1,
                fields: [
                    SyncField(name: "title", value: SyncFieldValue(kind: .string, stored: .text("sea"))),
                    SyncField(name: "image", value: try remote(image)),
                ])
        ])
        #expect(try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>()).first?.image == nil)
        #expect(try receiver.missingSyncAttachments() == [attachment(image)])
        #expect(try receiver.syncAttachmentArrived(try attachment(image), file: try download(image, for: receiver)) == 1)
        #expect(try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>()).first?.image == image)
        #expect(try receiver.missingSyncAttachments().isEmpty)
    }
}
