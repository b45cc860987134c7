import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

/// A chat message whose read receipts each reader's device appends to, offline.
@Model
final class MessageEntity {
    @Attribute(.unique) var messageID: String
    var body: String = ""
    var readBy: [String] = []
    var reactions: [Reaction] = []
    var score: Int = 0

    init(messageID: String) {
        self.messageID = messageID
    }
}

/// An element with several keys: its identity is its JSON with sorted keys.
struct Reaction: Codable, Hashable {
    var emoji: String
    var by: String
}

/// A conversation whose admins add and remove participants.
@Model
final class ConversationEntity {
    @Attribute(.unique) var conversationID: String
    var title: String = ""
    var participantIDs: Set<String> = []

    init(conversationID: String) {
        self.conversationID = conversationID
    }
}

extension SyncConfiguration {
    /// Messages and conversations, with `readBy`, `reactions` and `participantIDs` declared as
    /// sets unless `merging` is false (an older version of the app, which writes them whole).
    static func chat(merging: Bool = true) -> SyncConfiguration {
        var configuration = SyncConfiguration()
        configuration.sync(MessageEntity.self)
        configuration.sync(ConversationEntity.self)
        if merging {
            configuration.merge(\MessageEntity.readBy, .set)
            configuration.merge(\MessageEntity.reactions, .set)
            configuration.merge(\ConversationEntity.participantIDs, .set)
        }
        configuration.pollInterval = .seconds(3600)
        return configuration
    }
}

extension LoopbackServer {
    /// A device of the chat app whose engine talks HTTP to this server.
    func chatDevice(_ name: String, user: String = "alice", merging: Bool = true) throws -> Device {
        let url = directory.file("\(name).sqlite")
        let container = try ModelContainer(
            for: Schema([MessageEntity.self, ConversationEntity.self]), configurations: ModelConfiguration(url: url))
        let verifier = server.verifier
        let transport = HTTPSyncTransport(server: self.url) { try await verifier.mint(user: user) }
        let engine = try SyncEngine(
            container: container, transport: transport, user: user, configuration: .chat(merging: merging), clock: SystemSyncClock(),
            seed: seed(of: name + user))
        return Device(url: url, container: container, engine: engine, inMemory: nil, context: ModelContext(container))
    }
}

extension Device {
    /// A device of the chat app on the server core, through an in-memory transport.
    static func chat(_ server: TestServer, name: String, directory: TemporaryDirectory, merging: Bool = true) throws -> Device {
        let url = directory.file("\(name).sqlite")
        let container = try ModelContainer(
            for: Schema([MessageEntity.self, ConversationEntity.self]), configurations: ModelConfiguration(url: url))
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        let engine = try SyncEngine(
            container: container, transport: transport, user: "alice", configuration: .chat(merging: merging), clock: server.clock,
            seed: seed(of: name))
        return Device(url: url, container: container, engine: engine, inMemory: transport, context: ModelContext(container))
    }

    /// The device's message `id`.
    func message(_ id: String = "m1") throws -> MessageEntity {
        try #require(try context.fetch(FetchDescriptor<MessageEntity>()).first { $0.messageID == id })
    }

    /// The device's conversation `id`.
    func conversation(_ id: String = "c1") throws -> ConversationEntity {
        try #require(try context.fetch(FetchDescriptor<ConversationEntity>()).first { $0.conversationID == id })
    }

    /// `readBy` as the store holds it (a fresh context reads the row).
    func storedReadBy(_ id: String = "m1") throws -> [String]? {
        try ModelContext(container).fetch(FetchDescriptor<MessageEntity>()).first { $0.messageID == id }?.readBy
    }
}

@Suite("Sets: arrays and Sets whose concurrent adds and removes all apply")
struct SetMergeTests {
    @Test("read receipts: two devices append to readBy concurrently, offline; both receipts are kept, in the same order on both")
    func readReceipts() async throws {
        try await LoopbackServer.run { server in
            let phone = try server.chatDevice("phone")
            let laptop = try server.chatDevice("laptop")
            phone.context.insert(MessageEntity(messageID: "m1"))
            try phone.context.save()
            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()
            #expect(try laptop.message().readBy == [])

            try phone.message().readBy.append("bob")
            try phone.context.save()
            try laptop.message().readBy.append("carol")
            try laptop.context.save()
            #expect(try phone.message().readBy == ["bob"])
            #expect(try laptop.message().readBy == ["carol"])

            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()
            try await phone.engine.syncNow()
            #expect(try phone.message().readBy == ["bob", "carol"])
            #expect(try laptop.message().readBy == ["bob", "carol"])
            #expect(try laptop.storedReadBy() == ["bob", "carol"])
        }
    }

