import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftDataSync

@Suite("Sync engine: what the app sees")
struct ObservationTests {
    @Test("a live query on another context sees pulled changes like any save")
    func liveQuerySeesPulledChanges() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        var updates = ModelContext(b.container).liveResults(FetchDescriptor<Note>()).makeAsyncIterator()
        let first = try await updates.next()
        #expect(first?.isEmpty == true)
        a.context.insert(Note(title: "seen live"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        let next = try await updates.next()
        #expect(next?.map(\.title) == ["seen live"])
    }

    @Test(
        "pulled changes post the remote-change notification under Core Data's name, with the store and a history token that fetchHistory starts from; local saves and pulls of nothing do not"
    )
    func remoteChangeNotification() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let b = try Device.open(server, directory: directory, name: "b")
        let received = NotificationLog()
        let observer = NotificationCenter.default.addObserver(forName: .NSPersistentStoreRemoteChange, object: b.container, queue: nil) {
            notification in
            received.append(notification.userInfo ?? [:])
        }
        defer { NotificationCenter.default.removeObserver(observer) }

        b.context.insert(Note(title: "b's own"))
        try b.context.save()
        try await b.engine.syncNow()
        #expect(received.count == 0)

        a.context.insert(Note(title: "from a"))
        try a.context.save()
        try await a.engine.syncNow()
        try await b.engine.syncNow()
        #expect(received.count == 1)
        let info = try #require(received.last)
        let storeID = try #require(try b.fetch(Note.self).first?.persistentModelID.storeIdentifier)
        #expect(info[NSStoreUUIDKey] as? String == storeID)
        #expect(info[NSPersistentStoreURLKey] as? URL == b.url)
        let token = try #require(info[NSPersistentHistoryTokenKey] as? DefaultHistoryToken)
        // The token is the transaction that wrote the pulled note: history from just before it holds it.
        let transactions = try ModelContext(b.container).fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        let pulled = try #require(transactions.last)
        #expect(pulled.token == token)
        #expect(pulled.changes.count >= 1)

        try await b.engine.syncNow()
        #expect(received.count == 1)
    }

    @Test("which failures are retried with backoff and which wait for the next trigger")
    func transientOrPermanent() {
        #expect(SyncEngine.isTransient(.transport(.unreachable("down"))))
        #expect(SyncEngine.isTransient(.transport(.refused(status: 503, error: SyncError(.unavailable, "")))))
        #expect(SyncEngine.isTransient(.transport(.refused(status: 401, error: SyncError(.unauthorized, "")))))
        #expect(!SyncEngine.isTransient(.transport(.refused(status: 400, error: SyncError(.malformedRequest, "")))))
        #expect(!SyncEngine.isTransient(.transport(.malformedResponse("x"))))
        #expect(!SyncEngine.isTransient(.accessDenied("revoked")))
        #expect(!SyncEngine.isTransient(.unknownEntity("Ghost")))
        #expect(!SyncEngine.isTransient(.unsupportedProtocolVersion(server: 2)))
    }

    @Test("access denied on push is a typed error; the save stays pending, nothing is lost")
    func accessDeniedKeepsQueue() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        a.context.insert(Note(title: "kept"))
        try a.context.save()
        a.transport.onPush { _, _ in throw SyncTransportError.refused(status: 403, error: SyncError(.forbidden, "access revoked")) }
        await #expect(throws: SyncEngineError.accessDenied("access revoked")) { try await a.engine.syncNow() }
        #expect(try await a.engine.pendingChangeCount() == 1)
        a.transport.onPush(nil)
        try await a.engine.syncNow()
        #expect(try await a.engine.pendingChangeCount() == 0)
    }

    @Test("the observable status follows the network: offline with the error and the pending count, then online and settled")
    func statusFollowsNetwork() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TestServer(directory: directory)
        let a = try Device.open(server, directory: directory, name: "a")
        let status = a.engine.status
        a.context.insert(Note(title: "one"))
        try a.context.save()
        a.context.insert(Note(title: "two"))
        try a.context.save()
        a.transport.online = false
        await #expect(throws: SyncEngineError.self) { try await a.engine.syncNow() }
        var snapshot = await MainActor.run { (status.isOnline, status.pendingChangeCount, status.lastError, status.lastSyncDate, status.isSyncing) }
        #expect(snapshot.0 == false)
        #expect(snapshot.1 == 2)
        #expect(snapshot.2 == .transport(.unreachable("offline")))
        #expect(snapshot.3 == nil)
        #expect(snapshot.4 == false)
        let note = try #require(try a.context.fetch(FetchDescriptor<Note>()).first)
        #expect(try await a.engine.hasPendingChanges(for: note.persistentModelID))

        a.transport.online = true
        try await a.engine.syncNow()
        snapshot = await MainActor.run { (status.isOnline, status.pendingChangeCount, status.lastError, status.lastSyncDate, status.isSyncing) }
        #expect(snapshot.0 == true)
        #expect(snapshot.1 == 0)
        #expect(snapshot.2 == nil)
        #expect(snapshot.3 == server.clock.now())
        #expect(try await !a.engine.hasPendingChanges(for: note.persistentModelID))
    }
}

/// Notifications' `userInfo`, as they come (from whichever thread posts).
/// `@unchecked Sendable`: `entries` is only read and written while holding `lock`.
final class NotificationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [[AnyHashable: Any]] = []

    func append(_ userInfo: [AnyHashable: Any]) { lock.withLock { entries.append(userInfo) } }
    var count: Int { lock.withLock { entries.count } }
    var last: [AnyHashable: Any]? { lock.withLock { entries.last } }
}
