import Foundation
import GRDB
import Observation
import Testing

@testable import OpenSwiftData

/// Counts the SQL statements a store runs (in-memory stores have a single connection).
final class StatementCounter: @unchecked Sendable {
    // @unchecked Sendable: `statements` is only touched while holding `lock`.
    private let lock = NSLock()
    private var statements: [String] = []

    init(_ container: ModelContainer) throws {
        container.store.writer.writeWithoutTransaction { db in
            db.trace { [self] event in
                if case let .statement(statement) = event { lock.withLock { statements.append(statement.sql) } }
            }
        }
    }

    /// Every statement seen since the last reset.
    var all: [String] { lock.withLock { statements } }

    /// The SELECT statements seen since the last reset.
    var selects: [String] { lock.withLock { statements.filter { $0.hasPrefix("SELECT") } } }

    func reset() { lock.withLock { statements.removeAll() } }
}

@Suite("Relationship queries")
struct RelationshipQueryTests {
    private func chats(_ context: ModelContext, count: Int, messagesEach: Int) throws {
        for number in 0..<count {
            let chat = Conversation(title: "chat \(number)")
            chat.lastMessageAt = Date(timeIntervalSinceReferenceDate: Double((number * 7) % count))
            context.insert(chat)
            for index in 0..<messagesEach { chat.messages.append(ChatMessage(text: "\(number).\(index)")) }
        }
        try context.save()
    }

