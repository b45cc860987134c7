import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

@Model
final class ShelfLibrary {
    var name: String
    @Relationship(deleteRule: .cascade, inverse: \ShelfBook.library) var books: [ShelfBook] = []
    init(name: String) { self.name = name }
}

@Model
final class ShelfBook {
    var title: String
    var library: ShelfLibrary?
    init(title: String) { self.title = title }
}

@Model
final class ScratchDraft {
    var text: String
    init(text: String) { self.text = text }
}

/// A model whose to-one reaches a draft without an inverse: a schema of drafts alone does not
/// bring it in.
@Model
final class ScratchTag {
    var label: String
    var draft: ScratchDraft?
    init(label: String) { self.label = label }
}

enum DraftSchemaV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [ScratchDraft.self, ShelfLibrary.self] }
}

enum DraftPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [DraftSchemaV1.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: DraftSchemaV1.self, toVersion: DraftSchemaV1.self, willMigrate: nil, didMigrate: nil)]
    }
}

@Suite("A container with several configurations keeps each configuration's entities in its own store")
struct SeveralConfigurationsTests {
    /// The tables of the SQLite file at `url`.
    private func tables(in url: URL) throws -> Set<String> {
        let queue = try DatabaseQueue(path: url.path)
        return try queue.read { db in Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")) }
    }

    @Test("one configuration on disk and one in memory: both save and fetch; reopened, the file's models are back and the in-memory ones are gone")
    func diskAndMemory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("library.store")
        func open() throws -> ModelContainer {
            let disk = ModelConfiguration("Library", schema: Schema([ShelfLibrary.self]), url: url)
            let scratch = ModelConfiguration("Scratch", schema: Schema([ScratchDraft.self]), isStoredInMemoryOnly: true)
            return try ModelContainer(for: ShelfLibrary.self, ScratchDraft.self, configurations: disk, scratch)
        }
        do {
            let container = try open()
            #expect(container.configurations.count == 2)
            let context = ModelContext(container)
            let library = ShelfLibrary(name: "Central")
            context.insert(library)
            for title in ["Dune", "Emma"] {
                let book = ShelfBook(title: title)
                context.insert(book)
                book.library = library
            }
            context.insert(ScratchDraft(text: "not kept"))
            try context.save()

            let fresh = ModelContext(container)
            let books = try fresh.fetch(FetchDescriptor<ShelfBook>(sortBy: [SortDescriptor(\.title)]))
            #expect(books.map(\.title) == ["Dune", "Emma"])
            #expect(books.first?.library?.name == "Central")
            #expect(try fresh.fetch(FetchDescriptor<ScratchDraft>()).map(\.text) == ["not kept"])
        }
        #expect(try tables(in: url).isSuperset(of: ["ShelfLibrary", "ShelfBook"]))
        #expect(try !tables(in: url).contains("ScratchDraft"))

        let context = ModelContext(try open())
        #expect(try context.fetch(FetchDescriptor<ShelfLibrary>()).first?.books.count == 2)
        #expect(try context.fetchCount(FetchDescriptor<ScratchDraft>()) == 0)
        context.insert(ScratchDraft(text: "new"))
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<ScratchDraft>()) == 1)
    }

    @Test("two files: each holds its own tables; reopened, new rows get fresh identifiers, history and deleteAllData cover both")
    func twoFiles() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let libraryURL = directory.file("library.store")
        let draftsURL = directory.file("drafts.store")
        func open() throws -> ModelContainer {
            try ModelContainer(
                for: ShelfLibrary.self, ScratchDraft.self,
                configurations: ModelConfiguration("Library", schema: Schema([ShelfLibrary.self]), url: libraryURL),
                ModelConfiguration("Drafts", url: draftsURL))
        }
        var first: [PersistentIdentifier] = []
        do {
            let context = ModelContext(try open())
            let drafts = [ScratchDraft(text: "a"), ScratchDraft(text: "b")]
            for draft in drafts { context.insert(draft) }
            context.insert(ShelfLibrary(name: "Central"))
            try context.save()
            first = drafts.map(\.persistentModelID)
        }
        #expect(try tables(in: draftsURL).contains("ScratchDraft"))
        #expect(try !tables(in: draftsURL).contains("ShelfLibrary"))
        #expect(try !tables(in: libraryURL).contains("ScratchDraft"))

        let container = try open()
        let context = ModelContext(container)
        context.author = "second"
        let draft = ScratchDraft(text: "c")
        context.insert(draft)
        try context.save()
        #expect(!first.contains(draft.persistentModelID))
        #expect(try context.fetch(FetchDescriptor<ScratchDraft>(sortBy: [SortDescriptor(\.text)])).map(\.text) == ["a", "b", "c"])

        let history = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(history.count == 2)
        #expect(history.last?.author == "second")
        #expect(history.last?.changes.map(\.changedPersistentIdentifier) == [draft.persistentModelID])

        container.deleteAllData()
        #expect(try context.fetchCount(FetchDescriptor<ScratchDraft>()) == 0)
        #expect(try context.fetchCount(FetchDescriptor<ShelfLibrary>()) == 0)
        let rows = try DatabaseQueue(path: draftsURL.path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ScratchDraft") }
        #expect(rows == 0)
    }

    @Test(
        "the file that keeps the history stays the main file whatever the order; keys of deleted rows are never given again, in the split container or in the file opened alone"
    )
    func keysAndHistoryAcrossOrders() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let libraryURL = directory.file("library.store")
        let draftsURL = directory.file("drafts.store")
        let library = ModelConfiguration("Library", schema: Schema([ShelfLibrary.self]), url: libraryURL)
        let drafts = ModelConfiguration("Drafts", schema: Schema([ScratchDraft.self]), url: draftsURL)
        var deleted: PersistentIdentifier?
        do {
            let container = try ModelContainer(for: ShelfLibrary.self, ScratchDraft.self, configurations: library, drafts)
            let context = ModelContext(container)
            let written = (1...3).map { ScratchDraft(text: "\($0)") }
            for draft in written { context.insert(draft) }
            try context.save()
            #expect(!FileManager.default.fileExists(atPath: draftsURL.path + "-wal"), "attached files use a rollback journal")
            deleted = written.last?.persistentModelID
            if let last = written.last { context.delete(last) }
            try context.save()
        }
        // Listed the other way round: the library file keeps the history and the keys' owner.
        let swapped = try ModelContainer(for: ShelfLibrary.self, ScratchDraft.self, configurations: drafts, library)
        let context = ModelContext(swapped)
        #expect(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).count == 2)
        let fresh = ScratchDraft(text: "4")
        context.insert(fresh)
        try context.save()
        #expect(fresh.persistentModelID != deleted)
        #expect(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).count == 3)
        context.delete(fresh)
        try context.save()

        // The drafts file opened alone: its own key sequence says 4 was given.
        let alone = try ModelContainer(for: ScratchDraft.self, configurations: ModelConfiguration(url: draftsURL))
        let aloneContext = ModelContext(alone)
        let other = ScratchDraft(text: "5")
        aloneContext.insert(other)
        try aloneContext.save()
        let keys = try alone.store.read { db in try Int64.fetchAll(db, sql: "SELECT _pk FROM ScratchDraft ORDER BY _pk") }
        #expect(keys == [1, 2, 5])

        // Now both files keep a history: a split container refuses to choose.
        let both = #expect(throws: SwiftDataError.self) {
            try ModelContainer(for: ShelfLibrary.self, ScratchDraft.self, configurations: library, drafts)
        }
        #expect(both?.description.contains("history or sync state") == true)
    }

    @Test("a store that gains a second configuration, listed first, keeps its history and identifiers")
    func storeGainsAConfiguration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let libraryURL = directory.file("library.store")
        let id: PersistentIdentifier
        do {
            let single = try ModelContainer(for: ShelfLibrary.self, configurations: ModelConfiguration(url: libraryURL))
            let first = ModelContext(single)
            let central = ShelfLibrary(name: "Central")
            first.insert(central)
            try first.save()
            id = central.persistentModelID
        }

        let split = try ModelContainer(
            for: ShelfLibrary.self, ScratchDraft.self,
            configurations: ModelConfiguration("Drafts", schema: Schema([ScratchDraft.self]), url: directory.file("drafts.store")),
            ModelConfiguration("Library", schema: Schema([ShelfLibrary.self]), url: libraryURL))
        let context = ModelContext(split)
        #expect((context.model(for: id) as? ShelfLibrary)?.name == "Central")
        #expect(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).count == 1)
    }

    @Test("configurations that cannot be split are typed errors naming the entity or the property")
    func refusals() throws {
        let drafts = ModelConfiguration("Drafts", schema: Schema([ScratchDraft.self]), isStoredInMemoryOnly: true)
        // A tag, in the configuration without a schema, relates to a draft in another store.
        let crossing = #expect(throws: SwiftDataError.self) {
            try ModelContainer(
                for: ScratchDraft.self, ScratchTag.self, configurations: drafts, ModelConfiguration("Rest", isStoredInMemoryOnly: true))
        }
        #expect(crossing?.code == .loadIssueModelContainer)
        #expect(crossing?.description.contains("ScratchTag.draft") == true)

        let twice = #expect(throws: SwiftDataError.self) {
            try ModelContainer(
                for: ShelfLibrary.self,
                configurations: ModelConfiguration("A", schema: Schema([ShelfLibrary.self]), isStoredInMemoryOnly: true),
                ModelConfiguration("B", schema: Schema([ShelfBook.self]), isStoredInMemoryOnly: true))
        }
        #expect(twice?.code == .loadIssueModelContainer && twice?.description.contains("ShelfLibrary") == true)

        let many = #expect(throws: SwiftDataError.self) {
            try ModelContainer(
                for: Schema([ScratchDraft.self]),
                configurations: (0..<12).map { ModelConfiguration("C\($0)", schema: Schema([]), isStoredInMemoryOnly: true) }
                    + [ModelConfiguration("Drafts", isStoredInMemoryOnly: true)])
        }
        #expect(many?.description.contains("at most 11 configurations") == true)

        let nowhere = #expect(throws: SwiftDataError.self) {
            try ModelContainer(
                for: ShelfLibrary.self, ScratchDraft.self, configurations: drafts,
                ModelConfiguration("Other", schema: Schema([]), isStoredInMemoryOnly: true))
        }
        #expect(nowhere?.code == .configurationSchemaNotFoundInContainerSchema)

        let custom = #expect(throws: SwiftDataError.self) {
            try ModelContainer(
                for: Schema(versionedSchema: DraftSchemaV1.self), migrationPlan: DraftPlan.self,
                configurations: [drafts, ModelConfiguration("Rest", isStoredInMemoryOnly: true)])
        }
        #expect(custom?.description.contains("more than one stage") == true)

        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("shared.store")
        #expect(throws: SwiftDataError.duplicateConfiguration) {
            try ModelContainer(
                for: ShelfLibrary.self, ScratchDraft.self,
                configurations: ModelConfiguration("A", schema: Schema([ShelfLibrary.self]), url: url),
                ModelConfiguration("B", schema: Schema([ScratchDraft.self]), url: url))
        }
    }
}
