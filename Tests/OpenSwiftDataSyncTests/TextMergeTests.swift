import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

/// A note whose body several devices edit, offline.
@Model
final class Memo {
    @Attribute(.unique) var memoID: String
    var title: String = ""
    var body: String = ""
    var words: Int = 0

    init(memoID: String, body: String = "") {
        self.memoID = memoID
        self.body = body
    }
}

extension SyncConfiguration {
    /// Memos, with `body` declared as a text unless `merging` is false.
    static func memos(merging: Bool = true) -> SyncConfiguration {
        var configuration = SyncConfiguration()
        configuration.sync(Memo.self)
        if merging { configuration.merge(\Memo.body, .text) }
        configuration.pollInterval = .seconds(3600)
        return configuration
    }
}

extension LoopbackServer {
    /// A device of the memo app whose engine talks HTTP to this server.
    func memoDevice(_ name: String, user: String = "alice") throws -> Device {
        let url = directory.file("\(name).sqlite")
        let container = try ModelContainer(for: Schema([Memo.self]), configurations: ModelConfiguration(url: url))
        let verifier = server.verifier
        let transport = HTTPSyncTransport(server: self.url) { try await verifier.mint(user: user) }
        let engine = try SyncEngine(
            container: container, transport: transport, user: user, configuration: .memos(), clock: SystemSyncClock(), seed: seed(of: name + user))
        return Device(url: url, container: container, engine: engine, inMemory: nil, context: ModelContext(container))
    }
}

extension Device {
    /// A device of the memo app on the server core, through an in-memory transport.
    static func memos(_ server: TestServer, name: String, directory: TemporaryDirectory) throws -> Device {
        let url = directory.file("\(name).sqlite")
        let container = try ModelContainer(for: Schema([Memo.self]), configurations: ModelConfiguration(url: url))
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        let engine = try SyncEngine(
            container: container, transport: transport, user: "alice", configuration: .memos(), clock: server.clock, seed: seed(of: name))
        return Device(url: url, container: container, engine: engine, inMemory: transport, context: ModelContext(container))
    }

    /// The device's memo `id`.
    func memo(_ id: String = "m1") throws -> Memo {
        try #require(try context.fetch(FetchDescriptor<Memo>()).first { $0.memoID == id })
    }

    /// The memo's body as the store holds it (a fresh context reads the row).
    func storedBody(_ id: String = "m1") throws -> String? {
        try ModelContext(container).fetch(FetchDescriptor<Memo>()).first { $0.memoID == id }?.body
    }

    /// How many rows the device keeps for its texts' documents (checkpoints and operations).
    func textDocumentRows() throws -> Int {
        try DatabaseQueue(path: url.path).read { db in
            try Int.fetchOne(db, sql: "SELECT (SELECT count(*) FROM osd_sync_texts) + (SELECT count(*) FROM osd_sync_text_ops)") ?? 0
        }
    }
}

@Suite("Texts: concurrent edits of a String all apply, placed by identity")
struct TextMergeTests {
    @Test("a note's body edited offline on two devices keeps both paragraphs, the same on both, through a real server")
    func offlineParagraphs() async throws {
        try await LoopbackServer.run { server in
            let phone = try server.memoDevice("phone")
            let laptop = try server.memoDevice("laptop")
            phone.context.insert(Memo(memoID: "m1", body: "Shopping list.\n"))
            try phone.context.save()
            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()
            #expect(try laptop.memo().body == "Shopping list.\n")

            // Both offline: the phone writes a paragraph at the start, the laptop one at the end,
            // and each fixes a word of the line they both saw.
            try phone.memo().body = "Before leaving:\nShopping list.\n"
            try phone.context.save()
            try laptop.memo().body = "Shopping list!\nMilk, eggs.\n"
            try laptop.context.save()
            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()
            try await phone.engine.syncNow()

            let expected = "Before leaving:\nShopping list!\nMilk, eggs.\n"
            #expect(try phone.memo().body == expected)
            #expect(try laptop.memo().body == expected)
            #expect(try phone.storedBody() == expected)
            #expect(try laptop.storedBody() == expected)
        }
    }

