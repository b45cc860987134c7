import Foundation
import Testing

@testable import OpenSwiftData

/// Models written as SwiftData's templates write them: `@Model class`, not `final class`.
@Model
class Mailbox {
    var title: String
    @Relationship(deleteRule: .cascade, inverse: \Letter.mailbox) var letters: [Letter] = []
    var labels: [String] = []

    init(title: String) {
        self.title = title
    }

    /// A method the class may override later; nothing in `@Model` needs the class final.
    func summary() -> String { "\(title): \(letters.count)" }
}

@Model
class Letter {
    var text: String
    var sentAt: Date
    var priority: Int = 0
    var mailbox: Mailbox?

    init(text: String, sentAt: Date = .now, priority: Int = 0) {
        self.text = text
        self.sentAt = sentAt
        self.priority = priority
    }
}

@Suite("Non-final model classes")
struct NonFinalModelTests {
    private func makeContainer() throws -> ModelContainer {
        try inMemoryContainer(Mailbox.self, Letter.self)
    }

    @Test("a non-final model saves, fetches and keeps its values, with one instance per row")
    func saveAndFetch() throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        let inbox = Mailbox(title: "Inbox")
        inbox.labels = ["a", "b"]
        context.insert(inbox)
        try context.save()

        let reader = ModelContext(container)
        let fetched = try reader.fetch(FetchDescriptor<Mailbox>())
        #expect(fetched.count == 1)
        let box = try #require(fetched.first)
        #expect(box !== inbox)
        #expect(box.title == "Inbox")
        #expect(box.labels == ["a", "b"])
        #expect(box.persistentModelID == inbox.persistentModelID)
        #expect(try reader.fetch(FetchDescriptor<Mailbox>()).first === box)

        box.title = "Archive"
        try reader.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Mailbox>()).first?.title == "Archive")
        #expect(box.summary() == "Archive: 0")
    }

    @Test("relationships between non-final models: inverses, lazy loading, prefetching, cascade")
    func relationships() throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        let inbox = Mailbox(title: "Inbox")
        context.insert(inbox)
        let first = Letter(text: "first", priority: 2)
        let second = Letter(text: "second", priority: 1)
        inbox.letters.append(first)
        second.mailbox = inbox
        #expect(first.mailbox === inbox)
        #expect(inbox.letters.count == 2)
        try context.save()

        let reader = ModelContext(container)
        let box = try #require(try reader.fetch(FetchDescriptor<Mailbox>()).first)
        #expect(box.letters.map(\.text).sorted() == ["first", "second"])
        #expect(box.letters.allSatisfy { $0.mailbox === box })

        var prefetching = FetchDescriptor<Mailbox>()
        prefetching.relationshipKeyPathsForPrefetching = [\.letters]
        let prefetched = try #require(try ModelContext(container).fetch(prefetching).first)
        #expect(prefetched.letters.count == 2)

        reader.delete(box)
        try reader.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Letter>()) == 0)
    }

    @Test("#Predicate and sorting over non-final models, through a relationship too")
    func predicates() throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        let inbox = Mailbox(title: "Inbox")
        let spam = Mailbox(title: "Spam")
        context.insert(inbox)
        context.insert(spam)
        for index in 0..<6 {
            let letter = Letter(text: "l\(index)", priority: index)
            letter.mailbox = index.isMultiple(of: 2) ? inbox : spam
        }
        try context.save()

        let reader = ModelContext(container)
        let inInbox = try reader.fetch(
            FetchDescriptor<Letter>(
                predicate: #Predicate { $0.mailbox?.title == "Inbox" && $0.priority > 0 },
                sortBy: [SortDescriptor(\.priority, order: .reverse)]
            ))
        #expect(inInbox.map(\.text) == ["l4", "l2"])
        let busy = try reader.fetch(FetchDescriptor<Mailbox>(predicate: #Predicate { $0.letters.contains { $0.priority == 5 } }))
        #expect(busy.map(\.title) == ["Spam"])
    }
}
