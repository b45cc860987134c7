import Foundation
import OpenSwiftData
import Testing

// The query shapes of a typical SwiftData message store (a sync queue, an archive filter, a
// date cutoff), written exactly as for Apple's SwiftData.

enum SyncStatus: String, Codable, CaseIterable {
    case pending, syncing, synced, failed
}

@Model
final class QueuedMessage {
    @Attribute(.unique) var id: UUID
    var body: String
    var syncStatus: SyncStatus = SyncStatus.pending
    var retryCount: Int = 0
    var createdAt: Date
    var isArchived: Bool = false
    var deletedAt: Date?

    init(body: String, createdAt: Date) {
        id = UUID()
        self.body = body
        self.createdAt = createdAt
    }
}

/// The message store's queries.
enum MessageQueries {
    static func syncQueue() -> FetchDescriptor<QueuedMessage> {
        FetchDescriptor<QueuedMessage>(
            predicate: #Predicate { message in
                message.syncStatus == .pending || (message.syncStatus == .failed && message.retryCount < 3)
            },
            sortBy: [SortDescriptor(\.createdAt)]
        )
    }

    static func inbox() -> FetchDescriptor<QueuedMessage> {
        FetchDescriptor<QueuedMessage>(
            predicate: #Predicate { !$0.isArchived && $0.deletedAt == nil },
            sortBy: [SortDescriptor(\.createdAt, order: .reverse)]
        )
    }

    static func purgeable(olderThan days: Int) -> FetchDescriptor<QueuedMessage> {
        let cutoff = Date.now.addingTimeInterval(-Double(days) * 86_400)
        return FetchDescriptor<QueuedMessage>(predicate: #Predicate { $0.createdAt < cutoff && $0.syncStatus == .synced })
    }

    static func recentFailures() -> FetchDescriptor<QueuedMessage> {
        FetchDescriptor<QueuedMessage>(predicate: #Predicate { $0.syncStatus == .failed && $0.createdAt > Date.distantPast && $0.deletedAt == nil })
    }
}

@Suite("SwiftData message-store queries, unchanged")
struct SyncQueueShapeTests {
    @Test("sync queue, inbox, purge cutoff and failures run in SQL with SwiftData's results")
    func queries() throws {
        let container = try ModelContainer(for: QueuedMessage.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let now = Date.now
        let specs: [(String, SyncStatus, Int, Double, Bool, Bool)] = [
            ("new", .pending, 0, 0, false, false),
            ("retrying", .failed, 2, 1, false, false),
            ("given up", .failed, 3, 2, false, false),
            ("sent long ago", .synced, 0, 40, false, false),
            ("sent", .synced, 0, 3, true, false),
            ("deleted", .pending, 0, 5, false, true),
            ("in flight", .syncing, 0, 6, false, false),
        ]
        for (body, status, retries, daysAgo, archived, deleted) in specs {
            let message = QueuedMessage(body: body, createdAt: now.addingTimeInterval(-daysAgo * 86_400))
            message.syncStatus = status
            message.retryCount = retries
            message.isArchived = archived
            message.deletedAt = deleted ? now : nil
            context.insert(message)
        }
        try context.save()

        let fresh = ModelContext(container)
        for descriptor in [
            MessageQueries.syncQueue(), MessageQueries.inbox(), MessageQueries.purgeable(olderThan: 30), MessageQueries.recentFailures(),
        ] {
            let plan = try fresh.explain(descriptor)
            #expect(plan.runsEntirelyInSQL, "\(plan)")
        }
        #expect(try fresh.fetch(MessageQueries.syncQueue()).map(\.body) == ["deleted", "retrying", "new"])
        #expect(try fresh.fetch(MessageQueries.inbox()).map(\.body) == ["new", "retrying", "given up", "in flight", "sent long ago"])
        #expect(try fresh.fetch(MessageQueries.purgeable(olderThan: 30)).map(\.body) == ["sent long ago"])
        #expect(try fresh.fetch(MessageQueries.recentFailures()).map(\.body).sorted() == ["given up", "retrying"])
    }
}
