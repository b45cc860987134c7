// Model code as an app made from Xcode 26's templates writes it: the module's default isolation
// is the main actor (`SWIFT_DEFAULT_ACTOR_ISOLATION = MainActor`) with approachable concurrency's
// upcoming features (Package.swift sets the same flags on this target). A model class is then
// main-actor isolated unless it says `nonisolated`; both must compile and work, and a
// `@ModelActor` must be able to use a `nonisolated` model off the main actor.

import Foundation
import OpenSwiftData
import Testing

/// The template's model: main-actor isolated, as everything else in such a module.
@Model
final class Item {
    var timestamp: Date
    var title: String = ""
    @Relationship(deleteRule: .cascade, inverse: \Note.item) var notes: [Note] = []

    init(timestamp: Date) {
        self.timestamp = timestamp
    }
}

/// A main-actor model with `let` properties.
@Model
final class Entry {
    @Attribute(.unique) let id: UUID
    let createdAt: Date
    var body: String

    init(id: UUID = UUID(), createdAt: Date, body: String) {
        self.id = id
        self.createdAt = createdAt
        self.body = body
    }
}

/// A related model of the main-actor model.
@Model
final class Note {
    var text: String
    var item: Item?

    init(text: String) {
        self.text = text
    }
}

/// A model opted out of the default isolation, so that a model actor can use it.
@Model
nonisolated final class Reading {
    #Unique<Reading>([\.sensor, \.takenAt])
    var sensor: String
    var takenAt: Date
    var value: Double

    init(sensor: String, takenAt: Date, value: Double) {
        self.sensor = sensor
        self.takenAt = takenAt
        self.value = value
    }
}

/// An importer on its own actor, as apps write them.
@ModelActor
actor ReadingImporter {
    func importReadings(_ values: [Double], sensor: String, from start: Date) throws -> Int {
        for (offset, value) in values.enumerated() {
            modelContext.insert(Reading(sensor: sensor, takenAt: start.addingTimeInterval(Double(offset)), value: value))
        }
        try modelContext.save()
        return try modelContext.fetchCount(FetchDescriptor<Reading>(predicate: #Predicate { $0.sensor == sensor }))
    }

    func identifiers(above threshold: Double) throws -> [PersistentIdentifier] {
        try modelContext.fetchIdentifiers(FetchDescriptor<Reading>(predicate: #Predicate { $0.value > threshold }, sortBy: [SortDescriptor(\.value)]))
    }
}

@Suite("A module whose default isolation is the main actor")
struct MainActorDefaultTests {
    @Test("main-actor models insert, relate, save, fetch by predicate and cascade through the main context")
    func mainActorModels() throws {
        let container = try ModelContainer(for: Item.self, Note.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = container.mainContext
        let item = Item(timestamp: Date(timeIntervalSince1970: 100))
        item.title = "groceries"
        context.insert(item)
        item.notes.append(Note(text: "milk"))
        try context.save()

        let cutoff = Date(timeIntervalSince1970: 50)
        let fetched = try context.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.timestamp > cutoff && $0.title.contains("gro") }))
        #expect(fetched.map(\.title) == ["groceries"])
        #expect(fetched.first?.notes.map(\.text) == ["milk"])
        #expect(try ModelContext(container).fetch(FetchDescriptor<Note>()).first?.item?.title == "groceries")

        context.delete(item)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Note>()) == 0)
    }

    @Test("let properties of a main-actor model are saved and fetched back")
    func mainActorLetProperties() throws {
        let container = try ModelContainer(for: Entry.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let id = UUID()
        let created = Date(timeIntervalSince1970: 1_234)
        container.mainContext.insert(Entry(id: id, createdAt: created, body: "first"))
        try container.mainContext.save()
        let fetched = try ModelContext(container).fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.id == id }))
        #expect(fetched.map(\.createdAt) == [created])
        #expect(fetched.map(\.body) == ["first"])
    }

    @Test("a model actor imports nonisolated models off the main actor; the main context reads them by identifier")
    func modelActorWithNonisolatedModels() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-mainactor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let container = try ModelContainer(
            for: Reading.self, configurations: ModelConfiguration(url: directory.appendingPathComponent("readings.store")))
        let importer = ReadingImporter(modelContainer: container)
        let start = Date(timeIntervalSince1970: 1_000)
        #expect(try await importer.importReadings([1.5, 7.25, 3.0], sensor: "kitchen", from: start) == 3)
        // The same readings again: the compound #Unique makes them upserts, not new rows.
        #expect(try await importer.importReadings([2.5, 8.25, 4.0], sensor: "kitchen", from: start) == 3)

        let ids = try await importer.identifiers(above: 3.0)
        let values = ids.compactMap { (container.mainContext.model(for: $0) as? Reading)?.value }
        #expect(values == [4.0, 8.25])
    }
}