    @Test("a pull shows another device's edit at once, with this device's unpushed keystrokes where they were typed")
    func unpushedKeystrokesStay() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: "The cat sat."))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        laptop.transport.blockPushes = true
        try laptop.memo().body = "The black cat sat."
        try laptop.context.save()
        try laptop.memo().body = "The black cat sat down."
        try laptop.context.save()
        try phone.memo().body = "Then the cat sat."
        try phone.context.save()
        try await phone.engine.syncNow()
        // The laptop pulls the phone's edit while its own cannot be pushed: both show.
        _ = try? await laptop.engine.syncNow()
        #expect(try laptop.memo().body == "Then the black cat sat down.")
        #expect(try laptop.storedBody() == "Then the black cat sat down.")
        laptop.transport.blockPushes = false
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try laptop.memo().body == "Then the black cat sat down.")
        #expect(try phone.memo().body == "Then the black cat sat down.")
    }

    @Test("text typed at the same place on two devices is kept whole, one run after the other, in the same order on both")
    func sameSpotNotInterleaved() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: "Dear team,\n"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        // Each types a sentence at the end in several saves, as keystrokes arrive.
        for word in ["We ", "ship ", "today. "] {
            try phone.memo().body += word
            try phone.context.save()
        }
        for word in ["Nous ", "livrons ", "👩🏽‍💻 demain. "] {
            try laptop.memo().body += word
            try laptop.context.save()
        }
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        let body = try phone.memo().body
        #expect(try laptop.memo().body == body)
        let runs = ["We ship today. ", "Nous livrons 👩🏽‍💻 demain. "]
        #expect(body == "Dear team,\n" + runs[0] + runs[1] || body == "Dear team,\n" + runs[1] + runs[0])
    }

    @Test("a rejected save's edit is taken back on the device; a later edit of the same text stays, on every device")
    func rejectedEditTakenBack() async throws {
        var configuration = SyncServiceConfiguration()
        configuration.resolvers["Memo"] = { input in
            input.change.fields["title"] == .string("spam") ? .refuse("titles may not be spam") : .usePolicy
        }
        let directory = try TemporaryDirectory()
        let server = try await TestServer(configuration: configuration)
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        let events = EventLog(phone.engine)
        phone.context.insert(Memo(memoID: "m1", body: "Hello"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        try phone.memo().body = "Hello world"
        try phone.memo().title = "spam"
        try phone.context.save()
        try phone.memo().body = "Oh. Hello world"
        try phone.context.save()
        try laptop.memo().body = "Hello!"
        try laptop.context.save()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        let rejected = await events.waitFor { if case .rejected = $0 { true } else { false } }
        #expect(rejected != nil)
        // A text is rolled back by downloading it again, which the next pull does.
        try await phone.engine.syncNow()
        #expect(try phone.memo().body == "Oh. Hello!")
        #expect(try phone.memo().title == "")
        try await laptop.engine.syncNow()
        #expect(try laptop.memo().body == "Oh. Hello!")
        // Typing on after the rollback uses new identities: none the server may already name.
        try phone.memo().body = "Oh. Hello! ok"
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        #expect(try laptop.memo().body == "Oh. Hello! ok")
    }

    @Test("a rejected delete brings the note back with its text, which both devices keep editing")
    func rejectedDeleteBringsTextBack() async throws {
        var configuration = SyncServiceConfiguration()
        configuration.resolvers["Memo"] = { input in input.change.op == .delete ? .refuse("memos are kept") : .usePolicy }
        let directory = try TemporaryDirectory()
        let server = try await TestServer(configuration: configuration)
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: "keep"))
        try phone.context.save()
        try phone.memo().body = "keep me"
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        phone.context.delete(try phone.memo())
        try phone.context.save()
        try await phone.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try phone.memo().body == "keep me")
        try phone.memo().body = "keep me please"
        try phone.context.save()
        try laptop.memo().body = "Do keep me"
        try laptop.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try phone.memo().body == "Do keep me please")
        #expect(try laptop.memo().body == "Do keep me please")
    }

    @Test("after the app restarts with unpushed edits, they still merge by identity with another device's")
    func restartKeepsDocuments() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        var phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: "one two three"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        phone.transport.blockPushes = true
        try phone.memo().body = "one two three four"
        try phone.context.save()
        await phone.engine.stop()
        phone = try Device.memos(server, name: "phone", directory: directory)
        try phone.memo().body = "zero one two three four"
        try phone.context.save()
        try laptop.memo().body = "one 2 three"
        try laptop.context.save()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        #expect(try phone.memo().body == "zero one 2 three four")
        #expect(try laptop.memo().body == "zero one 2 three four")
    }

    @Test("two devices that create the same note offline keep both texts, the same on both")
    func sameNoteCreatedTwice() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: "from the phone. "))
        try phone.context.save()
        laptop.context.insert(Memo(memoID: "m1", body: "from the laptop. "))
        try laptop.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try phone.memo().body == "from the phone. from the laptop. ")
        #expect(try laptop.memo().body == "from the phone. from the laptop. ")

        // Both keep editing the merged text by identity.
        try laptop.memo().body = "Both: from the phone. from the laptop. "
        try laptop.context.save()
        try phone.memo().body = "from the phone. from the laptop. Done."
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try phone.memo().body == "Both: from the phone. from the laptop. Done.")
        #expect(try laptop.memo().body == "Both: from the phone. from the laptop. Done.")
    }

    @Test("undoing a save takes back its own edit and keeps another device's edit pulled since; it syncs as an edit of its own")
    func undoWritesTextBack() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: "Hello"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        phone.context.undoManager = UndoManager()
        try phone.memo().body = "Hello world"
        try phone.memo().words = 2
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        #expect(try laptop.memo().body == "Hello world")
        // The laptop's edit lands on the phone before the undo: the undo takes back the phone's
        // own edit only.
        try laptop.memo().body = "Oh. Hello world"
        try laptop.context.save()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try phone.memo().body == "Oh. Hello world")
        phone.context.undoManager?.undo()
        #expect(try phone.memo().body == "Oh. Hello")
        #expect(try phone.memo().words == 0)
        try phone.context.save()
        #expect(try phone.storedBody() == "Oh. Hello")
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        #expect(try laptop.memo().body == "Oh. Hello")
        phone.context.undoManager?.redo()
        #expect(try phone.memo().body == "Oh. Hello world")
    }

    @Test("a note created on two devices, one of them empty, takes the server's identities even when the text reads the same")
    func sameTextOtherIdentities() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: ""))
        try phone.context.save()
        laptop.context.insert(Memo(memoID: "m1", body: "x"))
        try laptop.context.save()
        try await phone.engine.syncNow()
        // The server appends the laptop's "x" under its own identities: the laptop's text reads
        // "x" before and after, but its identities change.
        try await laptop.engine.syncNow()
        try laptop.memo().body = "y"
        try laptop.context.save()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try laptop.memo().body == "y")
        #expect(try phone.memo().body == "y")
    }

    @Test("deleting a note removes its text's document from the device")
    func deleteRemovesDocuments() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: "a"))
        phone.context.insert(Memo(memoID: "m2", body: "b"))
        try phone.context.save()
        try phone.memo("m1").body = "ab"
        try phone.memo("m2").body = "bc"
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        // The laptop pulled both notes' inserts and edits in one page.
        #expect(try laptop.memo("m1").body == "ab")
        #expect(try laptop.memo("m2").body == "bc")
        #expect(try phone.textDocumentRows() > 0)
        #expect(try laptop.textDocumentRows() > 0)
        phone.context.delete(try phone.memo("m1"))
        try phone.context.save()
        try phone.context.delete(model: Memo.self)
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        #expect(try phone.textDocumentRows() == 0)
        #expect(try laptop.textDocumentRows() == 0)
        #expect(try laptop.context.fetch(FetchDescriptor<Memo>()).isEmpty)
    }

    @Test("a device's own edits coming back from the server are not stored again; another device's are")
    func echoesNotStoredAgain() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.memos(server, name: "phone", directory: directory)
        let laptop = try Device.memos(server, name: "laptop", directory: directory)
        phone.context.insert(Memo(memoID: "m1", body: "a"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        for body in ["ab", "abc", "abcd"] {
            try phone.memo().body = body
            try phone.context.save()
        }
        let typed = try phone.textDocumentRows()
        // The push's echoes come back in the pull: the document holds them already.
        try await phone.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try phone.textDocumentRows() == typed)
        #expect(try phone.memo().body == "abcd")
        // The laptop's edit is new to the phone: stored, and shown.
        let before = try laptop.textDocumentRows()
        try await laptop.engine.syncNow()
        #expect(try laptop.textDocumentRows() > before)
        try laptop.memo().body = "Xabcd"
        try laptop.context.save()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try phone.textDocumentRows() == typed + 1)
        #expect(try phone.memo().body == "Xabcd")
    }
}
