// Model code as apps written for Apple's SwiftData have it, compiled unchanged: the import is
// `import SwiftData` (this target cannot see OpenSwiftData under its own name), types are named
// through the module (`SwiftData.Schema`, `SwiftData.ModelActor`), and the models sit inside
// `#if canImport(SwiftData)`, which would make them vanish without an error if the module were
// missing: `modelsCompiled` then fails.

import Foundation
import Testing

#if canImport(SwiftData)
import SwiftData

let modelsCompiled = true

@Model
final class Shelf {
    @Attribute(.unique) var name: String
    @Relationship(deleteRule: .cascade, inverse: \Volume.shelf) var volumes: [Volume] = []

    init(name: String) {
        self.name = name
    }
}

@Model
final class Volume {
    var title: String
    var pages: Int
    var shelf: Shelf?

    init(title: String, pages: Int) {
        self.title = title
        self.pages = pages
    }
}

/// A model that names the protocol through the module, as some apps' model files do.
@SwiftData.Model
final class Label: SwiftData.PersistentModel {
    var text: String
    init(text: String) { self.text = text }
}

/// A versioned schema written with qualified names throughout.
enum LibrarySchemaV1: SwiftData.VersionedSchema {
    static var versionIdentifier: SwiftData.Schema.Version { SwiftData.Schema.Version(1, 0, 0) }
    static var models: [any SwiftData.PersistentModel.Type] { [Shelf.self, Volume.self, Label.self] }
}

/// A hand-written model actor, named through the module.
actor LibraryStore: SwiftData.ModelActor {
    nonisolated let modelExecutor: any SwiftData.ModelExecutor
    nonisolated let modelContainer: SwiftData.ModelContainer

    init(modelContainer: SwiftData.ModelContainer) {
        self.modelContainer = modelContainer
        let context = SwiftData.ModelContext(modelContainer)
        self.modelExecutor = SwiftData.DefaultSerialModelExecutor(modelContext: context)
    }

    func addShelf(named name: String, titles: [String]) throws -> SwiftData.PersistentIdentifier {
        let shelf = Shelf(name: name)
        modelContext.insert(shelf)
        for (offset, title) in titles.enumerated() {
            let volume = Volume(title: title, pages: 100 * (offset + 1))
            volume.shelf = shelf
        }
        try modelContext.save()
        return shelf.persistentModelID
    }

    func titles(onShelfNamed name: String) throws -> [String] {
        let descriptor = SwiftData.FetchDescriptor<Volume>(
            predicate: #Predicate { $0.shelf?.name == name },
            sortBy: [SortDescriptor(\.pages)]
        )
        return try modelContext.fetch(descriptor).map(\.title)
    }
}

/// A model actor made by the macro, named through the module.
@SwiftData.ModelActor
actor LabelStore {
    func add(_ text: String) throws {
        modelContext.insert(Label(text: text))
        try modelContext.save()
    }

    func count() throws -> Int {
        try modelContext.fetchCount(FetchDescriptor<Label>())
    }
}
#else
let modelsCompiled = false
#endif

@Suite("import SwiftData")
struct SwiftDataImportTests {
    @Test("#if canImport(SwiftData) is true, so model files guarded by it compile")
    func canImportSwiftData() {
        #expect(modelsCompiled)
    }

    #if canImport(SwiftData)
    @Test("SwiftData.Schema, SwiftData.ModelConfiguration and SwiftData.ModelContainer build a working store")
    func qualifiedNames() throws {
        let schema = SwiftData.Schema([Shelf.self, Volume.self, Label.self])
        #expect(schema.entities.map(\.name).sorted() == ["Label", "Shelf", "Volume"])
        let configuration = SwiftData.ModelConfiguration(schema: schema, isStoredInMemoryOnly: true)
        let container = try SwiftData.ModelContainer(for: schema, configurations: [configuration])
        let context = SwiftData.ModelContext(container)
        let shelf = Shelf(name: "Poetry")
        context.insert(shelf)
        let volume = Volume(title: "Odes", pages: 80)
        volume.shelf = shelf
        context.insert(Label(text: "new"))
        try context.save()

        let shelves = try context.fetch(SwiftData.FetchDescriptor<Shelf>())
        #expect(shelves.map(\.name) == ["Poetry"])
        #expect(shelves.first?.volumes.map(\.title) == ["Odes"])
        #expect(try context.fetchCount(FetchDescriptor<Label>()) == 1)
    }

    @Test("A versioned schema written with qualified names opens a store")
    func versionedSchema() throws {
        let schema = SwiftData.Schema(versionedSchema: LibrarySchemaV1.self)
        let container = try SwiftData.ModelContainer(for: schema, configurations: SwiftData.ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.insert(Shelf(name: "Atlases"))
        try context.save()
        #expect(try context.fetch(FetchDescriptor<Shelf>()).map(\.name) == ["Atlases"])
    }

    @Test("An actor declared 'actor Store: SwiftData.ModelActor' saves and queries on its own executor")
    func handWrittenModelActor() async throws {
        let container = try ModelContainer(for: Shelf.self, Volume.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let store = LibraryStore(modelContainer: container)
        let id = try await store.addShelf(named: "Novels", titles: ["Long", "Short", "Middling"])
        #expect(try await store.titles(onShelfNamed: "Novels") == ["Long", "Short", "Middling"])

        // The save reached the store: another context sees it.
        let context = ModelContext(container)
        let shelf: Shelf? = context.model(for: id) as? Shelf
        #expect(shelf?.name == "Novels")
        #expect(shelf?.volumes.count == 3)
    }

    @Test("@SwiftData.ModelActor, #Predicate and the unique upsert work with only SwiftData imported")
    func macrosThroughTheModule() async throws {
        let container = try ModelContainer(for: Label.self, Shelf.self, Volume.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let labels = LabelStore(modelContainer: container)
        try await labels.add("a")
        try await labels.add("b")
        #expect(try await labels.count() == 2)

        let context = ModelContext(container)
        context.insert(Shelf(name: "Same"))
        try context.save()
        context.insert(Shelf(name: "Same"))  // `.unique`: an upsert, not a second row
        try context.save()
        let prefix = "Sa"
        let found = try context.fetch(FetchDescriptor<Shelf>(predicate: #Predicate { $0.name.starts(with: prefix) }))
        #expect(found.count == 1)
    }
    #endif
}
