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

// The inverse declared on the to-one side (the other side infers nothing), with an original name
// and a hash modifier recorded in the schema.

@Model
final class Shelf {
    var label: String
    var books: [Book] = []

    init(label: String) {
        self.label = label
    }
}

@Model
final class Book {
    var title: String
    @Relationship(originalName: "bookcase", inverse: \Shelf.books, hashModifier: "v2")
    var shelf: Shelf?

    init(title: String, shelf: Shelf? = nil) {
        self.title = title
        self.shelf = shelf
    }
}

// A non-optional to-one whose inverse nullifies: deleting the venue leaves a seat without one.

@Model
final class Venue {
    var name: String
    var seats: [Seat] = []

    init(name: String) {
        self.name = name
    }
}

@Model
final class Seat {
    var label: String
    var venue: Venue

    init(label: String, venue: Venue) {
        self.label = label
        self.venue = venue
    }
}

// Cascade cycles: each side cascades its deletion to the other.

@Model
final class CycleOwner {
    var name: String
    @Relationship(deleteRule: .cascade, inverse: \CycleMember.owner)
    var members: [CycleMember] = []

    init(name: String) {
        self.name = name
    }
}

@Model
final class CycleMember {
    var name: String
    @Relationship(deleteRule: .cascade)
    var owner: CycleOwner?

    init(name: String) {
        self.name = name
    }
}

@Model
final class TwinLeft {
    var name: String
    @Relationship(deleteRule: .cascade, inverse: \TwinRight.twin)
    var twin: TwinRight?

    init(name: String) {
        self.name = name
    }
}

@Model
final class TwinRight {
    var name: String
    @Relationship(deleteRule: .cascade)
    var twin: TwinLeft?

    init(name: String) {
        self.name = name
    }
}

// `.noAction`: deleting the kennel neither deletes nor (in memory) updates its dogs.

@Model
final class Kennel {
    var name: String
    @Relationship(deleteRule: .noAction)
    var dogs: [Dog] = []

    init(name: String) {
        self.name = name
    }
}

@Model
final class Dog {
    var name: String
    var kennel: Kennel?

    init(name: String) {
        self.name = name
    }
}

// Broken schemas, used ONLY by the test that expects `ModelContainer(for:)` to refuse them:
// their inverse key paths do not point back at the declaring type.

@Model
final class BrokenInverseOwner {
    var name: String = ""
    /// The "inverse" is an attribute, not a relationship.
    @Relationship(inverse: \BrokenInverseTarget.label)
    var targets: [BrokenInverseTarget] = []

    init() {}
}

@Model
final class BrokenInverseTarget {
    var label: String = ""

    init() {}
}

@Model
final class MisdirectedInverseOwner {
    var name: String = ""
    /// The "inverse" is a relationship to another type (Animal), not back to this one.
    @Relationship(inverse: \MisdirectedInverseTarget.animal)
    var targets: [MisdirectedInverseTarget] = []

    init() {}
}

@Model
final class MisdirectedInverseTarget {
    var label: String = ""
    var animal: Animal?

    init() {}
}
