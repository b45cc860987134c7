import Foundation
import Testing

@testable import OpenSwiftData

@Suite("Related models are inserted when they are linked")
struct LinkInsertionTests {
    private func makeContainer() throws -> ModelContainer {
        try inMemoryContainer(Mailbox.self, Letter.self)
    }

    private func isInserted(_ model: some PersistentModel, in context: ModelContext) -> Bool {
        context.insertedModelsArray.contains { $0.persistentModelID == model.persistentModelID }
    }

    @Test("appending a new model to a to-many of an inserted model inserts it at once")
    func appendToInserted() throws {
        let context = ModelContext(try makeContainer())
        let inbox = Mailbox(title: "Inbox")
        context.insert(inbox)
        let letter = Letter(text: "hello")
        #expect(letter.modelContext == nil)
        inbox.letters.append(letter)
        #expect(letter.modelContext === context)
        #expect(isInserted(letter, in: context))
        #expect(letter.hasChanges)
    }

    @Test("setting the to-one side to a registered (fetched) model inserts the new model")
    func toOneSideOfRegistered() throws {
        let container = try makeContainer()
        let writer = ModelContext(container)
        writer.insert(Mailbox(title: "Inbox"))
        try writer.save()

        let context = ModelContext(container)
        let inbox = try #require(try context.fetch(FetchDescriptor<Mailbox>()).first)
        #expect(context.insertedModelsArray.isEmpty)
        let letter = Letter(text: "hello")
        letter.mailbox = inbox
        #expect(letter.modelContext === context)
        #expect(isInserted(letter, in: context))
        #expect(inbox.letters.contains { $0 === letter })
        try context.save()
        let saved = try ModelContext(container).fetch(FetchDescriptor<Letter>())
        #expect(saved.map(\.text) == ["hello"])
        #expect(saved.first?.mailbox?.title == "Inbox")
    }

    @Test("a model unlinked again before the save stays inserted, and is saved unlinked")
    func unlinkedStaysInserted() throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        let inbox = Mailbox(title: "Inbox")
        context.insert(inbox)
        try context.save()
        let letter = Letter(text: "draft")
        inbox.letters.append(letter)
        inbox.letters.removeAll()
        #expect(letter.mailbox == nil)
        #expect(letter.modelContext === context)
        #expect(isInserted(letter, in: context))
        try context.save()
        let saved = try ModelContext(container).fetch(FetchDescriptor<Letter>())
        #expect(saved.map(\.text) == ["draft"])
        #expect(saved.first?.mailbox == nil)
    }

    @Test("linking two models that are in no context inserts neither; inserting one inserts both")
    func bothOutside() throws {
        let context = ModelContext(try makeContainer())
        let inbox = Mailbox(title: "Inbox")
        let letter = Letter(text: "hello")
        inbox.letters.append(letter)
        #expect(letter.modelContext == nil)
        #expect(inbox.modelContext == nil)
        context.insert(inbox)
        #expect(letter.modelContext === context)
        #expect(isInserted(letter, in: context))
    }

    @Test("a model deleted from its context is not brought back by a link")
    func deletedOwnerInsertsNothing() throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        let inbox = Mailbox(title: "Inbox")
        context.insert(inbox)
        try context.save()
        context.delete(inbox)
        let letter = Letter(text: "late")
        letter.mailbox = inbox
        #expect(letter.modelContext == nil)
        #expect(context.insertedModelsArray.isEmpty)
    }
}
