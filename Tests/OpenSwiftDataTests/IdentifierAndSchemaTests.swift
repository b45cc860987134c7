import Foundation
import Testing

@testable import OpenSwiftData

@Suite("PersistentIdentifier and Schema")
struct IdentifierAndSchemaTests {
    @Test("identifiers are Codable (a decoded identifier equals the live one), Hashable and Comparable")
    func identifierCodable() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        let notes = (0..<3).map { Note(title: "\($0)") }
        notes.forEach(context.insert)
        try context.save()
        let ids = notes.map(\.persistentModelID)
        let data = try JSONEncoder().encode(ids)
        let decoded = try JSONDecoder().decode([PersistentIdentifier].self, from: data)
        #expect(decoded == ids)
        #expect(Set(decoded).count == 3)
        #expect(ids.sorted() == ids, "row identifiers order by primary key")
        #expect(context.model(for: decoded[1]) as? Note === notes[1])
        #expect(notes[0] == notes[0])
        #expect(notes[0] != notes[1])
        #expect(notes[0].id == ids[0])
    }

    @Test("PersistentIdentifier.identifier(for:entityName:primaryKey:) builds a usable identifier")
    func identifierFromParts() throws {
        let container = try inMemoryContainer(Note.self)
        let context = ModelContext(container)
        let note = Note(title: "parts")
        context.insert(note)
        try context.save()
        let storeID = try #require(note.persistentModelID.storeIdentifier)
        let built = try PersistentIdentifier.identifier(for: storeID, entityName: "Note", primaryKey: Int64(1))
        #expect(built == note.persistentModelID)
        #expect(throws: SwiftDataError.unsupportedKeyPath) {
            try PersistentIdentifier.identifier(for: storeID, entityName: "Note", primaryKey: "not a number")
        }
    }

    @Test("a Schema built from model types lists entities, attributes and version")
    func schema() throws {
        let schema = Schema([Note.self, Account.self], version: Schema.Version(2, 1, 0))
        #expect(schema.version == Schema.Version(2, 1, 0))
        #expect(schema.version.description == "2.1.0")
        #expect(Schema.Version(1, 2, 3) < Schema.Version(1, 10, 0))
        #expect(schema.entities.map(\.name) == ["Note", "Account"])
        let note = try #require(schema.entitiesByName["Note"])
        #expect(note.properties.map(\.name) == ["title", "body", "count", "status", "createdAt"])
        #expect(note.attributesByName["status"]?.valueType == Status.self)
        #expect(note.attributesByName["count"]?.defaultValue as? Int == 0)
        #expect(Schema.entityName(for: OtherSchema.Note.self) == "Note", "entity names are unqualified class names")
        #expect(Schema(Note.self) == Schema([Note.self]))
    }

    @Test("SwiftDataError matches by code in catch patterns and carries its detail")
    func errors() {
        let error: any Error = SwiftDataError(.loadIssueModelContainer, "detail here", entity: "E", property: "p")
        var matched = false
        do { throw error } catch SwiftDataError.loadIssueModelContainer { matched = true } catch {}
        #expect(matched)
        #expect(!(SwiftDataError.unsupportedPredicate ~= error))
        #expect("\(error)".contains("detail here"))
    }
}
