import Foundation
import Testing

@testable import OpenSwiftData

@Suite("ModelContext")
struct ContextTests {
    @Test("insert, save, change, delete, with hasChanges and the pending arrays")
    func lifecycle() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        #expect(!context.hasChanges)
        let note = Note(title: "a")
        #expect(note.modelContext == nil)
        context.insert(note)
        #expect(note.modelContext === context)
        #expect(context.hasChanges)
        #expect(note.hasChanges)
        #expect(context.insertedModelsArray.count == 1)
        #expect(note.persistentModelID.isTemporary)
        let temporary = note.persistentModelID

        try context.save()
        #expect(!context.hasChanges)
        #expect(!note.hasChanges)
        #expect(!note.persistentModelID.isTemporary)
        #expect(note.persistentModelID != temporary)
        #expect(note.persistentModelID.storeIdentifier != nil)
        #expect(note.persistentModelID.entityName == "Note")

        note.count = 4
        #expect(note.hasChanges)
        #expect(context.changedModelsArray.count == 1)
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Note>()).first?.count == 4)

        context.delete(note)
        #expect(note.isDeleted)
        #expect(context.deletedModelsArray.count == 1)
        try context.save()
        // Still deleted once the deletion is saved; it belongs to no context any more.
        #expect(note.isDeleted)
        #expect(note.modelContext == nil)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Note>()) == 0)
    }

    @Test("fetching the same row twice yields the same instance")
    func identityMap() throws {
        let container = try inMemoryContainer(Note.self)
        let writer = ModelContext(container)
        writer.insert(Note(title: "a"))
        try writer.save()
        let context = ModelContext(container)
        let first = try context.fetch(FetchDescriptor<Note>())
        let second = try context.fetch(FetchDescriptor<Note>())
        #expect(first[0] === second[0])
        #expect(try ModelContext(container).fetch(FetchDescriptor<Note>())[0] !== first[0], "another context has its own instance")
    }

    @Test("rollback restores saved values and forgets unsaved inserts and deletes")
    func rollback() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        let kept = Note(title: "kept", count: 1, status: .active)
        let doomed = Note(title: "doomed")
        context.insert(kept)
        context.insert(doomed)
        try context.save()

        kept.title = "changed"
        kept.count = 99
        context.delete(doomed)
        let unsaved = Note(title: "unsaved")
        context.insert(unsaved)
        context.rollback()

        #expect(kept.title == "kept")
        #expect(kept.count == 1)
        #expect(!doomed.isDeleted)
        #expect(unsaved.modelContext == nil)
        #expect(!context.hasChanges)
        try context.save()
        let titles = try ModelContext(container).fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title)
        #expect(titles == ["doomed", "kept"])
    }

    @Test("deleting an unsaved insert forgets it")
    func deleteUnsavedInsert() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        let note = Note(title: "a")
        context.insert(note)
        context.delete(note)
        #expect(!context.hasChanges)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Note>()) == 0)
    }

    @Test("transaction saves after the block, and saves nothing when the block throws")
    func transaction() throws {
        struct Abort: Error {}
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        try context.transaction { context.insert(Note(title: "in")) }
        #expect(!context.hasChanges)
        #expect(throws: Abort.self) {
            try context.transaction {
                context.insert(Note(title: "out"))
                throw Abort()
            }
        }
        #expect(context.hasChanges, "changes made by a throwing block stay pending")
        #expect(try ModelContext(container).fetch(FetchDescriptor<Note>()).map(\.title) == ["in"])
    }

    @Test("model(for:) and registeredModel(for:) find models by identifier, across contexts")
    func lookups() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        let note = Note(title: "a")
        context.insert(note)
        let temporary: Note? = context.registeredModel(for: note.persistentModelID)
        #expect(temporary === note)
        try context.save()
        let id = note.persistentModelID
        let registered: Note? = context.registeredModel(for: id)
        #expect(registered === note)
        #expect(context.model(for: id) as? Note === note)

        let other = ModelContext(container)
        let notYet: Note? = other.registeredModel(for: id)
        #expect(notYet == nil, "registeredModel never touches the store")
        let loaded = try #require(other.model(for: id) as? Note)
        #expect(loaded.title == "a")
        let nowRegistered: Note? = other.registeredModel(for: id)
        #expect(nowRegistered === loaded)
    }

    @Test("model(for:) of a deleted row returns a placeholder instead of crashing")
    func modelForMissingRow() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        let note = Note(title: "gone", count: 2, status: .done)
        context.insert(note)
        try context.save()
        let id = note.persistentModelID
        context.delete(note)
        try context.save()
        let placeholder = try #require(ModelContext(container).model(for: id) as? Note)
        #expect(placeholder.count == 0)
        #expect(placeholder.modelContext == nil)
    }

    @Test("didSave reports inserted, updated and deleted identifiers")
    func didSaveNotification() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        let first = Note(title: "1")
        let second = Note(title: "2")
        context.insert(first)
        context.insert(second)
        try context.save()

        let received = NotificationBox()
        let token = NotificationCenter.default.addObserver(forName: ModelContext.didSave, object: context, queue: nil) { note in
            received.store(note.userInfo)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        first.count = 1
        context.delete(second)
        let third = Note(title: "3")
        context.insert(third)
        try context.save()
        let info = try #require(received.userInfo)
        #expect(info[ModelContext.NotificationKey.insertedIdentifiers.rawValue] as? [PersistentIdentifier] == [third.persistentModelID])
        #expect(info[ModelContext.NotificationKey.updatedIdentifiers.rawValue] as? [PersistentIdentifier] == [first.persistentModelID])
        #expect(info[ModelContext.NotificationKey.deletedIdentifiers.rawValue] as? [PersistentIdentifier] == [second.persistentModelID])
    }

    @Test("a model of a type outside the schema is refused at save with a typed error")
    func modelOutsideSchema() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        context.insert(Account(email: "a@b", name: "x"))
        #expect(throws: SwiftDataError.loadIssueModelContainer) { try context.save() }
        #expect(throws: SwiftDataError.loadIssueModelContainer) { try context.fetch(FetchDescriptor<Account>()) }
    }

    @Test("a string with a NUL character is refused with a typed error, not truncated")
    func nulString() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        context.insert(Note(title: "before\u{0}after"))
        do {
            try context.save()
            Issue.record("save should have thrown")
        } catch let error as SwiftDataError {
            #expect(error == .valueEncodingFailure)
            #expect(error.propertyName == "title")
            #expect(error.detail.contains("NUL"))
        }
    }

    @Test("a value that cannot be encoded fails the whole save, naming entity and property")
    func encodingFailure() throws {
        let container = try inMemoryContainer(Everything.self, Note.self)
        let context = ModelContext(container)
        let note = Note(title: "would be written")
        context.insert(note)
        let temporaryID = note.persistentModelID
        let bad = Everything(seed: 1)
        bad.uint64 = UInt64.max
        context.insert(bad)
        do {
            try context.save()
            Issue.record("save should have thrown")
        } catch let error as SwiftDataError {
            #expect(error == .valueEncodingFailure)
            #expect(error.entityName == "Everything")
            #expect(error.propertyName == "uint64")
        }
        #expect(context.hasChanges, "the context keeps its pending changes")
        let other = ModelContext(container)
        #expect(try other.fetchCount(FetchDescriptor<Note>()) == 0, "nothing of the failed save was written")
        #expect(try other.fetchCount(FetchDescriptor<Everything>()) == 0)
        #expect(note.persistentModelID == temporaryID, "the note written before the failure is unsaved again")

        bad.uint64 = 1
        try context.save()
        #expect(note.persistentModelID != temporaryID)
        #expect(try other.fetchCount(FetchDescriptor<Note>()) == 1)
        #expect(try other.fetchCount(FetchDescriptor<Everything>()) == 1)
    }
}

/// Keeps the userInfo of the last notification received.
final class NotificationBox: @unchecked Sendable {
    // @unchecked Sendable: `info` is only touched while holding `lock`.
    private let lock = NSLock()
    private var info: [AnyHashable: Any]?
    func store(_ userInfo: [AnyHashable: Any]?) { lock.withLock { info = userInfo } }
    var userInfo: [AnyHashable: Any]? { lock.withLock { info } }
}
