import Foundation
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

enum LandmarkClimate: String, Codable, CaseIterable {
    case temperate, tropical
}

enum VisitorRating: String, Codable {
    case good, bad
}

struct GeoPoint: Codable, Hashable {
    var latitude: Double
    var longitude: Double
}

struct LandmarkAddress: Codable, Hashable {
    var street: String
    var city: String
    var zip: Int?
    var location: GeoPoint
    var climate: LandmarkClimate
    var id: UUID
    var since: Date
    var tags: [String]
}

struct VisitorReview: Codable, Hashable {
    var text: String
    var rating: VisitorRating
}

@Model final class Landmark {
    var name: String
    var address: LandmarkAddress
    var previous: LandmarkAddress?
    var review: VisitorReview?
    var aliases: [String]

    init(name: String, address: LandmarkAddress, previous: LandmarkAddress? = nil, review: VisitorReview? = nil, aliases: [String] = []) {
        self.name = name
        self.address = address
        self.previous = previous
        self.review = review
        self.aliases = aliases
    }
}

@Suite("Schema.CompositeAttribute describes a Codable struct member by member")
struct CompositeAttributeTests {
    static let paris = LandmarkAddress(
        street: "1 rue de Rivoli", city: "Paris", zip: 75001, location: GeoPoint(latitude: 48.86, longitude: 2.34), climate: .temperate,
        id: UUID(), since: Date(timeIntervalSince1970: 1_700_000_000), tags: ["centre"])

    @Test("a Codable struct's attribute is composite, with its members in order and nested structs composite too")
    func schemaDescribesMembers() throws {
        let entity = try #require(Schema([Landmark.self]).entitiesByName["Landmark"])
        let address = try #require(entity.attributesByName["address"] as? Schema.CompositeAttribute)
        #expect(address.properties.map(\.name) == ["street", "city", "zip", "location", "climate", "id", "since", "tags"])
        let types = Dictionary(uniqueKeysWithValues: address.properties.map { ($0.name, ObjectIdentifier($0.valueType)) })
        #expect(types["street"] == ObjectIdentifier(String.self))
        #expect(types["zip"] == ObjectIdentifier(Int?.self))
        #expect(types["id"] == ObjectIdentifier(UUID.self))
        #expect(types["since"] == ObjectIdentifier(Date.self))
        #expect(types["tags"] == ObjectIdentifier([String].self))
        #expect(address.properties.first { $0.name == "zip" }?.isOptional == true)
        let location = try #require(address.properties.first { $0.name == "location" } as? Schema.CompositeAttribute)
        #expect(location.properties.map(\.name) == ["latitude", "longitude"])
        // An optional struct is composite as well.
        let previous = try #require(entity.attributesByName["previous"] as? Schema.CompositeAttribute)
        #expect(previous.isOptional)
        #expect(previous.properties.map(\.name) == address.properties.map(\.name))
        // Scalars, arrays, and a struct whose members cannot be found (an enum that is not
        // CaseIterable) stay plain attributes.
        #expect(!(entity.attributesByName["name"] is Schema.CompositeAttribute))
        #expect(!(entity.attributesByName["aliases"] is Schema.CompositeAttribute))
        #expect(!(entity.attributesByName["review"] is Schema.CompositeAttribute))
        #expect(entity.attributesByName["review"] != nil)
    }

    @Test("composite attributes compare by their members, and survive Schema.save(to:) and load(from:)")
    func equalityAndDocuments() throws {
        let schema = Schema([Landmark.self])
        #expect(Schema([Landmark.self]) == schema)
        let directory = try TemporaryDirectory()
        let url = directory.file("landmark-schema.json")
        try schema.save(to: url)
        let loaded = try Schema.load(from: url)
        #expect(loaded == schema)
        let address = try #require(loaded.entitiesByName["Landmark"]?.attributesByName["address"] as? Schema.CompositeAttribute)
        #expect(address.properties.count == 8)
        let one = Schema.CompositeAttribute(
            name: "a", valueType: GeoPoint.self, properties: [Schema.Attribute(name: "latitude", valueType: Double.self)])
        let other = Schema.CompositeAttribute(
            name: "a", valueType: GeoPoint.self, properties: [Schema.Attribute(name: "longitude", valueType: Double.self)])
        #expect(one != other)
        #expect(one != Schema.Attribute(name: "a", valueType: GeoPoint.self))
    }

    @Test("values of a composite attribute are saved, fetched back and filtered on their members")
    func storesAndQueries() throws {
        let directory = try TemporaryDirectory()
        let container = try ModelContainer(for: Landmark.self, configurations: ModelConfiguration(url: directory.file("landmarks.store")))
        let context = ModelContext(container)
        var lyon = Self.paris
        lyon.city = "Lyon"
        lyon.location.latitude = 45.76
        context.insert(Landmark(name: "Louvre", address: Self.paris, review: VisitorReview(text: "vast", rating: .good)))
        context.insert(Landmark(name: "Opéra", address: lyon, previous: Self.paris))
        try context.save()

        let fresh = ModelContext(try ModelContainer(for: Landmark.self, configurations: ModelConfiguration(url: directory.file("landmarks.store"))))
        let venues = try fresh.fetch(FetchDescriptor<Landmark>(sortBy: [SortDescriptor(\.name)]))
        #expect(venues.map(\.address) == [Self.paris, lyon])
        #expect(venues.map(\.previous) == [nil, Self.paris])
        #expect(venues.first?.review == VisitorReview(text: "vast", rating: .good))
        let inParis = try fresh.fetch(FetchDescriptor<Landmark>(predicate: #Predicate { $0.address.city == "Paris" }))
        #expect(inParis.map(\.name) == ["Louvre"])
        let north = try fresh.fetch(FetchDescriptor<Landmark>(predicate: #Predicate { $0.address.location.latitude > 46 }))
        #expect(north.map(\.name) == ["Louvre"])
    }
}
