import Foundation
import OpenSwiftData
import Testing

@Suite("Relationships")
struct RelationshipTests {
    @Test("setting a to-one updates the inverse to-many, and the graph survives a reopen")
    func inverseMaintenance() throws {
        let container = try ModelContainer(for: Conversation.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let chat = Conversation(title: "chat")
        context.insert(chat)
        let hello = ChatMessage(text: "hello")
        hello.conversation = chat
        #expect(chat.messages.map(\.text) == ["hello"])
        let bye = ChatMessage(text: "bye")
        chat.messages.append(bye)
        #expect(bye.conversation === chat)
        try context.save()
        #expect(bye.modelContext === context)

        let other = ModelContext(container)
        let chats = try other.fetch(FetchDescriptor<Conversation>())
        #expect(chats.count == 1)
        #expect(chats.first?.messages.map(\.text).sorted() == ["bye", "hello"])
        let messages = try other.fetch(FetchDescriptor<ChatMessage>())
        #expect(messages.allSatisfy { $0.conversation === chats.first })
    }
}
