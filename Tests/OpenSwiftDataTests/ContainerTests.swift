import Foundation
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

@Suite("ModelContainer and ModelConfiguration")
struct ContainerTests {
    @Test("every common way of building a container compiles and works")
    func initializers() throws {
        let schema = Schema([Note.self, Account.self])
        let containers = [
            try ModelContainer(for: Note.self, Account.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true)),
            try ModelContainer(for: schema, configurations: ModelConfiguration(isStoredInMemoryOnly: true)),
            try ModelContainer(for: schema, configurations: [ModelConfiguration(schema: schema, isStoredInMemoryOnly: true)]),
            try ModelContainer(for: schema, configurations: ModelConfiguration("Named", schema: schema, isStoredInMemoryOnly: true)),
            try ModelContainer(for: Note.self, configurations: ModelConfiguration(for: Note.self, isStoredInMemoryOnly: true)),
        ]
        for container in containers {
            let context = ModelContext(container)
            context.insert(Note(title: "x"))
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<Note>()) == 1)
        }
        #expect(containers[0] != containers[1])
        #expect(containers[0] == containers[0])
    }

    @Test("in-memory containers never share data")
    func inMemoryIsolation() throws {
        let first = try inMemoryContainer(Note.self)
        let second = try inMemoryContainer(Note.self)
        let context = ModelContext(first)
        context.insert(Note(title: "only here"))
        try context.save()
        #expect(try ModelContext(second).fetchCount(FetchDescriptor<Note>()) == 0)
    }

    @Test("two containers on one file share its data")
    func sharedFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("shared.store")
        let first = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        let second = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(first)
        context.insert(Note(title: "shared"))
        try context.save()
        #expect(try ModelContext(second).fetch(FetchDescriptor<Note>()).map(\.title) == ["shared"])
    }

    @Test("the default location is <name>.store under $XDG_DATA_HOME/<executable>/")
    func defaultLocation() {
        let configuration = ModelConfiguration("Library")
        #expect(configuration.url.lastPathComponent == "Library.store")
        #expect(configuration.url.deletingLastPathComponent() == ModelConfiguration.defaultDirectory())
        #expect(configuration.id == configuration.url)
        #expect(ModelConfiguration().name == "default")
        let directory = ModelConfiguration.defaultDirectory().path
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            #expect(directory.hasPrefix(xdg))
        } else {
            #expect(directory.hasPrefix(FileManager.default.homeDirectoryForCurrentUser.path + "/.local/share/"))
        }
        #expect(ModelConfiguration(isStoredInMemoryOnly: true).isStoredInMemoryOnly)
    }

    @Test("deleteAllData empties every entity and leaves the container usable")
    func deleteAllData() throws {
        let container = try inMemoryContainer(Note.self, Account.self)
        let context = ModelContext(container)
        context.insert(Note(title: "a"))
        context.insert(Account(email: "e", name: "n"))
        try context.save()
        container.deleteAllData()
        let fresh = ModelContext(container)
        #expect(try fresh.fetchCount(FetchDescriptor<Note>()) == 0)
        #expect(try fresh.fetchCount(FetchDescriptor<Account>()) == 0)
        fresh.insert(Note(title: "again"))
        try fresh.save()
        #expect(try fresh.fetchCount(FetchDescriptor<Note>()) == 1)
    }

    @Test("duplicate configuration names are a typed error")
    func duplicateConfigurations() {
        #expect(throws: SwiftDataError.duplicateConfiguration) {
            try ModelContainer(
                for: Schema([Note.self]),
                configurations: [
                    ModelConfiguration("A", isStoredInMemoryOnly: true), ModelConfiguration("A", isStoredInMemoryOnly: true),
                ])
        }
    }

    @Test("the main context autosaves shortly after a change")
    @MainActor
    func mainContextAutosave() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: directory.file("autosave.store")))
        let main = container.mainContext
        #expect(main.autosaveEnabled)
        #expect(container.mainContext === main)
        #expect(!ModelContext(container).autosaveEnabled)
        main.insert(Note(title: "autosaved"))
        for _ in 0..<100 where main.hasChanges {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(!main.hasChanges)
        #expect(try ModelContext(container).fetch(FetchDescriptor<Note>()).map(\.title) == ["autosaved"])
    }
}
