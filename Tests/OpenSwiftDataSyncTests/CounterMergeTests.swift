import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

/// A FAQ entry whose use count the user's devices increment, each offline.
@Model
final class FAQEntry {
    @Attribute(.unique) var key: String
    var answer: String = ""
    var usageCount: Int = 0
    var rating: Double = 0
    var published: Bool = false
    var tags: [String] = []
    var views: Int? = nil
    var shortCount: Int32 = 0
    var weight: Float = 0

    init(key: String) {
        self.key = key
    }
}

extension SyncConfiguration {
    /// FAQ entries, with `usageCount` (and `rating`) declared as counters unless `merging` is
    /// false (an older version of the app, which writes them whole).
    static func faq(merging: Bool = true, pageSize: Int? = nil) -> SyncConfiguration {
        var configuration = SyncConfiguration()
        if let pageSize { configuration.pullPageSize = pageSize }
        configuration.sync(FAQEntry.self)
        if merging {
            configuration.merge(\FAQEntry.usageCount, .counter)
            configuration.merge(\FAQEntry.rating, .counter)
        }
        configuration.pollInterval = .seconds(3600)
        return configuration
    }
}

extension LoopbackServer {
    /// A device of the FAQ app whose engine talks HTTP to this server.
    func faqDevice(_ name: String, user: String = "alice", merging: Bool = true) throws -> Device {
        let url = directory.file("\(name).sqlite")
        let container = try ModelContainer(for: Schema([FAQEntry.self]), configurations: ModelConfiguration(url: url))
        let verifier = server.verifier
        let transport = HTTPSyncTransport(server: self.url) { try await verifier.mint(user: user) }
        let engine = try SyncEngine(
            container: container, transport: transport, user: user, configuration: .faq(merging: merging), clock: SystemSyncClock(),
            seed: seed(of: name + user))
        return Device(url: url, container: container, engine: engine, inMemory: nil, context: ModelContext(container))
    }
}

extension Device {
    /// A device of the FAQ app on the server core, through an in-memory transport.
    static func faq(_ server: TestServer, name: String, directory: TemporaryDirectory, merging: Bool = true, pageSize: Int? = nil) throws -> Device {
        let url = directory.file("\(name).sqlite")
        let container = try ModelContainer(for: Schema([FAQEntry.self]), configurations: ModelConfiguration(url: url))
        let transport = InMemorySyncTransport(service: server.service, user: "alice")
        let engine = try SyncEngine(
            container: container, transport: transport, user: "alice", configuration: .faq(merging: merging, pageSize: pageSize), clock: server.clock,
            seed: seed(of: name))
        return Device(url: url, container: container, engine: engine, inMemory: transport, context: ModelContext(container))
    }

    /// The device's FAQ entry `key`.
    func entry(_ key: String = "reset-password") throws -> FAQEntry {
        try #require(try context.fetch(FetchDescriptor<FAQEntry>()).first { $0.key == key })
    }
}

@Suite("Counters: fields that merge by adding each save's difference")
struct CounterMergeTests {
    @Test("the FAQ scenario: phone and laptop both increment usageCount offline, both sync, both end with the sum")
    func faqScenario() async throws {
        try await LoopbackServer.run { server in
            let phone = try server.faqDevice("phone")
            let laptop = try server.faqDevice("laptop")
            phone.context.insert(FAQEntry(key: "reset-password"))
            try phone.context.save()
            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()
            #expect(try laptop.entry().usageCount == 0)

            // Offline, each device counts its own uses, and shows them at once.
            try phone.entry().usageCount += 1
            try phone.context.save()
            try phone.entry().usageCount += 1
            try phone.context.save()
            try laptop.entry().usageCount += 1
            try laptop.context.save()
            #expect(try phone.entry().usageCount == 2)
            #expect(try laptop.entry().usageCount == 1)

            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()
            try await phone.engine.syncNow()
            #expect(try phone.entry().usageCount == 3)
            #expect(try laptop.entry().usageCount == 3)
            // The stores hold it too (a fresh context reads the row).
            let fresh = ModelContext(laptop.container)
            #expect(try fresh.fetch(FetchDescriptor<FAQEntry>()).first?.usageCount == 3)
        }
    }

