import Foundation
import Testing
@testable import OpenSwiftData

@Suite("@Attribute options")
struct AttributeOptionTests {
    @Test(".ephemeral values are tracked but never written")
    func ephemeral() throws {
        let container = try inMemoryContainer(Gadget.self)
        let context = ModelContext(container)
        let gadget = Gadget(name: "g")
        context.insert(gadget)
        try context.save()
        gadget.draft = "typing…"
        #expect(gadget.hasChanges, "an ephemeral change is tracked")
        #expect(gadget.draft == "typing…")
        try context.save()
        let fresh = try #require(try ModelContext(container).fetch(FetchDescriptor<Gadget>()).first)
        #expect(fresh.draft == "none", "a fresh fetch sees the declared default")
    }

    @Test("options without an effect on Linux are accepted and recorded in the schema")
    func recordedOptions() throws {
        let entity = try #require(Schema([Gadget.self]).entity(for: Gadget.self))
        let serial = try #require(entity.attributesByName["serial"])
        #expect(Set(serial.options) == [.spotlight, .allowsCloudEncryption, .preserveValueOnDeletion])
        #expect(entity.attributesByName["photo"]?.options == [.externalStorage])
        #expect(entity.attributesByName["draft"]?.isTransient == true)
        #expect(entity.attributesByName["title"]?.originalName == "label")
        #expect(entity.attributesByName["photo"]?.isOptional == true)
        #expect(entity.attributesByName["cacheHits"] == nil)
    }

    @Test(".externalStorage data round-trips byte for byte")
    func externalStorage() throws {
        let container = try inMemoryContainer(Gadget.self)
        let context = ModelContext(container)
        let gadget = Gadget(name: "camera")
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        gadget.photo = bytes
        context.insert(gadget)
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Gadget>()).first?.photo == bytes)
    }
}
