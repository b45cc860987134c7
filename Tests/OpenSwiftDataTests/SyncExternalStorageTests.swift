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

    @Test("capture logs a value kept in a file as its bytes, and applying it keeps it in a file on the other device")
    func roundTrip() throws {
        let first = syncStoreURL()
        let second = syncStoreURL()
        let sender = try device(first)
        let context = ModelContext(sender)
        let image = externalBytes(200_000, seed: 3)
        let photo = SyncedPhoto(title: "sea", image: image)
        context.insert(photo)
        try context.save()
        #expect(attachmentFiles(of: first).count == 1, "kept in a file on the sending device")
        let replaced = externalBytes(150_000, seed: 4)
        photo.image = replaced
        try context.save()

        let changes = try sender.syncLogEntries().flatMap(\.changes)
        #expect(changes.count == 2)
        let insert = try #require(changes.first)
        #expect(insert.value(of: "image") == SyncFieldValue(kind: .data, stored: .blob(image)))
        #expect(changes.last?.value(of: "image") == SyncFieldValue(kind: .data, stored: .blob(replaced)))

        let receiver = try device(second)
        let fields = [
            SyncField(name: "title", value: SyncFieldValue(kind: .string, stored: .text("sea"))),
            SyncField(name: "image", value: SyncFieldValue(kind: .data, stored: .blob(image))),
        ]
        try receiver.applyRemoteChanges([.upsert("SyncedPhoto", recordID: insert.recordID, serverVersion: 1, fields: fields)])
        #expect(try storedBlobs(second, table: "SyncedPhoto", column: "image").first??.count == 56, "a reference in the row")
        #expect(attachmentFiles(of: second).count == 1)
        #expect(try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>()).first?.image == image)

        // An update of the field through the model's setters: the new value in a file, the old
        // one collected.
        try receiver.applyRemoteChanges([
            .upsert(
                "SyncedPhoto", recordID: insert.recordID, serverVersion: 2,
                fields: [SyncField(name: "image", value: SyncFieldValue(kind: .data, stored: .blob(replaced)))])
        ])
        #expect(try ModelContext(receiver).fetch(FetchDescriptor<SyncedPhoto>()).first?.image == replaced)
        #expect(attachmentFiles(of: second) == [AttachmentReference(of: replaced).hex])
        #expect(try storedBlobs(second, table: "SyncedPhoto", column: "image").first??.count == 56)
    }
}
