import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

@Suite("Saves over a server limit are held on the device, never rolled back", .serialized)
struct HeldSaveTests {
    @Test(
        "a 20 MB save against the default 8 MiB body limit stays on the device with a typed event; the queue behind it flows; it syncs once the server takes it"
    )
    func oversizedSaveIsHeld() async throws {
        let directory = try TemporaryDirectory()
        let big = String(repeating: "0123456789abcdef", count: 20 * 1024 * 1024 / 16)
        try await LoopbackServer.run(directory: directory) { server in
            let phone = try server.device("phone")
            let laptop = try server.device("laptop")
            let events = EventLog(phone.engine)
            let video = Note(title: "video")
            video.body = big
            phone.context.insert(video)
            try phone.context.save()
            phone.context.insert(Note(title: "after"))
            try phone.context.save()
            try await phone.engine.syncNow()

            let held = await events.waitFor { if case .held = $0 { return true } else { return false } }
            guard case let .held(save)? = held else {
                Issue.record("no held event: \(events.all)")
                return
            }
            #expect(save.limit == .bodySize)
            #expect(save.records.map(\.entity) == ["Note"])
            #expect(!events.all.contains { if case .rejected = $0 { return true } else { return false } })
            // Still on the device, whole; counted as pending and as held.
            let local = try phone.fetch(Note.self)
            #expect(local.map(\.title).sorted() == ["after", "video"])
            #expect(local.first { $0.title == "video" }?.body.count == big.count)
            #expect(try await phone.engine.pendingChangeCount() == 1)
            let status = phone.engine.status
            #expect(await MainActor.run { status.heldSaveCount } == 1)

            // The save behind it reached the server; the held one did not.
            try await laptop.engine.syncNow()
            #expect(try laptop.fetch(Note.self).map(\.title) == ["after"])

            // A later edit of the held record is held behind it (the server has no such record).
            let onPhone = try #require(try phone.context.fetch(FetchDescriptor<Note>()).first { $0.title == "video" })
            onPhone.title = "video, trimmed"
            try phone.context.save()
            try await phone.engine.syncNow()
            #expect(await MainActor.run { status.heldSaveCount } == 2)
            #expect(try phone.fetch(Note.self).map(\.title).sorted() == ["after", "video, trimmed"])
            await phone.engine.stop()
            await laptop.engine.stop()
        }

        // The operator raises the limit; the app's next launch sends the held saves, once.
        try await LoopbackServer.run(directory: directory, maxBodySize: 64 * 1024 * 1024) { server in
            let phone = try server.device("phone")
            try await phone.engine.syncNow()
            #expect(try await phone.engine.pendingChangeCount() == 0)
            let status = phone.engine.status
            #expect(await MainActor.run { status.heldSaveCount } == 0)
            let laptop = try server.device("laptop")
            try await laptop.engine.syncNow()
            let notes = try laptop.fetch(Note.self)
            #expect(notes.map(\.title).sorted() == ["after", "video, trimmed"])
            #expect(notes.first { $0.title == "video, trimmed" }?.body == big)
            await phone.engine.stop()
            await laptop.engine.stop()
        }
    }
}
