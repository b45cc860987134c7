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
        #expect(twice?.description.contains("ShelfLibrary") == true)

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
        #expect(custom?.description.contains("custom stages") == true)

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
