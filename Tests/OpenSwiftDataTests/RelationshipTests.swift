import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

// MARK: - Helpers

/// Where a test's store lives.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory
    case onDisk

    var testDescription: String { rawValue }
}

/// Every relationship model the tests use (except the deliberately broken ones).
private let relationshipTypes: [any PersistentModel.Type] = [
    Conversation.self, ChatMessage.self, Attachment.self,
    TodoList.self, TodoItem.self, Tag.self,
    Folder.self, Citizen.self, Passport.self,
    Team.self, Player.self, Animal.self,
    Shelf.self, Book.self, Venue.self, Seat.self,
    CycleOwner.self, CycleMember.self, TwinLeft.self, TwinRight.self,
    Kennel.self, Dog.self,
]

/// A store of either kind. `reopened()` returns a container that sees only what was saved: a
/// new `ModelContainer` on the same file, or (in memory, where a second container would be
/// empty) the same container, whose new contexts start from the store.
struct RelationshipStore {
    let kind: StoreKind
    let container: ModelContainer
    let url: URL?
    private let directory: TemporaryDirectory?

    init(_ kind: StoreKind) throws {
        self.kind = kind
        switch kind {
        case .inMemory:
            directory = nil
            url = nil
            container = try ModelContainer(for: Schema(relationshipTypes), configurations: [ModelConfiguration(isStoredInMemoryOnly: true)])
        case .onDisk:
            let directory = try TemporaryDirectory()
            self.directory = directory
            let url = directory.file("relationships.store")
            self.url = url
            container = try ModelContainer(for: Schema(relationshipTypes), configurations: [ModelConfiguration(url: url)])
        }
    }

    func reopened() throws -> ModelContainer {
        guard let url else { return container }
        return try ModelContainer(for: Schema(relationshipTypes), configurations: [ModelConfiguration(url: url)])
    }

    /// A context that starts from what is stored.
    func freshContext() throws -> ModelContext { ModelContext(try reopened()) }

    func count<T: PersistentModel>(_ type: T.Type) throws -> Int {
        try freshContext().fetchCount(FetchDescriptor<T>())
    }

    func cleanUp() { directory?.cleanUp() }
}

private func fetchAll<T: PersistentModel>(_ type: T.Type, _ context: ModelContext) throws -> [T] {
    try context.fetch(FetchDescriptor<T>())
}

private func fetchOne<T: PersistentModel>(
    _ type: T.Type, _ context: ModelContext, sourceLocation: SourceLocation = #_sourceLocation, where predicate: (T) -> Bool
) throws -> T {
    let matches = try context.fetch(FetchDescriptor<T>()).filter(predicate)
    try #require(matches.count == 1, "expected exactly one \(T.self) matching, found \(matches.count)", sourceLocation: sourceLocation)
    return matches[0]
}

private func isSaveValidationFailure(_ error: any Error) -> Bool {
    (error as? SwiftDataError) == SwiftDataError.modelValidationFailure
}