    @Test("setting a counter outright is a difference: 5 set to 0 on one device while another adds 1 ends at 1 everywhere")
    func settingOutrightIsADifference() async throws {
        try await LoopbackServer.run { server in
            let phone = try server.faqDevice("phone")
            let laptop = try server.faqDevice("laptop")
            let entry = FAQEntry(key: "reset-password")
            entry.usageCount = 5
            entry.rating = 1.5
            phone.context.insert(entry)
            try phone.context.save()
            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()

            try phone.entry().usageCount = 0  // markAsRead(): seen 5, so -5
            try phone.entry().rating = 0.5  // seen 1.5, so -1.0
            try phone.context.save()
            try laptop.entry().usageCount += 1
            try laptop.entry().rating += 0.25
            try laptop.context.save()
            try await laptop.engine.syncNow()
            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()
            #expect(try phone.entry().usageCount == 1)
            #expect(try laptop.entry().usageCount == 1)
            #expect(try phone.entry().rating == 0.75)
            #expect(try laptop.entry().rating == 0.75)
        }
    }

    @Test("two contexts of one device: the second save adds its own difference to what the first saved")
    func twoContextsAddUp() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let device = try Device.faq(server, name: "phone", directory: directory)
        device.context.insert(FAQEntry(key: "reset-password"))
        try device.context.save()
        let other = ModelContext(device.container)
        let seenByOther = try #require(try other.fetch(FetchDescriptor<FAQEntry>()).first)
        #expect(seenByOther.usageCount == 0)
        try device.entry().usageCount += 2
        try device.context.save()
        // The other context still shows 0 and adds 1: the row gets 3, and so does its model.
        seenByOther.usageCount += 1
        try other.save()
        #expect(seenByOther.usageCount == 3)
        try await device.engine.syncNow()
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 3)
    }

    @Test("a pull shows others' increments at once with this device's unpushed ones on top, with no flicker")
    func unpushedIncrementsStayVisible() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.faq(server, name: "phone", directory: directory)
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        phone.context.insert(FAQEntry(key: "reset-password"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        laptop.transport.blockPushes = true
        try laptop.entry().usageCount += 1
        try laptop.context.save()
        try laptop.entry().usageCount += 1
        try laptop.context.save()
        try phone.entry().usageCount += 5
        try phone.context.save()
        try await phone.engine.syncNow()
        // The laptop pulls the phone's +5 while its own +2 cannot be pushed: it shows 7.
        _ = try? await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 7)
        #expect(try ModelContext(laptop.container).fetch(FetchDescriptor<FAQEntry>()).first?.usageCount == 7)
        laptop.transport.blockPushes = false
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 7)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 7)
    }

    @Test("a record this device inserted and has not settled shows others' contributions at once, its inserted value counted once")
    func unsettledInsertShowsOthersContributions() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.faq(server, name: "phone", directory: directory)
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        try await phone.engine.syncNow()
        let first = FAQEntry(key: "reset-password")
        first.usageCount = 3
        laptop.context.insert(first)
        try laptop.context.save()
        try await laptop.engine.syncNow()

        // The phone creates the same entry at 5 and cannot push: it shows the laptop's 3 with
        // its 5 on top, which the server adds when the insert arrives.
        let second = FAQEntry(key: "reset-password")
        second.usageCount = 5
        phone.context.insert(second)
        try phone.context.save()
        phone.transport.blockPushes = true
        _ = try? await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 8)
        // The insert is applied, its answer lost; the laptop adds 2: the phone shows the total,
        // which holds its 5 already.
        phone.transport.blockPushes = false
        phone.transport.onPush { _, result in
            _ = try result.get()
            throw SyncTransportError.unreachable("the answer was lost")
        }
        _ = try? await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 8)
        try await laptop.engine.syncNow()
        try laptop.entry().usageCount += 2
        try laptop.context.save()
        try await laptop.engine.syncNow()
        _ = try? await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 10)
        phone.transport.onPush(nil)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 10)
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 10)
    }

    @Test("a device restored from a backup taken while a contribution was unanswered does not count it again under a new client id")
    func restoredDeviceCountsOnce() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.faq(server, name: "phone", directory: directory)
        phone.context.insert(FAQEntry(key: "reset-password"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try phone.entry().usageCount += 1
        try phone.context.save()
        // The backup holds the +1 unanswered; the phone then pushes it, and a later push
        // acknowledges its answer, which the server drops.
        try await directory.backUpStore("phone.sqlite", to: "restored.sqlite")
        try await phone.engine.syncNow()
        try phone.entry().answer = "Use the link in the mail."
        try phone.context.save()
        try await phone.engine.syncNow()

        let restored = try Device.faq(server, name: "restored", directory: directory)
        let clientBefore = await restored.engine.currentClientID
        try await restored.engine.syncNow()
        try await restored.engine.syncNow()
        #expect(await restored.engine.currentClientID != clientBefore)
        #expect(try restored.entry().usageCount == 1)
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 1)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 1)
    }

    @Test(
        "a device restored from a backup taken while its insert of a counter was unanswered does not add the inserted value again under a new client id"
    )
    func restoredDeviceInsertCountsOnce() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.faq(server, name: "phone", directory: directory)
        try await phone.engine.syncNow()
        let entry = FAQEntry(key: "reset-password")
        entry.usageCount = 5
        phone.context.insert(entry)
        try phone.context.save()
        // The backup holds the insert unanswered; the phone then pushes it, and a later push
        // acknowledges its answer, which the server drops.
        try await directory.backUpStore("phone.sqlite", to: "restored.sqlite")
        try await phone.engine.syncNow()
        try phone.entry().answer = "Use the link in the mail."
        try phone.context.save()
        try await phone.engine.syncNow()

        // The restored device sends the insert again under a new client id: the server already
        // holds the entry, and adds nothing to it.
        let restored = try Device.faq(server, name: "restored", directory: directory)
        let clientBefore = await restored.engine.currentClientID
        try await restored.engine.syncNow()
        try await restored.engine.syncNow()
        #expect(await restored.engine.currentClientID != clientBefore)
        #expect(try restored.entry().usageCount == 5)
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 5)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 5)
    }

    @Test("a contribution whose push answer was lost is counted once, also by a later pull of others' increments while it is unanswered")
    func lostAnswerIsCountedOnce() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.faq(server, name: "phone", directory: directory)
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        phone.context.insert(FAQEntry(key: "reset-password"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        // The server applies the phone's +1, and the answer never arrives.
        phone.transport.onPush { _, result in
            _ = try result.get()
            throw SyncTransportError.unreachable("the answer was lost")
        }
        try phone.entry().usageCount += 1
        try phone.context.save()
        _ = try? await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 1)
        try laptop.entry().usageCount += 10
        try laptop.context.save()
        try await laptop.engine.syncNow()
        // Pulled again while the +1 is still unanswered: the total counts it already.
        _ = try? await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 11)
        phone.transport.onPush(nil)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 11)
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 11)
    }

    @Test("a pull of several pages counts an unanswered contribution once: a later page's total of the record already holds it")
    func multiPagePullCountsOnce() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.faq(server, name: "phone", directory: directory, pageSize: 1)
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        phone.context.insert(FAQEntry(key: "reset-password"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        // The server applies the phone's +1, and the answer never arrives.
        phone.transport.onPush { _, result in
            _ = try result.get()
            throw SyncTransportError.unreachable("the answer was lost")
        }
        try phone.entry().usageCount += 1
        try phone.context.save()
        _ = try? await phone.engine.syncNow()
        // The laptop adds 10, then saves two other entries: the phone pulls one change a page,
        // the laptop's +10 on a page that is not the last.
        try laptop.entry().usageCount += 10
        try laptop.context.save()
        laptop.context.insert(FAQEntry(key: "second"))
        try laptop.context.save()
        laptop.context.insert(FAQEntry(key: "third"))
        try laptop.context.save()
        try await laptop.engine.syncNow()
        _ = try? await phone.engine.syncNow()
        let shown = try phone.entry().usageCount
        #expect(shown == 11)
        phone.transport.onPush(nil)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 11)
    }

    @Test(
        "a counter inserted and incremented, both settled by a pull whose total another device changed, shows that total (simulator seed 5741)"
    )
    func insertAndIncrementSettledTogether() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let phone = try Device.faq(server, name: "phone", directory: directory)
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        try await phone.engine.syncNow()

        // The phone creates the entry at 0 and adds 2; both are pushed, and its pull fails.
        phone.context.insert(FAQEntry(key: "reset-password"))
        try phone.context.save()
        try phone.entry().usageCount += 2
        try phone.context.save()
        phone.transport.onPull { _ in throw SyncTransportError.unreachable("the pull was lost") }
        _ = try? await phone.engine.syncNow()
        // The laptop sets the counter back to 0 (−2).
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 2)
        try laptop.entry().usageCount = 0
        try laptop.context.save()
        try await laptop.engine.syncNow()

        // The phone's next pull settles its insert and its +2 together, with a total of 0.
        phone.transport.onPull(nil)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 0)
        #expect(try laptop.entry().usageCount == 0)
    }

    @Test("after the app restarts, a pull of several pages still counts an unanswered contribution once")
    func multiPagePullAfterRestartCountsOnce() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        do {
            let phone = try Device.faq(server, name: "phone", directory: directory, pageSize: 1)
            phone.context.insert(FAQEntry(key: "reset-password"))
            try phone.context.save()
            try await phone.engine.syncNow()
            try await laptop.engine.syncNow()
            // The server applies the phone's +1, and the answer never arrives; the pull that
            // follows reaches the head, whose totals count it.
            phone.transport.onPush { _, result in
                _ = try result.get()
                throw SyncTransportError.unreachable("the answer was lost")
            }
            try phone.entry().usageCount += 1
            try phone.context.save()
            _ = try? await phone.engine.syncNow()
            #expect(try phone.entry().usageCount == 1)
        }
        // The laptop adds 10, then saves two other entries: the phone pulls one change a page,
        // the laptop's +10 on a page that is not the last.
        try laptop.entry().usageCount += 10
        try laptop.context.save()
        laptop.context.insert(FAQEntry(key: "second"))
        try laptop.context.save()
        laptop.context.insert(FAQEntry(key: "third"))
        try laptop.context.save()
        try await laptop.engine.syncNow()

        // The phone's app starts again; the +1's answer is still lost.
        let phone = try Device.faq(server, name: "phone", directory: directory, pageSize: 1)
        phone.transport.onPush { _, result in
            _ = try result.get()
            throw SyncTransportError.unreachable("the answer was lost")
        }
        _ = try? await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 11)
        phone.transport.onPush(nil)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 11)
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 11)
    }

    @Test("a rejected mutation rolls back only its own contribution: +1, +2 (refused) and +4 give +5")
    func rejectionRollsBackOnlyItsDelta() async throws {
        var configuration = SyncServiceConfiguration()
        configuration.resolvers["FAQEntry"] = { input in
            input.change.fields["answer"] == .string("spam") ? .refuse("answers may not be spam") : .usePolicy
        }
        let directory = try TemporaryDirectory()
        let server = try await TestServer(configuration: configuration)
        let phone = try Device.faq(server, name: "phone", directory: directory)
        let laptop = try Device.faq(server, name: "laptop", directory: directory)
        let events = EventLog(phone.engine)
        phone.context.insert(FAQEntry(key: "reset-password"))
        try phone.context.save()
        try await phone.engine.syncNow()
        try await laptop.engine.syncNow()

        try phone.entry().usageCount += 1
        try phone.context.save()
        try phone.entry().usageCount += 2
        try phone.entry().answer = "spam"
        try phone.context.save()
        try phone.entry().usageCount += 4
        try phone.context.save()
        try laptop.entry().usageCount += 10
        try laptop.context.save()
        try await laptop.engine.syncNow()
        #expect(try phone.entry().usageCount == 7)
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 15)
        #expect(try phone.entry().answer == "")
        let rejected = await events.waitFor { if case .rejected = $0 { true } else { false } }
        guard case let .rejected(rejection)? = rejected else {
            Issue.record("no rejection reported")
            return
        }
        #expect(rejection.reason == .resolverRefused)
        try await laptop.engine.syncNow()
        #expect(try laptop.entry().usageCount == 15)
    }

    @Test("a rejection settled while a later contribution is still unpushed takes back its own contribution at once, and keeps the later one")
    func rejectionWithLaterContributionPending() async throws {
        var configuration = SyncServiceConfiguration()
        configuration.resolvers["FAQEntry"] = { input in
            input.change.fields["answer"] == .string("spam") ? .refuse("answers may not be spam") : .usePolicy
        }
        let directory = try TemporaryDirectory()
        let server = try await TestServer(configuration: configuration)
        let phone = try Device.faq(server, name: "phone", directory: directory)
        phone.context.insert(FAQEntry(key: "reset-password"))
        try phone.context.save()
        try await phone.engine.syncNow()

        try phone.entry().usageCount += 2
        try phone.entry().answer = "spam"
        try phone.context.save()
        // Pushed and refused, not pulled yet (the refusal changed nothing on the server: no
        // pulled change of the record will come to show the total).
        phone.transport.onPull { _ in throw SyncTransportError.unreachable("no pull now") }
        _ = try? await phone.engine.syncNow()
        phone.transport.onPull(nil)
        try phone.entry().usageCount += 4
        try phone.context.save()
        #expect(try phone.entry().usageCount == 6)
        phone.transport.blockPushes = true
        _ = try? await phone.engine.syncNow()
        // Settled: the +2 is gone, the unpushed +4 stays.
        #expect(try phone.entry().usageCount == 4)
        #expect(try phone.entry().answer == "")
        phone.transport.blockPushes = false
        try await phone.engine.syncNow()
        #expect(try phone.entry().usageCount == 4)
    }

    @Test(
        "mixed versions: an older app that writes the counter whole is taken as a difference when nobody else changed the record, and refused, naming the field, when that would lose contributions"
    )
    func olderAppNeverLosesContributions() async throws {
        try await LoopbackServer.run { server in
            let new = try server.faqDevice("new")
            let old = try server.faqDevice("old", merging: false)
            let oldEvents = EventLog(old.engine)
            new.context.insert(FAQEntry(key: "reset-password"))
            try new.context.save()
            try await new.engine.syncNow()
            try await old.engine.syncNow()

            // Nobody changed the record since the old app read it: its whole value is its difference.
            try old.entry().usageCount = 3
            try old.context.save()
            try await old.engine.syncNow()
            try await new.engine.syncNow()
            #expect(try new.entry().usageCount == 3)

            // The new app adds 1; the old app, which has not pulled it, writes 4 over the 3 it saw.
            try new.entry().usageCount += 1
            try new.context.save()
            try await new.engine.syncNow()
            try old.entry().usageCount = 4
            try old.context.save()
            try await old.engine.syncNow()
            let rejected = await oldEvents.waitFor { if case .rejected = $0 { true } else { false } }
            guard case let .rejected(rejection)? = rejected else {
                Issue.record("the older app's overwrite was not refused")
                return
            }
            #expect(rejection.reason == .validation)
            #expect(rejection.message?.contains("usageCount") == true)
            #expect(rejection.message?.contains("update the app") == true)
            // Nothing was lost: both devices show the new app's contribution.
            try await new.engine.syncNow()
            #expect(try new.entry().usageCount == 4)
            #expect(try old.entry().usageCount == 4)
        }
    }

    @Test("an engine with merged fields speaks protocol version 2; one without keeps speaking version 1")
    func protocolVersionFollowsTheSchema() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let new = try Device.faq(server, name: "new", directory: directory)
        let old = try Device.faq(server, name: "old", directory: directory, merging: false)
        new.context.insert(FAQEntry(key: "reset-password"))
        try new.context.save()
        try await new.engine.syncNow()
        try await old.engine.syncNow()
        try old.entry().usageCount = 2
        try old.context.save()
        try await old.engine.syncNow()
        #expect(new.transport.sentPushes.map(\.protocolVersion.rawValue) == [2])
        #expect(old.transport.sentPushes.map(\.protocolVersion.rawValue) == [1])
        let field = try #require(new.transport.sentPushes.first?.schema?.entity(named: "FAQEntry")?.fields.first { $0.name == "usageCount" })
        #expect(field.merge == .counter)
        #expect(old.transport.sentPushes.first?.schema?.entity(named: "FAQEntry")?.fields.allSatisfy { $0.merge == nil } == true)
    }

    @Test("a server that speaks only version 1 stops an engine with merged fields with serverTooOld, keeping its queue")
    func serverTooOld() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer()
        let device = try Device.faq(server, name: "phone", directory: directory)
        device.transport.onPull { _ in
            throw SyncTransportError.refused(
                status: 400,
                error: SyncError(
                    .unsupportedProtocolVersion, "protocol version 2 is not supported; this server speaks 1", supportedVersions: [.plainFields]))
        }
        device.context.insert(FAQEntry(key: "reset-password"))
        try device.context.save()
        await #expect(throws: SyncEngineError.serverTooOld(required: 2, supported: [1])) { try await device.engine.syncNow() }
        #expect(try await device.engine.pendingChangeCount() == 1)
    }

    @Test("requests built without a version speak version 1, which every server accepts; only an engine with merged fields asks for 2")
    func requestsDefaultToPlainFields() {
        #expect(GrantRequest(user: "alice").protocolVersion == .plainFields)
        #expect(PullRequest(clientID: "c").protocolVersion == .plainFields)
        #expect(PushRequest(clientID: "c", mutations: []).protocolVersion == .plainFields)
        let stamp = HLCTimestamp(milliseconds: 1_800_000_000_000, counter: 0)
        #expect(PushResponse(lastMutationID: 0, results: [], serverStamp: stamp).protocolVersion == .plainFields)
        #expect(PullResponse(changes: [], cursor: "", hasMore: false, lastMutationID: 0, serverStamp: stamp).protocolVersion == .plainFields)
    }

    @Test("setup errors name the property: a kind that does not fit its type, an optional")
    func setupErrors() throws {
        let directory = try TemporaryDirectory()
        let container = try ModelContainer(for: Schema([FAQEntry.self]), configurations: ModelConfiguration(url: directory.file("setup.sqlite")))
        func engine(_ declare: (inout SyncConfiguration) -> Void) throws {
            var configuration = SyncConfiguration()
            configuration.sync(FAQEntry.self)
            declare(&configuration)
            _ = try SyncEngine(container: container, transport: UnreachableTransport(), user: "alice", configuration: configuration)
        }
        func mismatch(_ error: any Error) -> (String, String, MergeKind)? {
            guard case let SyncEngineError.mergeKindMismatch(entity, property, kind, _) = error else { return nil }
            return (entity, property, kind)
        }
        let counterOnBool = #expect(throws: SyncEngineError.self) { try engine { $0.merge(\FAQEntry.published, .counter) } }
        #expect(counterOnBool.flatMap(mismatch).map { "\($0.0).\($0.1) \($0.2)" } == "FAQEntry.published counter")
        #expect(counterOnBool?.description.contains("FAQEntry.published") == true)
        let setOnString = #expect(throws: SyncEngineError.self) { try engine { $0.merge(\FAQEntry.answer, .set) } }
        #expect(setOnString.flatMap(mismatch).map { "\($0.0).\($0.1) \($0.2)" } == "FAQEntry.answer set")
        let textOnInt = #expect(throws: SyncEngineError.self) { try engine { $0.merge(\FAQEntry.usageCount, .text) } }
        #expect(textOnInt.flatMap(mismatch).map { "\($0.0).\($0.1) \($0.2)" } == "FAQEntry.usageCount text")
        let narrow = #expect(throws: SyncEngineError.self) { try engine { $0.merge(\FAQEntry.shortCount, .counter) } }
        #expect(narrow.flatMap(mismatch).map { "\($0.0).\($0.1) \($0.2)" } == "FAQEntry.shortCount counter")
        let single = #expect(throws: SyncEngineError.self) { try engine { $0.merge(\FAQEntry.weight, .counter) } }
        #expect(single.flatMap(mismatch).map { "\($0.0).\($0.1) \($0.2)" } == "FAQEntry.weight counter")
        let optional = #expect(throws: SyncEngineError.self) { try engine { $0.merge(\FAQEntry.views, .counter) } }
        #expect(optional.flatMap(mismatch).map { "\($0.0).\($0.1) \($0.2)" } == "FAQEntry.views counter")
        let notText = #expect(throws: SyncEngineError.self) { try engine { $0.merge(\FAQEntry.usageCount, .text) } }
        #expect(notText.flatMap(mismatch).map { "\($0.0).\($0.1) \($0.2)" } == "FAQEntry.usageCount text")
        try engine { $0.merge(\FAQEntry.answer, .text) }
        try engine { $0.merge(\FAQEntry.tags, .set) }
        try engine { $0.merge(\FAQEntry.usageCount, .counter) }
    }
}

/// A transport that never reaches a server (setup tests never sync).
struct UnreachableTransport: SyncTransport {
    func push(_ request: PushRequest) async throws -> PushResponse { throw SyncTransportError.unreachable("no server") }
    func pull(_ request: PullRequest) async throws -> PullResponse { throw SyncTransportError.unreachable("no server") }
    func live(clientID: ClientID) -> AsyncThrowingStream<LiveMessage, any Error> {
        AsyncThrowingStream { $0.finish(throwing: SyncTransportError.unreachable("no server")) }
    }
    func members(of scope: ScopeID) async throws -> ScopeMembersResponse { throw SyncTransportError.unreachable("no server") }
    func grant(_ request: GrantRequest, in scope: ScopeID) async throws -> ScopeMembersResponse { throw SyncTransportError.unreachable("no server") }
    func revoke(_ user: String, in scope: ScopeID) async throws -> ScopeMembersResponse { throw SyncTransportError.unreachable("no server") }
}
