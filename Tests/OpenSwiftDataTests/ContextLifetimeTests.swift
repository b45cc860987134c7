import Foundation
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

/// What a dropped context leaves behind: related models reference each other both ways, and
/// each holds its container, so a context that went away must not leave a graph that keeps
/// itself, the container and the store's open files alive (a server making a context per
/// request would run out of memory and file descriptors).
@Suite struct ContextLifetimeTests {
    private static let types: [any PersistentModel.Type] = [
        Conversation.self, ChatMessage.self, Attachment.self, TodoList.self, TodoItem.self, Tag.self,
    ]

    /// Saves a conversation with messages, a list with tagged items, and reads every side of
    /// each relationship in the context that saved them, then drops everything it made.
    private static func saveAndReadGraph(at url: URL) throws -> (container: Weak<ModelContainer>, model: Weak<ChatMessage>) {
        let container = try ModelContainer(for: Schema(types), configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let conversation = Conversation(title: "c")
        context.insert(conversation)
        let message = ChatMessage(text: "m", conversation: conversation)
        message.attachments.append(Attachment(name: "a"))
        let list = TodoList(name: "l")
        let item = TodoItem(title: "i", list: list)
        let tag = Tag(name: "t")
        context.insert(item)
        item.tags.append(tag)
        try context.save()
        #expect(conversation.messages.count == 1)
        #expect(list.items.first?.tags.first?.items?.count == 1)
        // A second context that fetches (rather than inserts) the same graph.
        let fetching = ModelContext(container)
        let fetched = try fetching.fetch(FetchDescriptor<ChatMessage>())
        #expect(fetched.first?.conversation?.messages.first?.attachments.count == 1)
        return (Weak(container), Weak(fetched.first))
    }

    @Test func droppedContextsReleaseTheirContainer() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let (container, model) = try Self.saveAndReadGraph(at: directory.file("graph.sqlite"))
        #expect(model.value == nil, "models related both ways keep each other alive")
        #expect(container.value == nil, "the container (and its open files) outlives its contexts")
    }

    @Test func modelKeptAfterItsContextReadsItsRelationships() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let container = try ModelContainer(for: Schema(Self.types), configurations: ModelConfiguration(url: directory.file("kept.sqlite")))
        var kept: ChatMessage?
        var keptList: TodoList?
        var unsaved: TodoItem?
        do {
            let context = ModelContext(container)
            let conversation = Conversation(title: "c")
            context.insert(conversation)
            let message = ChatMessage(text: "m", conversation: conversation)
            message.attachments.append(Attachment(name: "a"))
            let list = TodoList(name: "l")
            let other = TodoList(name: "other")
            let item = TodoItem(title: "i", list: list)
            let moved = TodoItem(title: "moved", list: TodoList(name: "first"))
            context.insert(item)
            context.insert(moved)
            context.insert(other)
            try context.save()
            _ = conversation.messages.count
            _ = list.items.count
            // An unsaved change of a relationship stays what the model reads.
            moved.list = other
            kept = message
            keptList = list
            unsaved = moved
        }
        #expect(kept?.conversation?.title == "c")
        #expect(kept?.conversation?.messages.map(\.text) == ["m"])
        #expect(kept?.attachments.map(\.name) == ["a"])
        #expect(keptList?.items.map(\.title) == ["i"])
        #expect(unsaved?.list.name == "other")
    }
}

/// A weak reference, to see whether an object was freed.
final class Weak<T: AnyObject> {
    weak var value: T?
    init(_ value: T?) { self.value = value }
}