    @Test("participants: two admins add to a conversation's participantIDs (a Set) concurrently; both are added everywhere")
    func participants() async throws {
        try await LoopbackServer.run { server in
            let admin1 = try server.chatDevice("admin1")
            let admin2 = try server.chatDevice("admin2")
            let conversation = ConversationEntity(conversationID: "c1")
            conversation.participantIDs = ["ann"]
            admin1.context.insert(conversation)
            try admin1.context.save()
            try await admin1.engine.syncNow()
            try await admin2.engine.syncNow()
            #expect(try admin2.conversation().participantIDs == ["ann"])

            try admin1.conversation().participantIDs.insert("bob")
            try admin1.context.save()
            try admin2.conversation().participantIDs.insert("carol")
            try admin2.conversation().participantIDs.insert("dave")
            try admin2.context.save()
            try await admin2.engine.syncNow()
            try await admin1.engine.syncNow()
            try await admin2.engine.syncNow()
            #expect(try admin1.conversation().participantIDs == ["ann", "bob", "carol", "dave"])
            #expect(try admin2.conversation().participantIDs == ["ann", "bob", "carol", "dave"])
        }
    }

    @Test("an add concurrent with a remove of the same element wins, whichever reaches the server first")
    func addWins() async throws {
        for removeFirst in [true, false] {
            let directory = try TemporaryDirectory()
            let server = try await TestServer()
            let a = try Device.chat(server, name: "a", directory: directory)
            let b = try Device.chat(server, name: "b", directory: directory)
            let c = try Device.chat(server, name: "c", directory: directory)
            a.context.insert(MessageEntity(messageID: "m1"))
            try a.context.save()
            try await a.engine.syncNow()
            try await c.engine.syncNow()
            // a adds bob; b sees it and removes it; c, which never saw it, adds bob meanwhile.
            try a.message().readBy.append("bob")
            try a.context.save()
            try await a.engine.syncNow()
            try await b.engine.syncNow()
            #expect(try b.message().readBy == ["bob"])
            try b.message().readBy.removeAll { $0 == "bob" }
            try b.context.save()
            try c.message().readBy.append("bob")
            try c.context.save()
            if removeFirst {
                try await b.engine.syncNow()
                try await c.engine.syncNow()
            } else {
                try await c.engine.syncNow()
                try await b.engine.syncNow()
            }
            for device in [a, b, c] { try await device.engine.syncNow() }
            for device in [a, b, c] { #expect(try device.message().readBy == ["bob"], "remove first: \(removeFirst)") }
        }
    }

    @Test("removes of elements a device has seen apply everywhere, also two devices' concurrent removes")
    func removesApplyEverywhere() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let a = try Device.chat(server, name: "a", directory: directory)
        let b = try Device.chat(server, name: "b", directory: directory)
        let c = try Device.chat(server, name: "c", directory: directory)
        let message = MessageEntity(messageID: "m1")
        message.readBy = ["ann", "bob", "carol", "dave"]
        a.context.insert(message)
        try a.context.save()
        for device in [a, b, c] { try await device.engine.syncNow() }
        try a.message().readBy.removeAll { $0 == "bob" }
        try a.context.save()
        try b.message().readBy.removeAll { $0 == "dave" || $0 == "bob" }
        try b.context.save()
        for device in [a, b, c, a] { try await device.engine.syncNow() }
        for device in [a, b, c] { #expect(try device.message().readBy == ["ann", "carol"]) }
    }

    @Test("the order is the same on every device: the order in which the server took the adds")
    func identicalOrder() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let devices = try (0..<3).map { try Device.chat(server, name: "d\($0)", directory: directory) }
        devices[0].context.insert(MessageEntity(messageID: "m1"))
        try devices[0].context.save()
        for device in devices { try await device.engine.syncNow() }
        for (index, device) in devices.enumerated() {
            try device.message().readBy += ["z\(index)", "a\(index)"]
            try device.message().reactions.append(Reaction(emoji: "👍", by: "d\(index)"))
            try device.context.save()
        }
        for device in devices.reversed() { try await device.engine.syncNow() }
        for device in devices { try await device.engine.syncNow() }
        let expected = ["z2", "a2", "z1", "a1", "z0", "a0"]
        for device in devices {
            #expect(try device.message().readBy == expected)
            #expect(try device.message().reactions.map(\.by) == ["d2", "d1", "d0"])
        }
    }

