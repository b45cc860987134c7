import Foundation
import OpenSwiftData

@Model
final class Conversation {
    var title: String
    @Relationship(deleteRule: .cascade, inverse: \Message.conversation)
    var messages: [Message] = []
    init(title: String) { self.title = title }
}

@Model
final class Message {
    var text: String
    var conversation: Conversation?
    var tags: [Tag] = []  // many-to-many: Tag.messages is inferred as the inverse
    init(text: String) { self.text = text }
}

@Model
final class Tag {
    @Attribute(.unique) var name: String
    var messages: [Message] = []
    init(name: String) { self.name = name }
}

let container = try ModelContainer(for: Conversation.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
let context = ModelContext(container)
let chat = Conversation(title: "Lisbon trip")
context.insert(chat)
let hello = Message(text: "Tickets booked")
hello.conversation = chat                  // chat.messages now holds hello
hello.tags = [Tag(name: "travel")]          // the tag is inserted with it at save
try context.save()

var descriptor = FetchDescriptor<Conversation>()
descriptor.relationshipKeyPathsForPrefetching = [\.messages]  // one query for all messages
for conversation in try context.fetch(descriptor) {
    print(conversation.title, conversation.messages.map(\.text), hello.tags.map(\.name))
}
context.delete(chat)                        // .cascade: its messages go too
try context.save()
print(try context.fetchCount(FetchDescriptor<Message>()))  // 0