    @Test("a SortDescriptor through a to-one key path sorts in SQL, with the same order as in memory")
    func sortThroughToOne() throws {
        let container = try ModelContainer(for: Conversation.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        try chats(ModelContext(container), count: 5, messagesEach: 2)
        let orphan = ChatMessage(text: "orphan")
        let context = ModelContext(container)
        context.insert(orphan)
        try context.save()

        let layout = try EntityLayout.of(ChatMessage.self)
        let sort = [SortDescriptor(\ChatMessage.conversation?.lastMessageAt, order: .reverse), SortDescriptor(\ChatMessage.text)]
        let terms = try #require(layout.orderTerms(for: sort))
        #expect(terms.first?.hops == [OrderTerm.Hop(foreignKey: "conversation", table: "Conversation")])

        let fresh = ModelContext(container)
        let sorted = try fresh.fetch(FetchDescriptor<ChatMessage>(sortBy: sort))
        // Evaluated in memory, on models whose context is already released: their relationships
        // still load.
        let expected = try ModelContext(container).fetch(FetchDescriptor<ChatMessage>()).sorted { lhs, rhs in
            let left = lhs.conversation?.lastMessageAt ?? .distantPast
            let right = rhs.conversation?.lastMessageAt ?? .distantPast
            return left != right ? left > right : lhs.text < rhs.text
        }
        #expect(sorted.map(\.text) == expected.map(\.text))
        #expect(sorted.last?.text == "orphan", "no conversation sorts last in reverse order, as nil does in Swift")
    }

    @Test("relationshipKeyPathsForPrefetching loads each relationship for all results in one query")
    func prefetching() throws {
        let container = try ModelContainer(for: Conversation.self, TodoList.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        try chats(ModelContext(container), count: 20, messagesEach: 3)
        let counter = try StatementCounter(container)

        var descriptor = FetchDescriptor<Conversation>(sortBy: [SortDescriptor(\.title)])
        descriptor.relationshipKeyPathsForPrefetching = [\.messages]
        let context = ModelContext(container)
        counter.reset()
        let conversations = try context.fetch(descriptor)
        #expect(counter.selects.count == 2, "one for the conversations, one for all their messages: \(counter.selects)")
        counter.reset()
        #expect(conversations.allSatisfy { $0.messages.count == 3 })
        #expect(conversations.allSatisfy { chat in chat.messages.allSatisfy { $0.conversation === chat } })
        #expect(counter.selects.isEmpty, "reading prefetched relationships runs no query: \(counter.selects)")

        // Without prefetching, each first read loads lazily: one query per conversation.
        let lazy = ModelContext(container)
        let unfetched = try lazy.fetch(FetchDescriptor<Conversation>())
        counter.reset()
        #expect(unfetched.map(\.messages.count).reduce(0, +) == 60)
        #expect(counter.selects.count == 20)

        // To-one and many-to-many prefetching.
        var messages = FetchDescriptor<ChatMessage>()
        messages.relationshipKeyPathsForPrefetching = [\.conversation]
        let other = ModelContext(container)
        counter.reset()
        let fetchedMessages = try other.fetch(messages)
        #expect(counter.selects.count == 2)
        counter.reset()
        #expect(Set(fetchedMessages.compactMap { $0.conversation?.title }).count == 20)
        #expect(counter.selects.isEmpty)

        let setup = ModelContext(container)
        let list = TodoList(name: "home")
        setup.insert(list)
        let tags = [Tag(name: "a"), Tag(name: "b")]
        for number in 0..<4 {
            let item = TodoItem(title: "item \(number)", list: list)
            item.tags = number.isMultiple(of: 2) ? tags : [tags[0]]
            setup.insert(item)
        }
        try setup.save()
        var items = FetchDescriptor<TodoItem>(sortBy: [SortDescriptor(\.title)])
        items.relationshipKeyPathsForPrefetching = [\.tags]
        let reader = ModelContext(container)
        counter.reset()
        let fetchedItems = try reader.fetch(items)
        #expect(counter.selects.count == 3, "items, join rows, tags: \(counter.selects)")
        counter.reset()
        #expect(fetchedItems.map { $0.tags.map(\.name).sorted() } == [["a", "b"], ["a"], ["a", "b"], ["a"]])
        #expect(counter.selects.isEmpty)
    }

    @Test("deleting many models applies their cascade rules with one query per relationship and wave, not one per model")
    func cascadeLoadsInBatches() throws {
        let container = try ModelContainer(for: Conversation.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        try chats(ModelContext(container), count: 30, messagesEach: 4)
        let context = ModelContext(container)
        let conversations = try context.fetch(FetchDescriptor<Conversation>())
        // One conversation's messages are loaded and changed first: the rules use what it holds.
        let first = try #require(conversations.first)
        first.messages.append(ChatMessage(text: "unsaved"))
        let counter = try StatementCounter(container)
        for conversation in conversations.dropLast(5) { context.delete(conversation) }
        counter.reset()
        try context.save()
        #expect(counter.selects.count <= 3, "the messages of 25 conversations in one query: \(counter.selects)")
        let reader = ModelContext(container)
        #expect(try reader.fetchCount(FetchDescriptor<Conversation>()) == 5)
        let left = try reader.fetch(FetchDescriptor<ChatMessage>())
        #expect(left.count == 20, "the cascade deleted exactly the deleted conversations' messages")
        #expect(left.allSatisfy { $0.conversation != nil })
        #expect(Set(left.compactMap { $0.conversation?.title }) == Set(conversations.suffix(5).map(\.title)))
    }

    @Test(
        "prefetching for a whole table reads the related table in one pass: children interleaved, orphans, already loaded sides and unsaved changes stay right"
    )
    func prefetchingWholeTable() throws {
        let container = try ModelContainer(for: Conversation.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let setup = ModelContext(container)
        let chats = (0..<4).map { Conversation(title: "chat \($0)") }
        for chat in chats { setup.insert(chat) }
        try setup.save()
        // Rows of different conversations interleave in the table, and one has none.
        for round in 0..<3 {
            for (number, chat) in chats.enumerated() where number != 3 {
                chat.messages.append(ChatMessage(text: "\(number).\(round)"))
            }
            try setup.save()
        }
        setup.insert(ChatMessage(text: "orphan"))
        try setup.save()
        let counter = try StatementCounter(container)

        // One conversation's messages are loaded, and changed without saving, before the fetch.
        let context = ModelContext(container)
        let early = try #require(try context.fetch(FetchDescriptor<Conversation>(predicate: #Predicate { $0.title == "chat 1" })).first)
        early.messages.append(ChatMessage(text: "1.unsaved"))

        var descriptor = FetchDescriptor<Conversation>(sortBy: [SortDescriptor(\.title)])
        descriptor.relationshipKeyPathsForPrefetching = [\.messages]
        counter.reset()
        let conversations = try context.fetch(descriptor)
        let selects = counter.selects
        #expect(selects.count == 2, "\(selects)")
        #expect(
            selects.last?.contains("IS NOT NULL") == true && selects.last?.contains("json_each") == false, "one pass over the messages: \(selects)")
        counter.reset()
        let texts = conversations.map { $0.messages.map(\.text) }
        #expect(texts[0] == ["0.0", "0.1", "0.2"])
        #expect(texts[1].sorted() == ["1.0", "1.1", "1.2", "1.unsaved"], "the loaded side keeps its unsaved change")
        #expect(texts[2] == ["2.0", "2.1", "2.2"])
        #expect(texts[3].isEmpty)
        #expect(conversations.allSatisfy { chat in chat.messages.allSatisfy { $0.conversation === chat } })
        #expect(counter.selects.isEmpty, "\(counter.selects)")

        // The same order as lazy loading, which reads a conversation's messages by key.
        let lazy = try ModelContext(container).fetch(FetchDescriptor<Conversation>(sortBy: [SortDescriptor(\.title)]))
        #expect(lazy.map { $0.messages.map(\.text) } == [texts[0], ["1.0", "1.1", "1.2"], texts[2], []])

        // A filtered fetch looks the messages up by key instead.
        var filtered = FetchDescriptor<Conversation>(predicate: #Predicate { $0.title != "chat 0" })
        filtered.relationshipKeyPathsForPrefetching = [\.messages]
        counter.reset()
        let some = try ModelContext(container).fetch(filtered)
        #expect(counter.selects.last?.contains("json_each") == true, "\(counter.selects)")
        #expect(some.map(\.messages.count).sorted() == [0, 3, 3])
    }

    @Test(
        "prefetching finds each model's related models when the fetched keys are far apart (most rows deleted), on disk and in memory",
        arguments: [false, true])
    func prefetchingSparseKeys(onDisk: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-sparse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration =
            onDisk
            ? ModelConfiguration(url: directory.appendingPathComponent("store.sqlite"))
            : ModelConfiguration(isStoredInMemoryOnly: true)
        let container = try ModelContainer(for: Conversation.self, configurations: configuration)
        let setup = ModelContext(container)
        let chats = (0..<300).map { Conversation(title: String(format: "chat %03d", $0)) }
        for (number, chat) in chats.enumerated() {
            setup.insert(chat)
            chat.messages = [ChatMessage(text: "\(number).a"), ChatMessage(text: "\(number).b")]
        }
        try setup.save()
        // Five conversations stay, their keys spread over the whole range.
        let kept = [0, 97, 150, 211, 299]
        for (number, chat) in chats.enumerated() where !kept.contains(number) { setup.delete(chat) }
        try setup.save()

        for filtered in [false, true] {
            var descriptor = FetchDescriptor<Conversation>(sortBy: [SortDescriptor(\.title)])
            // A predicate makes the prefetch look the messages up by key instead of scanning.
            if filtered { descriptor.predicate = #Predicate { $0.title != "none" } }
            descriptor.relationshipKeyPathsForPrefetching = [\.messages]
            let context = ModelContext(container)
            let counter = try StatementCounter(container)
            let conversations = try context.fetch(descriptor)
            // The counter traces the writer's connection, which an in-memory store reads through
            // too (a file store reads through a pool of other connections).
            if !onDisk { #expect(counter.selects.count == 2, "\(counter.selects)") }
            counter.reset()
            let texts = conversations.map { $0.messages.map(\.text).sorted() }
            #expect(texts == kept.map { ["\($0).a", "\($0).b"] }, "filtered: \(filtered)")
            if !onDisk { #expect(counter.selects.isEmpty, "the messages were loaded by the fetch: \(counter.selects)") }
        }
    }
}

@Suite("Relationship observation")
struct RelationshipObservationTests {
    @Test("changing one side of a relationship notifies the observers of the other side")
    func inverseSideIsObserved() throws {
        let container = try ModelContainer(for: Conversation.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let first = Conversation(title: "first")
        let second = Conversation(title: "second")
        let message = ChatMessage(text: "hello")
        context.insert(first)
        context.insert(second)
        context.insert(message)

        let firstChanged = LockedFlag()
        withObservationTracking {
            _ = first.messages
        } onChange: {
            firstChanged.set()
        }
        message.conversation = first
        #expect(firstChanged.value, "setting the to-one side changes the to-many side")
        #expect(first.messages.map(\.text) == ["hello"])

        let firstLost = LockedFlag()
        let secondGained = LockedFlag()
        withObservationTracking {
            _ = first.messages
        } onChange: {
            firstLost.set()
        }
        withObservationTracking {
            _ = second.messages
        } onChange: {
            secondGained.set()
        }
        message.conversation = second
        #expect(firstLost.value && secondGained.value)

        let messageMoved = LockedFlag()
        withObservationTracking {
            _ = message.conversation
        } onChange: {
            messageMoved.set()
        }
        first.messages.append(message)
        #expect(messageMoved.value, "appending to the to-many side changes the to-one side")
        #expect(message.conversation === first)
    }
}