    @Test("a pending add shows at once, and stays through a pull of others' adds without flicker, then settles in the server's order")
    func pendingAddVisibleAcrossPull() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.chat(server, name: "phone", directory: directory)
        let laptop = try Device.chat(server, name: "laptop", directory: directory)
        phone.context.insert(MessageEntity(messageID: "m1"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        laptop.transport.blockPushes = true
        try laptop.message().readBy.append("me")
        try laptop.context.save()
        #expect(try laptop.message().readBy == ["me"])
        try phone.message().readBy.append("other")
        try phone.context.save()
        try await phone.engine.syncNow()
        // The laptop pulls the phone's add while its own cannot be pushed: it shows both, its own last.
        _ = try? await laptop.engine.syncNow()
        #expect(try laptop.message().readBy == ["other", "me"])
        #expect(try laptop.storedReadBy() == ["other", "me"])
        laptop.transport.blockPushes = false
        try await laptop.engine.syncNow()
        #expect(try laptop.message().readBy == ["other", "me"])
        try await phone.engine.syncNow()
        #expect(try phone.message().readBy == ["other", "me"])
    }

    @Test("a rejected mutation rolls back only its own adds and removes: +a, +b (refused) and +c give a and c")
    func rejectionRollsBackOnlyItsOwnOp() async throws {
        var configuration = SyncServiceConfiguration()
        configuration.resolvers["MessageEntity"] = { input in
            input.change.fields["body"] == .string("spam") ? .refuse("messages may not be spam") : .usePolicy
        }
        let directory = try TemporaryDirectory()
        let server = try await TestServer(configuration: configuration)
        let phone = try Device.chat(server, name: "phone", directory: directory)
        let laptop = try Device.chat(server, name: "laptop", directory: directory)
        let events = EventLog(phone.engine)
        let message = MessageEntity(messageID: "m1")
        message.readBy = ["x"]
        phone.context.insert(message)
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        try phone.message().readBy.append("a")
        try phone.context.save()
        try phone.message().readBy.append("b")
        try phone.message().readBy.removeAll { $0 == "x" }
        try phone.message().body = "spam"
        try phone.context.save()
        try phone.message().readBy.append("c")
        try phone.context.save()
        #expect(try phone.message().readBy == ["a", "b", "c"])
        try laptop.message().readBy.append("l")
        try laptop.context.save()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        #expect(try phone.message().readBy == ["x", "l", "a", "c"])
        #expect(try phone.message().body == "")
        let rejected = await events.waitFor { if case .rejected = $0 { true } else { false } }
        guard case let .rejected(rejection)? = rejected else {
            Issue.record("no rejection reported")
            return
        }
        #expect(rejection.reason == .resolverRefused)
        try await laptop.engine.syncNow()
        #expect(try laptop.message().readBy == ["x", "l", "a", "c"])
    }

    @Test(
        "mixed versions: an older app that writes the array whole is merged when nobody else changed the record, and refused, naming the field, when that could lose elements"
    )
    func olderAppNeverLosesElements() async throws {
        try await LoopbackServer.run { server in
            let new = try server.chatDevice("new")
            let old = try server.chatDevice("old", merging: false)
            let oldEvents = EventLog(old.engine)
            let message = MessageEntity(messageID: "m1")
            message.readBy = ["ann", "bob"]
            new.context.insert(message)
            try new.context.save()
            try await new.engine.syncNow()
            try await old.engine.syncNow()

            // Nobody changed the record since the old app read it: its whole value is its change.
            try old.message().readBy = ["bob", "carol"]
            try old.context.save()
            try await old.engine.syncNow()
            try await new.engine.syncNow()
            #expect(try new.message().readBy == ["bob", "carol"])

            // The new app adds dave; the old app, which has not pulled it, writes its own list.
            try new.message().readBy.append("dave")
            try new.context.save()
            try await new.engine.syncNow()
            try old.message().readBy = ["carol"]
            try old.context.save()
            try await old.engine.syncNow()
            let rejected = await oldEvents.waitFor { if case .rejected = $0 { true } else { false } }
            guard case let .rejected(rejection)? = rejected else {
                Issue.record("the older app's overwrite was not refused")
                return
            }
            #expect(rejection.reason == .validation)
            #expect(rejection.message?.contains("readBy") == true)
            #expect(rejection.message?.contains("update the app") == true)
            // Nothing was lost: both devices show the new app's add.
            try await new.engine.syncNow()
            #expect(try new.message().readBy == ["bob", "carol", "dave"])
            #expect(try old.message().readBy == ["bob", "carol", "dave"])
        }
    }

    @Test(
        "a device restored from a backup taken while its insert was unanswered does not bring back, under a new client id, an element another device removed since"
    )
    func restoredDeviceInsertAddsNothingAgain() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.chat(server, name: "phone", directory: directory)
        try await phone.engine.syncNow()
        let message = MessageEntity(messageID: "m1")
        message.readBy = ["ann", "bob"]
        phone.context.insert(message)
        try phone.context.save()
        // The backup holds the insert unanswered; the phone then pushes it, and a later push
        // acknowledges its answer, which the server drops.
        try await directory.backUpStore("phone.sqlite", to: "restored.sqlite")
        try await phone.engine.syncNow()
        try phone.message().body = "Lunch?"
        try phone.context.save()
        try await phone.engine.syncNow()
        // The laptop removes bob.
        let laptop = try Device.chat(server, name: "laptop", directory: directory)
        try await laptop.engine.syncNow()
        try laptop.message().readBy.removeAll { $0 == "bob" }
        try laptop.context.save()
        try await laptop.engine.syncNow()

        // The restored device sends the insert again under a new client id: bob stays removed.
        let restored = try Device.chat(server, name: "restored", directory: directory)
        let clientBefore = await restored.engine.currentClientID
        try await restored.engine.syncNow()
        try await restored.engine.syncNow()
        #expect(await restored.engine.currentClientID != clientBefore)
        #expect(try restored.message().readBy == ["ann"])
        try await laptop.engine.syncNow()
        #expect(try laptop.message().readBy == ["ann"])
        try await phone.engine.syncNow()
        #expect(try phone.message().readBy == ["ann"])
    }

