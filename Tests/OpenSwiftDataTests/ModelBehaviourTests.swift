import Foundation
import Observation
import Testing

@testable import OpenSwiftData

@Suite("@Model behaviour")
struct ModelBehaviourTests {
    @Test("the class's own initializers work and declared defaults are honoured")
    func initializersAndDefaults() {
        let note = Note(title: "a")
        #expect(note.title == "a")
        #expect(note.body == "")
        #expect(note.count == 0)
        #expect(note.status == .pending)
        let other = Note(title: "b", count: 3, status: .done)
        #expect(other.count == 3)
        #expect(other.status == .done)
    }

    @Test("schemaMetadata lists persisted properties in order with their defaults and options")
    func schemaMetadata() throws {
        let names = Note.schemaMetadata.map(\.name)
        #expect(names == ["title", "body", "count", "status", "createdAt"])
        #expect(Note.schemaMetadata[0].keypath == \Note.title)
        #expect(Note.schemaMetadata[0].defaultValue == nil)
        #expect(Note.schemaMetadata[2].defaultValue as? Int == 0)
        #expect(Note.schemaMetadata[3].defaultValue as? Status == .pending)

        let gadget = Gadget.schemaMetadata.map(\.name)
        #expect(gadget == ["name", "draft", "photo", "serial", "title"], "@Transient and computed properties are not persisted")
        let draft = try #require(Gadget.schemaMetadata[1].metadata as? Schema.Attribute)
        #expect(draft.options == [.ephemeral])
        let title = try #require(Gadget.schemaMetadata[4].metadata as? Schema.Attribute)
        #expect(title.originalName == "label")
        #expect(title.hashModifier == "v2")
    }

    @Test("@Transient properties keep ordinary storage and are not saved")
    func transient() throws {
        let container = try inMemoryContainer(Gadget.self)
        let context = ModelContext(container)
        let gadget = Gadget(name: "g")
        gadget.cacheHits = 7
        context.insert(gadget)
        try context.save()
        #expect(gadget.cacheHits == 7)
        let fresh = try ModelContext(container).fetch(FetchDescriptor<Gadget>())
        #expect(fresh.first?.cacheHits == 0)
    }

    @Test("a model's own `id` property is persisted and wins for Identifiable, not for identity")
    func ownIdentifier() throws {
        let container = try inMemoryContainer(Message.self)
        let context = ModelContext(container)
        let uuid = UUID()
        let message = Message(id: uuid, text: "hi")
        #expect(message.id == uuid)
        context.insert(message)
        try context.save()
        #expect(message.persistentModelID.entityName == "Message")
        let fetched = try #require(try ModelContext(container).fetch(FetchDescriptor<Message>()).first)
        #expect(fetched.id == uuid)
        // Upsert on the unique id: a second message with the same id replaces the text.
        let other = ModelContext(container)
        other.insert(Message(id: uuid, text: "edited"))
        try other.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Message>()).map(\.text) == ["edited"])
    }

    @Test("implicitly unwrapped optionals and backticked names are persisted")
    func legacyShapes() throws {
        let container = try inMemoryContainer(Legacy.self)
        let context = ModelContext(container)
        let legacy = Legacy()
        #expect(legacy.nickname == "n")
        legacy.default = 5
        context.insert(legacy)
        let cleared = Legacy()
        cleared.nickname = nil
        context.insert(cleared)
        try context.save()
        let fetched = try ModelContext(container).fetch(FetchDescriptor<Legacy>())
        #expect(fetched.map(\.default) == [5, 1])
        #expect(fetched[0].nickname == "n")
        #expect(fetched[1].nickname == nil)
        #expect(Legacy.schemaMetadata.map(\.name) == ["nickname", "default"])
    }

    @Test("instances never share storage, including models without persisted properties")
    func separateStorage() throws {
        let container = try inMemoryContainer(Marker.self, Note.self)
        let context = ModelContext(container)
        let first = Marker()
        let second = Marker()
        context.insert(first)
        context.insert(second)
        try context.save()
        #expect(first.persistentModelID != second.persistentModelID)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Marker>()) == 2)

        let a = Note(title: "a")
        let b = Note(title: "b")
        a.count = 1
        #expect(b.count == 0, "two new models hold separate values")
    }

    @Test("models are Observable: setting a property fires withObservationTracking")
    func observation() {
        let note = Note(title: "a")
        let fired = LockedFlag()
        withObservationTracking {
            _ = note.title
        } onChange: {
            fired.set()
        }
        note.count = 5
        #expect(!fired.value, "changing another property does not fire")
        note.title = "b"
        #expect(fired.value)
    }

    @Test("init(backingData:) builds fetched models without running the user's initializer")
    func initBackingData() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        context.insert(Note(title: "stored", count: 9, status: .active))
        try context.save()
        let fetched = try ModelContext(container).fetch(FetchDescriptor<Note>())
        #expect(fetched.count == 1)
        #expect(fetched[0].title == "stored")
        #expect(fetched[0].count == 9, "the stored value wins over the declared default")
        #expect(fetched[0].status == .active)
    }
}

/// A flag set from an observation callback.
final class LockedFlag: @unchecked Sendable {
    // @unchecked Sendable: `flag` is only touched while holding `lock`.
    private let lock = NSLock()
    private var flag = false
    func set() { lock.withLock { flag = true } }
    var value: Bool { lock.withLock { flag } }
}
