import Foundation
import OpenSwiftDataTestSupport
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

    @Test(".codable values are stored through their Codable form, recorded in the schema, and read back after reopening")
    func codable() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("codable-venues.store")
        do {
            let container = try ModelContainer(for: CodableVenue.self, configurations: ModelConfiguration(url: url))
            let attribute = try #require(container.schema.entity(for: CodableVenue.self)?.attributesByName["place"])
            #expect(attribute.isCodable && attribute.options == [.codable])
            #expect(container.schema.entity(for: CodableVenue.self)?.attributesByName["name"]?.isCodable == false)
            let context = ModelContext(container)
            context.insert(CodableVenue(name: "hall", place: PlaceOnFile(label: "Main St 1", floors: [0, 1, 2])))
            context.insert(CodableVenue(name: "field", place: nil))
            try context.save()
        }
        let reopened = try ModelContainer(for: CodableVenue.self, configurations: ModelConfiguration(url: url))
        let venues = try ModelContext(reopened).fetch(FetchDescriptor<CodableVenue>(sortBy: [SortDescriptor(\.name)]))
        #expect(venues.map(\.place) == [nil, PlaceOnFile(label: "Main St 1", floors: [0, 1, 2])])
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

/// A `Codable` value stored with `@Attribute(.codable)`.
struct PlaceOnFile: Codable, Hashable {
    var label: String
    var floors: [Int]
}

/// A model with a `.codable` attribute (SwiftData, 2026).
@Model
final class CodableVenue {
    var name: String
    @Attribute(.codable) var place: PlaceOnFile?

    init(name: String, place: PlaceOnFile?) {
        self.name = name
        self.place = place
    }
}
