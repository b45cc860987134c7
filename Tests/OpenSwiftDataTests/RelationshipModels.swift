import Foundation
import OpenSwiftData

// A chat: a conversation owns its messages (cascade), a message owns its attachments (cascade).

@Model
final class Conversation {
    var title: String
    var lastMessageAt = Date(timeIntervalSinceReferenceDate: 0)
    @Relationship(deleteRule: .cascade, inverse: \ChatMessage.conversation)
    var messages: [ChatMessage] = []

    init(title: String) {
        self.title = title
    }
}

@Model
final class ChatMessage {
    var text: String
    var conversation: Conversation?
    @Relationship(deleteRule: .cascade)
    var attachments: [Attachment] = []

    init(text: String, conversation: Conversation? = nil) {
        self.text = text
        self.conversation = conversation
    }
}

@Model
final class Attachment {
    var name: String
    var message: ChatMessage?

    init(name: String) {
        self.name = name
    }
}

// A todo list: items belong to a list (non-optional) and carry many tags (many-to-many).

@Model
final class TodoList {
    var name: String
    @Relationship(deleteRule: .deny)
    var items: [TodoItem] = []

    init(name: String) {
        self.name = name
    }
}

@Model
final class TodoItem {
    var title: String
    var list: TodoList
    var tags: [Tag] = []

    init(title: String, list: TodoList) {
        self.title = title
        self.list = list
    }
}

@Model
final class Tag {
    var name: String
    var items: [TodoItem]?

    init(name: String) {
        self.name = name
    }
}

// Self relationships, one-to-one, counts and a relationship without inverse.

@Model
final class Folder {
    var name: String
    var parent: Folder?
    @Relationship(deleteRule: .cascade)
    var children: [Folder] = []

    init(name: String, parent: Folder? = nil) {
        self.name = name
        self.parent = parent
    }
}

@Model
final class Citizen {
    var name: String
    @Relationship(inverse: \Passport.holder)
    var passport: Passport?

    init(name: String) {
        self.name = name
    }
}

@Model
final class Passport {
    var number: String
    var holder: Citizen?

    init(number: String) {
        self.number = number
    }
}

@Model
final class Team {
    var name: String
    @Relationship(minimumModelCount: 1, maximumModelCount: 3)
    var members: [Player] = []
    /// No inverse: stored through a join table.
    var mascot: [Animal] = []

    init(name: String) {
        self.name = name
    }
}

@Model
final class Player {
    var name: String
    var team: Team?

    init(name: String) {
        self.name = name
    }
}

@Model
final class Animal {
    var species: String

    init(species: String) {
        self.species = species
    }
}
