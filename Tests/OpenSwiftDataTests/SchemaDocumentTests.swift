import Foundation
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

@Suite("Schema.save(to:) and load(from:)")
struct SchemaDocumentTests {
    @Test(
        "a schema saved and loaded again equals the one saved: entities, attributes and their types, relationships, constraints, inheritance and version"
    )
    func roundTrip() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("schema.json")
        let schema = Schema([Conversation.self, ChatMessage.self, Account.self, Everything.self, Car.self], version: Schema.Version(2, 1, 0))
        try schema.save(to: url)
        let loaded = try Schema.load(from: url)
        #expect(loaded == schema)
        #expect(loaded.version == Schema.Version(2, 1, 0))
        #expect(loaded.entities.map(\.name) == schema.entities.map(\.name))
        for entity in schema.entities {
            let other = try #require(loaded.entitiesByName[entity.name])
            #expect(other.properties.map(\.name) == entity.properties.map(\.name))
            #expect(other.superentityName == entity.superentityName)
            #expect(other.uniquenessConstraints == entity.uniquenessConstraints)
            for attribute in entity.attributes {
                let read = try #require(other.attributesByName[attribute.name])
                #expect(ObjectIdentifier(read.valueType) == ObjectIdentifier(attribute.valueType))
                #expect(read.isOptional == attribute.isOptional)
                #expect(read.options == attribute.options)
            }
            for relationship in entity.relationships {
                let read = try #require(other.relationshipsByName[relationship.name])
                #expect(read.destination == relationship.destination)
                #expect(read.inverseName == relationship.inverseName)
                #expect(read.deleteRule == relationship.deleteRule)
                #expect(read.isToOneRelationship == relationship.isToOneRelationship)
            }
        }
        let car = try #require(loaded.entitiesByName["Car"])
        #expect(car.superentity === loaded.entitiesByName["Vehicle"])
        #expect(loaded.entitiesByName["Vehicle"]?.subentities.contains(car) == true)
        #expect(loaded.entitiesByName["Account"]?.attributesByName["email"]?.isUnique == true)
    }

    @Test("a file that is not a saved schema, or names a type this process lacks, is a typed error naming what is wrong")
    func badDocuments() throws {
        let directory = try TemporaryDirectory()
        let garbage = directory.file("garbage.json")
        try Data("{\"format\": 1}".utf8).write(to: garbage)
        #expect(throws: SwiftDataError.unknownSchema) { _ = try Schema.load(from: garbage) }
        #expect(throws: SwiftDataError.unknownSchema) { _ = try Schema.load(from: directory.file("missing.json")) }

        let url = directory.file("schema.json")
        try Schema([Account.self]).save(to: url)
        let text = try String(contentsOf: url, encoding: .utf8)
        let mangled = try #require(_mangledTypeName(String.self))
        try Data(text.replacingOccurrences(of: "\"\(mangled)\"", with: "\"NoSuchType999\"").utf8).write(to: url)
        do {
            _ = try Schema.load(from: url)
            Issue.record("a schema naming a missing type was loaded")
        } catch let error as SwiftDataError {
            #expect(error.code == .unknownSchema)
            #expect(error.description.contains("Account."))
        }
    }
}