    @Test(
        "a device restored from a backup removes, under its new client id, an element it added under the old one: the element does not come back"
    )
    func restoredDeviceRemovesItsOwnEarlierAdd() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.chat(server, name: "phone", directory: directory)
        let message = MessageEntity(messageID: "m1")
        message.readBy = ["ann"]
        phone.context.insert(message)
        try phone.context.save()
        try await phone.engine.syncNow()
        // The phone adds bob; the backup holds that save unanswered.
        try phone.message().readBy.append("bob")
        try phone.context.save()
        try await directory.backUpStore("phone.sqlite", to: "restored.sqlite")
        // The add is applied under the phone's client id, and a later push acknowledges its
        // answer, which the server drops.
        try await phone.engine.syncNow()
        try phone.message().body = "Lunch?"
        try phone.context.save()
        try await phone.engine.syncNow()

        // The restored copy, which never pulled the add back, edits and then removes bob (a
        // remove based on the version from before the add), and syncs: it takes a new client id.
        let restored = try Device.chat(server, name: "restored", directory: directory)
        let clientBefore = await restored.engine.currentClientID
        try restored.message().body = "Dinner?"
        try restored.context.save()
        try restored.message().readBy.removeAll { $0 == "bob" }
        try restored.context.save()
        try await restored.engine.syncNow()
        try await restored.engine.syncNow()
        #expect(await restored.engine.currentClientID != clientBefore)
        #expect(try restored.message().readBy == ["ann"])
        try await phone.engine.syncNow()
        #expect(try phone.message().readBy == ["ann"])
    }

    @Test("undoing a save takes back only its own adds and removes")
    func undoTakesBackItsOwnChange() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.chat(server, name: "phone", directory: directory)
        let laptop = try Device.chat(server, name: "laptop", directory: directory)
        let message = MessageEntity(messageID: "m1")
        message.readBy = ["ann"]
        phone.context.insert(message)
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        phone.context.undoManager = UndoManager()
        try phone.message().readBy = ["bob"]
        try phone.context.save()
        try laptop.message().readBy.append("carol")
        try laptop.context.save()
        try await laptop.engine.syncNow()
        try await phone.engine.syncNow()
        // The laptop's add reached the server first.
        #expect(try phone.message().readBy == ["carol", "bob"])
        phone.context.undoManager?.undo()
        try phone.context.save()
        #expect(try phone.message().readBy == ["carol", "ann"])
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()
        #expect(try laptop.message().readBy == ["carol", "ann"])
        #expect(try phone.message().readBy == ["carol", "ann"])
    }

    @Test("setup errors name the property: .set on a type that is not an array or a Set")
    func setupErrors() throws {
        let directory = try TemporaryDirectory()
        let container = try ModelContainer(
            for: Schema([MessageEntity.self, ConversationEntity.self]), configurations: ModelConfiguration(url: directory.file("setup.sqlite")))
        func engine(_ declare: (inout SyncConfiguration) -> Void) throws {
            var configuration = SyncConfiguration()
            configuration.sync(MessageEntity.self)
            declare(&configuration)
            _ = try SyncEngine(container: container, transport: UnreachableTransport(), user: "alice", configuration: configuration)
        }
        for declare: (inout SyncConfiguration) -> Void in [{ $0.merge(\MessageEntity.body, .set) }, { $0.merge(\MessageEntity.score, .set) }] {
            let error = #expect(throws: SyncEngineError.self) { try engine(declare) }
            guard case let .mergeKindMismatch(entity, property, kind, reason)? = error else {
                Issue.record("not a mergeKindMismatch: \(String(describing: error))")
                continue
            }
            #expect(entity == "MessageEntity")
            #expect(property == "body" || property == "score")
            #expect(kind == .set)
            #expect(reason.contains("array or a Set"))
            #expect(error?.description.contains("MessageEntity.\(property)") == true)
        }
        try engine { $0.merge(\MessageEntity.readBy, .set) }
    }
}