// MARK: - Tests

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

    // MARK: Schema

    @Test("the schema describes relationships: destination, inverse (declared, declared on the other side, inferred), rules, counts, names")
    func schemaDescription() throws {
        let schema = Schema(relationshipTypes)
        func relationship(_ entity: String, _ name: String) throws -> Schema.Relationship {
            let found = schema.entitiesByName[entity]?.relationshipsByName[name]
            return try #require(found, "\(entity).\(name) should be a relationship")
        }
        let messages = try relationship("Conversation", "messages")
        #expect(messages.destination == "ChatMessage")
        #expect(messages.deleteRule == .cascade)
        #expect(messages.inverseName == "conversation")
        #expect(!messages.isToOneRelationship)
        let conversation = try relationship("ChatMessage", "conversation")
        #expect(conversation.inverseName == "messages", "the inverse declared on one side is known on the other")
        #expect(conversation.isToOneRelationship)
        #expect(conversation.isOptional)
        #expect(conversation.deleteRule == .nullify, "nullify is the default rule")

        #expect(try relationship("ChatMessage", "attachments").inverseName == "message", "inferred: one property on each side")
        #expect(try relationship("Attachment", "message").inverseName == "attachments")
        #expect(try relationship("Folder", "parent").inverseName == "children", "self relationship inferred")
        #expect(try relationship("Folder", "children").inverseName == "parent")
        #expect(try relationship("TodoItem", "tags").inverseName == "items", "many-to-many inferred")
        #expect(try relationship("Tag", "items").inverseName == "tags")
        #expect(try relationship("Tag", "items").isOptional)
        #expect(try relationship("TodoItem", "list").isOptional == false)
        #expect(try relationship("TodoList", "items").deleteRule == .deny)
        #expect(try relationship("Citizen", "passport").inverseName == "holder")
        #expect(try relationship("Passport", "holder").inverseName == "passport")

        let members = try relationship("Team", "members")
        #expect(members.minimumModelCount == 1)
        #expect(members.maximumModelCount == 3)
        #expect(members.inverseName == "team")
        #expect(try relationship("Team", "mascot").inverseName == nil, "no property of Animal points back")

        let shelf = try relationship("Book", "shelf")
        #expect(shelf.inverseName == "books")
        #expect(shelf.originalName == "bookcase")
        #expect(shelf.hashModifier == "v2")
        #expect(try relationship("Shelf", "books").inverseName == "shelf", "inverse declared only on the to-one side")
        #expect(try relationship("Kennel", "dogs").deleteRule == .noAction)
    }

    // MARK: Inverse maintenance

    @Test("a to-one set, moved and cleared keeps both inverse to-manys in step, in memory and in the store", arguments: StoreKind.allCases)
    func toOneMaintainsInverse(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let first = Conversation(title: "first")
        let second = Conversation(title: "second")
        context.insert(first)
        context.insert(second)
        let moved = ChatMessage(text: "moved")
        let cleared = ChatMessage(text: "cleared")
        moved.conversation = first
        cleared.conversation = first
        #expect(first.messages.map(\.text) == ["moved", "cleared"])

        moved.conversation = second
        #expect(first.messages.map(\.text) == ["cleared"], "the old parent loses the child")
        #expect(second.messages.map(\.text) == ["moved"], "the new parent gains it")
        cleared.conversation = nil
        #expect(first.messages.isEmpty)
        try context.save()
        #expect(moved.modelContext === context, "reached through second.messages, inserted by save")

        let reread = try store.freshContext()
        let chats = try fetchAll(Conversation.self, reread)
        #expect(chats.count == 2)
        #expect(chats.first { $0.title == "first" }?.messages.isEmpty == true)
        #expect(chats.first { $0.title == "second" }?.messages.map(\.text) == ["moved"])
        #expect(try fetchAll(ChatMessage.self, reread).filter { $0.conversation != nil }.map(\.text) == ["moved"])

        // Moving a saved child between saved parents is written too.
        let movedAgain = try fetchOne(ChatMessage.self, reread) { $0.text == "moved" }
        let firstAgain = try fetchOne(Conversation.self, reread) { $0.title == "first" }
        let secondAgain = try fetchOne(Conversation.self, reread) { $0.title == "second" }
        #expect(movedAgain.conversation === secondAgain)
        movedAgain.conversation = firstAgain
        #expect(secondAgain.messages.isEmpty)
        #expect(firstAgain.messages.map(\.text) == ["moved"])
        try reread.save()
        let third = try store.freshContext()
        #expect(try fetchOne(Conversation.self, third) { $0.title == "first" }.messages.map(\.text) == ["moved"])
        #expect(try fetchOne(Conversation.self, third) { $0.title == "second" }.messages.isEmpty)
        #expect(try fetchOne(ChatMessage.self, third) { $0.text == "moved" }.conversation?.title == "first")
    }

    @Test("appending to a to-many sets the child's to-one, and moves it away from its previous parent", arguments: StoreKind.allCases)
    func appendMaintainsInverse(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let first = Conversation(title: "first")
        let second = Conversation(title: "second")
        context.insert(first)
        context.insert(second)
        let message = ChatMessage(text: "hop")
        first.messages.append(message)
        #expect(message.conversation === first)
        second.messages.append(message)
        #expect(message.conversation === second)
        #expect(first.messages.isEmpty, "a child has one parent: appending elsewhere removes it here")
        let stays = ChatMessage(text: "stays")
        second.messages.append(stays)
        second.messages.removeAll { $0 === message }
        #expect(message.conversation == nil, "removing from the array clears the to-one")
        #expect(stays.conversation === second)
        try context.save()

        let reread = try store.freshContext()
        #expect(try fetchOne(Conversation.self, reread) { $0.title == "second" }.messages.map(\.text) == ["stays"])
        #expect(try fetchOne(Conversation.self, reread) { $0.title == "first" }.messages.isEmpty)
        let storedHop = try reread.fetch(FetchDescriptor<ChatMessage>()).first { $0.text == "hop" }
        #expect(storedHop == nil || storedHop?.conversation == nil)
    }

    @Test("assigning a whole array updates every inverse, including the removed ones", arguments: StoreKind.allCases)
    func wholeArrayAssignment(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let chat = Conversation(title: "chat")
        let a = ChatMessage(text: "a")
        let b = ChatMessage(text: "b")
        let c = ChatMessage(text: "c")
        context.insert(chat)
        context.insert(a)
        chat.messages = [a, b]
        #expect(a.conversation === chat)
        #expect(b.conversation === chat)
        try context.save()

        chat.messages = [b, c, c, b]
        #expect(chat.messages.count == 2, "a model appears once in a to-many")
        #expect(a.conversation == nil, "removed by the assignment")
        #expect(b.conversation === chat)
        #expect(c.conversation === chat)
        try context.save()

        let reread = try store.freshContext()
        let stored = try fetchOne(Conversation.self, reread) { $0.title == "chat" }
        #expect(stored.messages.map(\.text).sorted() == ["b", "c"])
        #expect(try fetchOne(ChatMessage.self, reread) { $0.text == "a" }.conversation == nil)
        #expect(try fetchOne(ChatMessage.self, reread) { $0.text == "c" }.conversation === stored)

        // Assigning the empty array detaches every child, also in the store.
        stored.messages = []
        try reread.save()
        let last = try store.freshContext()
        #expect(try fetchAll(ChatMessage.self, last).allSatisfy { $0.conversation == nil })
        #expect(try fetchAll(ChatMessage.self, last).count == 3)
    }

    @Test("a many-to-many is kept in step from both sides and stored in its join table", arguments: StoreKind.allCases)
    func manyToMany(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let list = TodoList(name: "home")
        context.insert(list)
        let milk = TodoItem(title: "milk", list: list)
        let bread = TodoItem(title: "bread", list: list)
        context.insert(milk)
        context.insert(bread)
        let urgent = Tag(name: "urgent")
        let shop = Tag(name: "shop")
        context.insert(urgent)
        milk.tags = [urgent, shop]
        #expect(urgent.items?.map(\.title) == ["milk"])
        #expect(shop.items?.map(\.title) == ["milk"])
        shop.items?.append(bread)
        #expect(bread.tags.map(\.name) == ["shop"], "appending on the other side updates this side")
        milk.tags = [shop]
        #expect(urgent.items?.isEmpty == true, "removal reaches the other side")
        #expect(shop.items?.map(\.title).sorted() == ["bread", "milk"])
        try context.save()

        let reread = try store.freshContext()
        let storedShop = try fetchOne(Tag.self, reread) { $0.name == "shop" }
        let storedUrgent = try fetchOne(Tag.self, reread) { $0.name == "urgent" }
        let storedMilk = try fetchOne(TodoItem.self, reread) { $0.title == "milk" }
        let storedBread = try fetchOne(TodoItem.self, reread) { $0.title == "bread" }
        #expect(storedShop.items?.map(\.title).sorted() == ["bread", "milk"])
        #expect(storedUrgent.items?.isEmpty ?? true)
        #expect(storedMilk.tags.map(\.name) == ["shop"])
        #expect(storedBread.tags.map(\.name) == ["shop"])

        // Change the saved graph from the side that does not own the join table, then from the
        // side that does.
        storedMilk.tags.append(storedUrgent)
        #expect(storedUrgent.items?.map(\.title) == ["milk"])
        storedShop.items?.removeAll { $0 === storedBread }
        #expect(storedBread.tags.isEmpty)
        try reread.save()

        let third = try store.freshContext()
        #expect(try fetchOne(TodoItem.self, third) { $0.title == "milk" }.tags.map(\.name).sorted() == ["shop", "urgent"])
        #expect(try fetchOne(TodoItem.self, third) { $0.title == "bread" }.tags.isEmpty)
        #expect(try fetchOne(Tag.self, third) { $0.name == "urgent" }.items?.map(\.title) == ["milk"])
        #expect(try fetchOne(Tag.self, third) { $0.name == "shop" }.items?.map(\.title) == ["milk"])
    }

    @Test("a one-to-one is kept in step on both sides, whichever side is set", arguments: StoreKind.allCases)
    func oneToOne(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let ann = Citizen(name: "ann")
        let bob = Citizen(name: "bob")
        let passport = Passport(number: "P1")
        context.insert(ann)
        context.insert(bob)
        ann.passport = passport
        #expect(passport.holder === ann)
        passport.holder = bob
        #expect(ann.passport == nil, "the previous holder loses the passport")
        #expect(bob.passport === passport)
        let spare = Passport(number: "P2")
        bob.passport = spare
        #expect(passport.holder == nil, "the replaced passport loses its holder")
        #expect(spare.holder === bob)
        passport.holder = ann
        #expect(ann.passport === passport)
        try context.save()

        let reread = try store.freshContext()
        let storedAnn = try fetchOne(Citizen.self, reread) { $0.name == "ann" }
        let storedBob = try fetchOne(Citizen.self, reread) { $0.name == "bob" }
        #expect(storedAnn.passport?.number == "P1")
        #expect(storedBob.passport?.number == "P2")
        #expect(try fetchOne(Passport.self, reread) { $0.number == "P1" }.holder === storedAnn)
        #expect(try fetchOne(Passport.self, reread) { $0.number == "P2" }.holder === storedBob)

        // Swap from the side without the foreign key.
        let p1 = try fetchOne(Passport.self, reread) { $0.number == "P1" }
        p1.holder = storedBob
        #expect(storedAnn.passport == nil)
        try reread.save()
        let third = try store.freshContext()
        #expect(try fetchOne(Citizen.self, third) { $0.name == "ann" }.passport == nil)
        #expect(try fetchOne(Citizen.self, third) { $0.name == "bob" }.passport?.number == "P1")
        #expect(try fetchOne(Passport.self, third) { $0.number == "P2" }.holder == nil)
    }

    @Test("an inverse declared only on the to-one side is maintained from both sides", arguments: StoreKind.allCases)
    func inverseDeclaredOnToOneSide(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let shelf = Shelf(label: "top")
        context.insert(shelf)
        let dune = Book(title: "Dune")
        dune.shelf = shelf
        #expect(shelf.books.map(\.title) == ["Dune"])
        let emma = Book(title: "Emma")
        shelf.books.append(emma)
        #expect(emma.shelf === shelf)
        try context.save()
        let reread = try store.freshContext()
        let stored = try fetchOne(Shelf.self, reread) { _ in true }
        #expect(stored.books.map(\.title).sorted() == ["Dune", "Emma"])
        #expect(try fetchAll(Book.self, reread).allSatisfy { $0.shelf === stored })
    }

    @Test("a self relationship keeps parent and children in step over several levels", arguments: StoreKind.allCases)
    func selfRelationship(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let root = Folder(name: "root")
        let docs = Folder(name: "docs")
        let pics = Folder(name: "pics")
        context.insert(root)
        docs.parent = root
        root.children.append(pics)
        let deep = Folder(name: "deep")
        docs.children.append(deep)
        #expect(root.children.map(\.name) == ["docs", "pics"])
        #expect(pics.parent === root)
        #expect(deep.parent?.parent === root)
        #expect(root.parent == nil)
        try context.save()

        let reread = try store.freshContext()
        let storedRoot = try fetchOne(Folder.self, reread) { $0.name == "root" }
        #expect(storedRoot.parent == nil)
        #expect(storedRoot.children.map(\.name).sorted() == ["docs", "pics"])
        let storedDeep = try fetchOne(Folder.self, reread) { $0.name == "deep" }
        #expect(storedDeep.parent?.name == "docs")
        #expect(storedDeep.parent?.parent === storedRoot)
        #expect(storedDeep.children.isEmpty)
    }

    @Test("a to-many without inverse is stored through its join table and follows changes", arguments: StoreKind.allCases)
    func toManyWithoutInverse(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let team = Team(name: "owls")
        team.members.append(Player(name: "p"))
        team.mascot = [Animal(species: "owl"), Animal(species: "cat")]
        context.insert(team)
        try context.save()

        let reread = try store.freshContext()
        let stored = try fetchOne(Team.self, reread) { _ in true }
        #expect(stored.mascot.map(\.species).sorted() == ["cat", "owl"])
        stored.mascot.removeAll { $0.species == "cat" }
        try reread.save()
        let third = try store.freshContext()
        #expect(try fetchOne(Team.self, third) { _ in true }.mascot.map(\.species) == ["owl"])
        #expect(try third.fetchCount(FetchDescriptor<Animal>()) == 2, "leaving the relationship does not delete the model")

        // Deleting the related model removes its join rows.
        let owl = try fetchOne(Animal.self, third) { $0.species == "owl" }
        third.delete(owl)
        try third.save()
        let fourth = try store.freshContext()
        #expect(try fetchOne(Team.self, fourth) { _ in true }.mascot.isEmpty)
        if let url = store.url {
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            #expect(try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Team_mascot") } == 0)
        }
    }

    @Test("a foreign key to a model inserted later in the same save is written", arguments: StoreKind.allCases)
    func foreignKeyToLaterInsert(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        // The children are inserted first; their parents only become reachable through them.
        let message = ChatMessage(text: "early")
        context.insert(message)
        message.conversation = Conversation(title: "late")
        let leaf = Folder(name: "leaf")
        context.insert(leaf)
        let middle = Folder(name: "middle")
        leaf.parent = middle
        middle.parent = Folder(name: "top")
        let ann = Citizen(name: "ann")
        let passport = Passport(number: "P")
        context.insert(passport)
        passport.holder = ann
        try context.save()

        let reread = try store.freshContext()
        #expect(try fetchOne(ChatMessage.self, reread) { _ in true }.conversation?.title == "late")
        #expect(try fetchOne(Conversation.self, reread) { _ in true }.messages.map(\.text) == ["early"])
        let storedLeaf = try fetchOne(Folder.self, reread) { $0.name == "leaf" }
        #expect(storedLeaf.parent?.name == "middle")
        #expect(storedLeaf.parent?.parent?.name == "top")
        #expect(try fetchOne(Folder.self, reread) { $0.name == "top" }.children.map(\.name) == ["middle"])
        #expect(try fetchOne(Citizen.self, reread) { _ in true }.passport?.number == "P")
        #expect(try fetchOne(Passport.self, reread) { _ in true }.holder?.name == "ann")
    }

    // MARK: Auto-insert

    @Test("insert() inserts every model reachable through relationships, several levels deep")
    func autoInsertAtInsert() throws {
        let store = try RelationshipStore(.inMemory)
        let context = ModelContext(store.container)
        let chat = Conversation(title: "chat")
        let message = ChatMessage(text: "hi")
        let attachment = Attachment(name: "pic")
        message.attachments.append(attachment)
        chat.messages.append(message)
        #expect(message.modelContext == nil)
        context.insert(chat)
        #expect(message.modelContext === context)
        #expect(attachment.modelContext === context)
        #expect(context.insertedModelsArray.count == 3)
        try context.save()
        #expect(try store.count(ChatMessage.self) == 1)
        #expect(try store.count(Attachment.self) == 1)
        let reread = try store.freshContext()
        #expect(try fetchOne(Attachment.self, reread) { _ in true }.message?.conversation?.title == "chat")
    }

    @Test("save() inserts models reachable from changed models, through a to-many, a to-one or an initializer", arguments: StoreKind.allCases)
    func autoInsertAtSave(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let chat = Conversation(title: "chat")
        context.insert(chat)
        try context.save()

        let appended = ChatMessage(text: "appended")
        chat.messages.append(appended)
        let pointing = ChatMessage(text: "pointing")
        pointing.conversation = chat
        let initialized = ChatMessage(text: "initialized", conversation: chat)
        context.insert(initialized)
        #expect(
            chat.messages.map(\.text) == ["appended", "pointing", "initialized"], "an initializer's relationship updates the inverse once inserted")
        try context.save()
        #expect(appended.modelContext === context)
        #expect(pointing.modelContext === context)
        #expect(!context.hasChanges)

        let reread = try store.freshContext()
        let stored = try fetchOne(Conversation.self, reread) { _ in true }
        #expect(stored.messages.map(\.text).sorted() == ["appended", "initialized", "pointing"])
        #expect(try fetchAll(ChatMessage.self, reread).allSatisfy { $0.conversation === stored })
    }

    // MARK: Delete rules

    @Test("cascade deletes two levels (conversation → messages → attachments), loaded or not", arguments: StoreKind.allCases, [false, true])
    func cascadeTwoLevels(kind: StoreKind, loadFirst: Bool) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        do {
            let context = ModelContext(store.container)
            let chat = Conversation(title: "doomed")
            for index in 0..<3 {
                let message = ChatMessage(text: "m\(index)")
                message.attachments = [Attachment(name: "a\(index)"), Attachment(name: "b\(index)")]
                chat.messages.append(message)
            }
            context.insert(chat)
            let survivor = Conversation(title: "survivor")
            survivor.messages.append(ChatMessage(text: "kept"))
            survivor.messages[0].attachments.append(Attachment(name: "kept"))
            context.insert(survivor)
            try context.save()
        }
        #expect(try store.count(Attachment.self) == 7)

        let context = try store.freshContext()
        let chat = try fetchOne(Conversation.self, context) { $0.title == "doomed" }
        var loaded: [ChatMessage] = []
        if loadFirst { loaded = chat.messages }
        context.delete(chat)
        try context.save()
        #expect(chat.isDeleted)
        #expect(loaded.allSatisfy { $0.isDeleted }, "loaded children deleted by cascade read as deleted")

        #expect(try store.count(Conversation.self) == 1)
        #expect(try store.count(ChatMessage.self) == 1)
        #expect(try store.count(Attachment.self) == 1)
        let reread = try store.freshContext()
        #expect(try fetchAll(ChatMessage.self, reread).map(\.text) == ["kept"])
        #expect(try fetchAll(Attachment.self, reread).map(\.name) == ["kept"])
        if let url = store.url {
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            let rows = try queue.read { db in
                try ["Conversation", "ChatMessage", "Attachment"].map { try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \"\($0)\"") ?? -1 }
            }
            #expect(rows == [1, 1, 1])
        }
    }

    @Test(
        "deny refuses the save while the relationship holds models, writes nothing, and succeeds once emptied", arguments: StoreKind.allCases,
        [false, true])
    func denyRule(kind: StoreKind, loadFirst: Bool) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        do {
            let context = ModelContext(store.container)
            let list = TodoList(name: "groceries")
            context.insert(list)
            context.insert(TodoItem(title: "milk", list: list))
            context.insert(TodoItem(title: "eggs", list: list))
            try context.save()
        }

        let context = try store.freshContext()
        let list = try fetchOne(TodoList.self, context) { _ in true }
        if loadFirst { #expect(list.items.count == 2) }
        context.delete(list)
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        #expect(context.hasChanges, "a refused save keeps the pending changes")
        #expect(list.isDeleted, "the deletion is still pending")
        #expect(context.deletedModelsArray.count == 1)
        #expect(try store.count(TodoList.self) == 1, "nothing written")
        #expect(try store.count(TodoItem.self) == 2)
        #expect(list.items.map(\.title).sorted() == ["eggs", "milk"])

        for item in list.items { context.delete(item) }
        try context.save()
        #expect(try store.count(TodoList.self) == 0)
        #expect(try store.count(TodoItem.self) == 0)
    }

    @Test("nullify leaves the children with no parent, in memory and after a reopen, loaded or not", arguments: StoreKind.allCases, [false, true])
    func nullifyRule(kind: StoreKind, loadFirst: Bool) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        do {
            let context = ModelContext(store.container)
            let team = Team(name: "owls")
            team.members = [Player(name: "a"), Player(name: "b")]
            context.insert(team)
            try context.save()
        }
        let context = try store.freshContext()
        let team = try fetchOne(Team.self, context) { _ in true }
        var players: [Player] = []
        if loadFirst {
            players = try fetchAll(Player.self, context)
            #expect(players.allSatisfy { $0.team === team })
        }
        context.delete(team)
        try context.save()
        #expect(players.allSatisfy { $0.team == nil }, "loaded children lose the deleted parent")
        #expect(players.allSatisfy { !$0.isDeleted })

        let reread = try store.freshContext()
        let stored = try fetchAll(Player.self, reread)
        #expect(stored.map(\.name).sorted() == ["a", "b"], "nullify does not delete the children")
        #expect(stored.allSatisfy { $0.team == nil })
        #expect(try reread.fetchCount(FetchDescriptor<Team>()) == 0)
    }

    @Test("nullify on a one-to-one clears the other side, whichever side holds the foreign key", arguments: StoreKind.allCases)
    func nullifyOneToOne(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        do {
            let context = ModelContext(store.container)
            let ann = Citizen(name: "ann")
            ann.passport = Passport(number: "A")
            let bob = Citizen(name: "bob")
            bob.passport = Passport(number: "B")
            context.insert(ann)
            context.insert(bob)
            try context.save()
        }
        let context = try store.freshContext()
        let ann = try fetchOne(Citizen.self, context) { $0.name == "ann" }
        let passportB = try fetchOne(Passport.self, context) { $0.number == "B" }
        context.delete(ann)
        context.delete(passportB)
        try context.save()
        let reread = try store.freshContext()
        #expect(try fetchOne(Passport.self, reread) { $0.number == "A" }.holder == nil)
        #expect(try fetchOne(Citizen.self, reread) { $0.name == "bob" }.passport == nil)
        #expect(try reread.fetchCount(FetchDescriptor<Citizen>()) == 1)
        #expect(try reread.fetchCount(FetchDescriptor<Passport>()) == 1)
    }

    @Test("noAction deletes only the model itself; the children stay", arguments: StoreKind.allCases)
    func noActionRule(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let kennel = Kennel(name: "k")
        kennel.dogs = [Dog(name: "rex"), Dog(name: "fido")]
        context.insert(kennel)
        try context.save()
        let dogs = kennel.dogs
        context.delete(kennel)
        try context.save()
        #expect(kennel.isDeleted)
        #expect(dogs.allSatisfy { !$0.isDeleted })
        #expect(dogs.allSatisfy { $0.kennel == nil }, "a relationship to a deleted model reads nil")
        #expect(try store.count(Dog.self) == 2)
        #expect(try store.count(Kennel.self) == 0)
        let reread = try store.freshContext()
        let storedDogs = try fetchAll(Dog.self, reread)
        #expect(storedDogs.count == 2)
        #expect(storedDogs.allSatisfy { $0.kennel == nil })
    }

    @Test("a to-many cascade cycle terminates and deletes every model once", arguments: StoreKind.allCases)
    func cascadeCycleToMany(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let owner = CycleOwner(name: "o")
        owner.members = [CycleMember(name: "m1"), CycleMember(name: "m2")]
        context.insert(owner)
        let bystander = CycleOwner(name: "bystander")
        context.insert(bystander)
        try context.save()

        let received = NotificationBox()
        let token = NotificationCenter.default.addObserver(forName: ModelContext.didSave, object: context, queue: nil) { note in
            received.store(note.userInfo)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let first = owner.members[0]
        let second = owner.members[1]
        context.delete(first)
        try context.save()
        #expect(first.isDeleted)
        #expect(owner.isDeleted, "cascade from member to owner")
        #expect(second.isDeleted, "and back from the owner to the other member")
        #expect(!bystander.isDeleted)
        let deleted = try #require(received.userInfo?[ModelContext.NotificationKey.deletedIdentifiers.rawValue] as? [PersistentIdentifier])
        #expect(deleted.count == 3)
        #expect(Set(deleted) == Set([owner.persistentModelID, first.persistentModelID, second.persistentModelID]))
        #expect(try store.count(CycleOwner.self) == 1)
        #expect(try store.count(CycleMember.self) == 0)
    }

    @Test("a one-to-one cascade cycle terminates and deletes both, from either side", arguments: StoreKind.allCases, [false, true])
    func cascadeCycleOneToOne(kind: StoreKind, fromLeft: Bool) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        do {
            let context = ModelContext(store.container)
            let left = TwinLeft(name: "l")
            left.twin = TwinRight(name: "r")
            context.insert(left)
            try context.save()
        }
        let context = try store.freshContext()
        if fromLeft {
            context.delete(try fetchOne(TwinLeft.self, context) { _ in true })
        } else {
            context.delete(try fetchOne(TwinRight.self, context) { _ in true })
        }
        try context.save()
        #expect(try store.count(TwinLeft.self) == 0)
        #expect(try store.count(TwinRight.self) == 0)
    }

    // MARK: Validation

    @Test(
        "minimumModelCount and maximumModelCount are checked at save; a refused save writes nothing and restores the models",
        arguments: StoreKind.allCases)
    func modelCounts(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let team = Team(name: "owls")
        context.insert(team)
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        #expect(try store.count(Team.self) == 0)
        #expect(team.modelContext === context, "still pending")

        let captain = Player(name: "captain")
        team.members.append(captain)
        try context.save()
        #expect(try store.count(Player.self) == 1)

        let newcomers = [Player(name: "n1"), Player(name: "n2"), Player(name: "n3")]
        team.members.append(contentsOf: newcomers)
        #expect(team.members.count == 4)
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        #expect(try store.count(Player.self) == 1, "nothing written")
        #expect(team.members.count == 4, "the pending change is kept")
        #expect(newcomers.allSatisfy { $0.team === team })
        #expect(
            newcomers.allSatisfy { $0.modelContext === context }, "inserted when linked (as in SwiftData), and still pending after the failed save")
        #expect(context.hasChanges)

        team.members.removeLast()
        try context.save()
        let reread = try store.freshContext()
        #expect(try fetchOne(Team.self, reread) { _ in true }.members.map(\.name).sorted() == ["captain", "n1", "n2"])
        #expect(try reread.fetchCount(FetchDescriptor<Player>()) == 4, "the dropped newcomer stays inserted, without a team")
        #expect(try fetchOne(Player.self, reread) { $0.name == "n3" }.team == nil)
    }

    @Test("deleting members so that a loaded to-many drops below minimumModelCount is refused at save", arguments: StoreKind.allCases)
    func minimumCountAfterDelete(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let team = Team(name: "owls")
        team.members = [Player(name: "a"), Player(name: "b")]
        context.insert(team)
        try context.save()
        let (a, b) = (team.members[0], team.members[1])
        context.delete(a)
        try context.save()
        #expect(team.members.map(\.name) == ["b"])
        context.delete(b)
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        #expect(try store.count(Player.self) == 1, "nothing written")
        #expect(a.isDeleted)
        #expect(team.members.map(\.name) == ["b"], "the failed save's nullify is undone")
        #expect(b.team === team)
        #expect(context.deletedModelsArray.count == 1, "the deletion stays pending")
    }

    @Test("a non-optional to-one left without a model by a nullify is refused at save, loaded or not", arguments: StoreKind.allCases, [false, true])
    func nonOptionalToOneMissing(kind: StoreKind, loadFirst: Bool) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        do {
            let context = ModelContext(store.container)
            let venue = Venue(name: "hall")
            context.insert(venue)
            context.insert(Seat(label: "A1", venue: venue))
            try context.save()
        }
        let context = try store.freshContext()
        let venue = try fetchOne(Venue.self, context) { _ in true }
        if loadFirst { #expect(venue.seats.map(\.label) == ["A1"]) }
        context.delete(venue)
        do {
            try context.save()
            Issue.record("deleting the venue of a seat whose venue is not optional should be refused")
        } catch {
            #expect(isSaveValidationFailure(error), "expected SwiftDataError.modelValidationFailure, got \(type(of: error)): \(error)")
        }
        #expect(try store.count(Venue.self) == 1, "nothing written")
        let reread = try store.freshContext()
        let seat = try fetchOne(Seat.self, reread) { _ in true }
        #expect(seat.venue.name == "hall")
    }

    @Test("a non-optional to-one keeps its inverse in step when set by the initializer", arguments: StoreKind.allCases)
    func nonOptionalToOneInitializer(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let hall = Venue(name: "hall")
        let club = Venue(name: "club")
        context.insert(hall)
        context.insert(club)
        let seat = Seat(label: "A1", venue: hall)
        context.insert(seat)
        #expect(hall.seats.map(\.label) == ["A1"])
        seat.venue = club
        #expect(hall.seats.isEmpty)
        #expect(club.seats.map(\.label) == ["A1"])
        try context.save()
        let reread = try store.freshContext()
        #expect(try fetchOne(Seat.self, reread) { _ in true }.venue.name == "club")
        #expect(try fetchOne(Venue.self, reread) { $0.name == "club" }.seats.count == 1)
    }

    @Test("a relationship to a model of another context is refused at save, writing nothing", arguments: StoreKind.allCases)
    func crossContext(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let first = ModelContext(store.container)
        let chat = Conversation(title: "chat")
        first.insert(chat)
        try first.save()

        let second = ModelContext(store.container)
        let message = ChatMessage(text: "stray")
        second.insert(message)
        message.conversation = chat
        #expect(throws: SwiftDataError.modelValidationFailure) { try second.save() }
        #expect(try store.count(ChatMessage.self) == 0)

        // Through the identifier, in the right context, it works.
        let local = try #require(second.model(for: chat.persistentModelID) as? Conversation)
        message.conversation = local
        try second.save()
        let reread = try store.freshContext()
        #expect(try fetchOne(Conversation.self, reread) { _ in true }.messages.map(\.text) == ["stray"])
    }

    @Test("a failed save puts back the relationships its delete rules cleared, and the unsaved changes made before it")
    func failedSaveRestoresNullifiedValues() throws {
        let store = try RelationshipStore(.inMemory)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let team = Team(name: "red")
        let kept = Player(name: "kept")
        team.members = [kept, Player(name: "other")]
        context.insert(team)
        try context.save()

        kept.name = "renamed"  // an unsaved change the failed save must keep
        context.delete(team)  // .nullify: the save clears the players' `team`
        let emptyTeam = Team(name: "nobody")  // violates minimumModelCount
        context.insert(emptyTeam)
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        #expect(kept.team === team, "the cleared relationship is back")
        #expect(kept.name == "renamed")
        #expect(kept.hasChanges)
        #expect(context.changedModelsArray.count == 1)

        context.rollback()
        #expect(kept.name == "kept", "rollback still reaches the values last saved")
        #expect(kept.team === team)
        #expect(!kept.hasChanges)
    }

    @Test("a failed save restores every model: cascaded deletions are undone and the pending changes kept", arguments: StoreKind.allCases)
    func failedSaveRestoresState(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let chat = Conversation(title: "chat")
        chat.messages = [ChatMessage(text: "a"), ChatMessage(text: "b")]
        chat.messages[0].attachments = [Attachment(name: "x")]
        context.insert(chat)
        try context.save()
        let messages = chat.messages
        let attachment = messages[0].attachments[0]

        context.delete(chat)
        let emptyTeam = Team(name: "nobody")  // violates minimumModelCount
        context.insert(emptyTeam)
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        #expect(messages.allSatisfy { !$0.isDeleted }, "the cascade of the failed save is undone")
        #expect(!attachment.isDeleted)
        #expect(chat.isDeleted, "the user's own deletion stays pending")
        #expect(chat.messages.map(\.text).sorted() == ["a", "b"])
        #expect(messages.allSatisfy { $0.conversation === chat })
        #expect(context.deletedModelsArray.count == 1)
        #expect(context.insertedModelsArray.count == 1)
        #expect(try store.count(Conversation.self) == 1)
        #expect(try store.count(ChatMessage.self) == 2)

        emptyTeam.members.append(Player(name: "p"))
        try context.save()
        #expect(messages.allSatisfy { $0.isDeleted })
        #expect(attachment.isDeleted)
        #expect(try store.count(Conversation.self) == 0)
        #expect(try store.count(ChatMessage.self) == 0)
        #expect(try store.count(Attachment.self) == 0)
        #expect(try store.count(Team.self) == 1)
    }

    // MARK: Rollback

    @Test("rollback() restores both sides of a changed to-one / to-many", arguments: StoreKind.allCases)
    func rollbackToMany(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let first = Conversation(title: "first")
        let second = Conversation(title: "second")
        let message = ChatMessage(text: "m")
        first.messages.append(message)
        context.insert(first)
        context.insert(second)
        try context.save()

        message.conversation = second
        let unsaved = ChatMessage(text: "unsaved")
        first.messages.append(unsaved)
        #expect(first.messages.map(\.text) == ["unsaved"])
        context.rollback()
        #expect(message.conversation === first)
        #expect(first.messages.map(\.text) == ["m"])
        #expect(second.messages.isEmpty)
        #expect(unsaved.modelContext == nil)
        #expect(!context.hasChanges)
        try context.save()
        let reread = try store.freshContext()
        #expect(try fetchOne(Conversation.self, reread) { $0.title == "first" }.messages.map(\.text) == ["m"])
        #expect(try reread.fetchCount(FetchDescriptor<ChatMessage>()) == 1)
    }

    @Test("rollback() restores both sides of a many-to-many and a one-to-one", arguments: StoreKind.allCases)
    func rollbackManyToManyAndOneToOne(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let list = TodoList(name: "l")
        context.insert(list)
        let item = TodoItem(title: "i", list: list)
        context.insert(item)
        let red = Tag(name: "red")
        let blue = Tag(name: "blue")
        item.tags = [red]
        context.insert(blue)
        let ann = Citizen(name: "ann")
        let bob = Citizen(name: "bob")
        ann.passport = Passport(number: "P")
        context.insert(ann)
        context.insert(bob)
        try context.save()
        let passport = try #require(ann.passport)

        item.tags = [blue]
        passport.holder = bob
        #expect(red.items?.isEmpty == true)
        #expect(ann.passport == nil)
        context.rollback()
        #expect(item.tags.map(\.name) == ["red"])
        #expect(red.items?.map(\.title) == ["i"])
        #expect(blue.items?.isEmpty ?? true)
        #expect(ann.passport === passport)
        #expect(bob.passport == nil)
        #expect(passport.holder === ann)
        #expect(!context.hasChanges)
    }

    // MARK: Loading

    @Test("fetched models load their related models on first read, as the registered instances", arguments: StoreKind.allCases)
    func lazyLoading(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let writer = ModelContext(store.container)
        let chat = Conversation(title: "chat")
        chat.messages = [ChatMessage(text: "one")]
        writer.insert(chat)
        try writer.save()

        let reader = try store.freshContext()
        let messages = try fetchAll(ChatMessage.self, reader)
        let parent = try #require(messages.first?.conversation, "a to-one loads its model on first read")
        #expect(parent.title == "chat")
        #expect(try fetchAll(Conversation.self, reader).first === parent, "the loaded model is the context's registered instance")

        // The to-many was not read yet: a message saved meanwhile is there on first read.
        let late = ChatMessage(text: "two")
        chat.messages.append(late)
        try writer.save()
        #expect(parent.messages.map(\.text).sorted() == ["one", "two"])
        #expect(parent.messages.contains { $0 === messages.first })
    }

    @Test("after a saved delete the model is isDeleted and relationships drop it", arguments: StoreKind.allCases)
    func relationshipsDropDeletedModels(kind: StoreKind) throws {
        let store = try RelationshipStore(kind)
        defer { store.cleanUp() }
        let context = ModelContext(store.container)
        let chat = Conversation(title: "chat")
        chat.messages = [ChatMessage(text: "keep"), ChatMessage(text: "drop")]
        let ann = Citizen(name: "ann")
        ann.passport = Passport(number: "P")
        let list = TodoList(name: "l")
        let item = TodoItem(title: "i", list: list)
        item.tags = [Tag(name: "t")]
        context.insert(chat)
        context.insert(ann)
        context.insert(item)
        try context.save()

        let dropped = try #require(chat.messages.first { $0.text == "drop" })
        let passport = try #require(ann.passport)
        let tag = try #require(item.tags.first)
        context.delete(dropped)
        context.delete(passport)
        context.delete(tag)
        try context.save()
        #expect(dropped.isDeleted)
        #expect(passport.isDeleted)
        #expect(tag.isDeleted)
        #expect(chat.messages.map(\.text) == ["keep"])
        #expect(ann.passport == nil)
        #expect(item.tags.isEmpty)

        let reread = try store.freshContext()
        #expect(try fetchOne(Conversation.self, reread) { _ in true }.messages.map(\.text) == ["keep"])
        #expect(try fetchOne(Citizen.self, reread) { _ in true }.passport == nil)
        #expect(try fetchOne(TodoItem.self, reread) { _ in true }.tags.isEmpty)
    }

    // MARK: The store

    @Test("a reopened on-disk store holds the whole graph: parents, children, many-to-many, one-to-one, self relationships")
    func reopenGraph() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("graph.store")
        do {
            let container = try ModelContainer(for: Schema(relationshipTypes), configurations: [ModelConfiguration(url: url)])
            let context = ModelContext(container)
            let chat = Conversation(title: "chat")
            let hello = ChatMessage(text: "hello")
            hello.attachments = [Attachment(name: "photo")]
            chat.messages = [hello, ChatMessage(text: "bye")]
            context.insert(chat)

            let list = TodoList(name: "list")
            let one = TodoItem(title: "one", list: list)
            let two = TodoItem(title: "two", list: list)
            let red = Tag(name: "red")
            let blue = Tag(name: "blue")
            one.tags = [red, blue]
            two.tags = [blue]
            context.insert(one)
            context.insert(two)

            let ann = Citizen(name: "ann")
            ann.passport = Passport(number: "P-ann")
            context.insert(ann)

            let root = Folder(name: "root")
            let sub = Folder(name: "sub", parent: root)
            context.insert(sub)
            _ = Folder(name: "leaf", parent: sub)
            context.insert(root)
            try context.save()
        }

        let container = try ModelContainer(for: Schema(relationshipTypes), configurations: [ModelConfiguration(url: url)])
        let context = ModelContext(container)
        let chat = try fetchOne(Conversation.self, context) { _ in true }
        #expect(chat.messages.map(\.text).sorted() == ["bye", "hello"])
        let hello = try fetchOne(ChatMessage.self, context) { $0.text == "hello" }
        #expect(hello.conversation === chat)
        #expect(hello.attachments.map(\.name) == ["photo"])
        #expect(try fetchOne(Attachment.self, context) { _ in true }.message === hello)

        let list = try fetchOne(TodoList.self, context) { _ in true }
        #expect(list.items.map(\.title).sorted() == ["one", "two"])
        let one = try fetchOne(TodoItem.self, context) { $0.title == "one" }
        let two = try fetchOne(TodoItem.self, context) { $0.title == "two" }
        #expect(one.list === list)
        #expect(one.tags.map(\.name).sorted() == ["blue", "red"])
        #expect(two.tags.map(\.name) == ["blue"])
        #expect(try fetchOne(Tag.self, context) { $0.name == "blue" }.items?.map(\.title).sorted() == ["one", "two"])
        #expect(try fetchOne(Tag.self, context) { $0.name == "red" }.items?.map(\.title) == ["one"])

        let ann = try fetchOne(Citizen.self, context) { _ in true }
        #expect(ann.passport?.number == "P-ann")
        #expect(try fetchOne(Passport.self, context) { _ in true }.holder === ann)

        let root = try fetchOne(Folder.self, context) { $0.name == "root" }
        #expect(root.parent == nil)
        #expect(root.children.map(\.name) == ["sub"])
        let sub = try #require(root.children.first)
        #expect(sub.parent === root)
        #expect(sub.children.map(\.name) == ["leaf"], "a model reached only through an initializer's relationship is saved")
        #expect(try fetchOne(Folder.self, context) { $0.name == "leaf" }.parent === sub)
    }

    @Test("the store's SQL: foreign-key columns with references and indexes, join tables with their rows")
    func sqlShape() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("shape.store")
        do {
            let container = try ModelContainer(for: Schema(relationshipTypes), configurations: [ModelConfiguration(url: url)])
            let context = ModelContext(container)
            let chat = Conversation(title: "chat")
            chat.messages = [ChatMessage(text: "a"), ChatMessage(text: "b")]
            context.insert(chat)
            let list = TodoList(name: "l")
            let item = TodoItem(title: "i", list: list)
            item.tags = [Tag(name: "x"), Tag(name: "y")]
            context.insert(item)
            let ann = Citizen(name: "ann")
            ann.passport = Passport(number: "P")
            context.insert(ann)
            let team = Team(name: "t")
            team.members = [Player(name: "p")]
            team.mascot = [Animal(species: "owl")]
            context.insert(team)
            let root = Folder(name: "root")
            root.children = [Folder(name: "child")]
            context.insert(root)
            try context.save()
        }

        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        try queue.read { db in
            func columns(_ table: String) throws -> [String: String] {
                Dictionary(
                    uniqueKeysWithValues: try Row.fetchAll(db, sql: "PRAGMA table_info(\"\(table)\")").map {
                        ($0["name"] as String, $0["type"] as String)
                    })
            }
            func references(_ table: String) throws -> [String: String] {
                Dictionary(
                    try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(\"\(table)\")").map {
                        ($0["from"] as String, "\($0["table"] as String).\($0["to"] as String)")
                    }, uniquingKeysWith: { first, _ in first })
            }
            func indexedColumns(_ table: String) throws -> [[String]] {
                try Row.fetchAll(db, sql: "PRAGMA index_list(\"\(table)\")").map { index in
                    let name: String = index["name"]
                    return try Row.fetchAll(db, sql: "PRAGMA index_info(\"\(name)\")").map { $0["name"] as String }
                }
            }
            func tables() throws -> Set<String> {
                Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
            }

            // One-to-many: the child's foreign key.
            let message = try columns("ChatMessage")
            #expect(message["conversation"] == "INTEGER")
            #expect(try references("ChatMessage")["conversation"] == "Conversation._pk")
            #expect(try indexedColumns("ChatMessage").contains { $0.first == "conversation" }, "the foreign key is indexed")
            #expect(try columns("Conversation")["messages"] == nil, "the to-many side has no column")
            let keys = try Row.fetchAll(db, sql: "SELECT m.conversation AS fk, c._pk AS pk FROM ChatMessage m, Conversation c")
            #expect(keys.count == 2)
            #expect(keys.allSatisfy { ($0["fk"] as Int64?) == ($0["pk"] as Int64?) })
            #expect(try columns("Attachment")["message"] == "INTEGER")
            #expect(try columns("TodoItem")["list"] == "INTEGER")
            #expect(try references("TodoItem")["list"] == "TodoList._pk")

            // Self relationship.
            #expect(try references("Folder")["parent"] == "Folder._pk")
            #expect(try columns("Folder")["children"] == nil)
            #expect(
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM Folder c JOIN Folder p ON c.parent = p._pk WHERE c.name = 'child' AND p.name = 'root'") == 1)

            // One-to-one: one foreign key, on the side whose "Entity.property" sorts first.
            #expect(try columns("Citizen")["passport"] == "INTEGER")
            #expect(try references("Citizen")["passport"] == "Passport._pk")
            #expect(try columns("Passport")["holder"] == nil)
            #expect(try indexedColumns("Citizen").contains { $0.first == "passport" })

            // Many-to-many and inverse-less to-many: join tables named after the owning side.
            let all = try tables()
            #expect(all.contains("Tag_items"), "many-to-many join table; tables: \(all.sorted())")
            #expect(!all.contains("TodoItem_tags"), "only one join table per many-to-many")
            #expect(all.contains("Team_mascot"))
            #expect(Set(try columns("Tag_items").keys).isSuperset(of: ["source", "target"]))
            #expect(try references("Tag_items")["source"] == "Tag._pk")
            #expect(try references("Tag_items")["target"] == "TodoItem._pk")
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Tag_items") == 2)
            #expect(
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM Tag_items j JOIN Tag t ON j.source = t._pk JOIN TodoItem i ON j.target = i._pk WHERE i.title = 'i'"
                ) == 2)
            #expect(
                try Int.fetchOne(
                    db,
                    sql:
                        "SELECT COUNT(*) FROM Team_mascot j JOIN Team t ON j.source = t._pk JOIN Animal a ON j.target = a._pk WHERE a.species = 'owl'"
                ) == 1)
            #expect(try columns("Team")["mascot"] == nil)
            #expect(try columns("Player")["team"] == "INTEGER")
        }
    }

    // MARK: Bad input

    @Test("an inverse key path that does not point back at the declaring type is a typed container error, not a crash")
    func brokenInverse() throws {
        #expect(throws: SwiftDataError.loadIssueModelContainer) {
            try ModelContainer(for: BrokenInverseOwner.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        }
        #expect(throws: SwiftDataError.loadIssueModelContainer) {
            try ModelContainer(for: MisdirectedInverseOwner.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        }
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("broken.store")
        #expect(throws: SwiftDataError.loadIssueModelContainer) {
            try ModelContainer(for: BrokenInverseOwner.self, configurations: ModelConfiguration(url: url))
        }
        #expect(!FileManager.default.fileExists(atPath: url.path), "no store is created for a schema that cannot be stored")
    }
}
