import Foundation
import Testing

@testable import OpenSwiftData

/// A model whose property default constructs another model: Swift evaluates that default in
/// every designated initializer, `init(backingData:)` included, so a fetch constructs a
/// `ProfileSettings` while the context's materialisation suspends init accessors
/// (`Materialization`).
@Model
final class Profile {
    var name: String
    var settings = ProfileSettings()

    init(name: String) {
        self.name = name
    }
}

@Model
final class ProfileSettings {
    var theme: String = "light"
    var fontSize: Int = 12
    var profile: Profile?

    init() {
        // Reads a property in the initializer, which also runs while a fetch suspends init
        // accessors (see `Profile`).
        fontSize = theme == "dark" ? 14 : 12
    }
}

@Suite("A property default that constructs another model")
struct ModelDefaultTests {
    private func makeContainer() throws -> ModelContainer {
        try inMemoryContainer(Profile.self, ProfileSettings.self)
    }

    @Test("a new model gets its default related model, saved with it")
    func newModel() throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        let profile = Profile(name: "ada")
        #expect(profile.settings.theme == "light")
        #expect(profile.settings.fontSize == 12)
        context.insert(profile)
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<ProfileSettings>()) == 1)
    }

    @Test("a fetch materialises the stored related model, not the default, and constructs no stray model")
    func fetchAndSave() throws {
        let container = try makeContainer()
        let writer = ModelContext(container)
        let profile = Profile(name: "ada")
        profile.settings.theme = "dark"
        profile.settings.fontSize = 18
        writer.insert(profile)
        try writer.save()

        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<Profile>()).first)
        #expect(fetched.name == "ada")
        #expect(fetched.settings.theme == "dark")
        #expect(fetched.settings.fontSize == 18)
        #expect(fetched.settings.profile === fetched)
        #expect(!reader.hasChanges, "the default constructed during the fetch is not inserted")
        #expect(reader.insertedModelsArray.isEmpty)

        fetched.settings.fontSize = 20
        fetched.name = "lovelace"
        try reader.save()
        #expect(try reader.fetchCount(FetchDescriptor<ProfileSettings>()) == 1, "no stray settings row")

        let again = ModelContext(container)
        let reread = try #require(try again.fetch(FetchDescriptor<Profile>()).first)
        #expect(reread.name == "lovelace")
        #expect(reread.settings.theme == "dark")
        #expect(reread.settings.fontSize == 20)
        // Fetched in the other order: the related model first, then its owner.
        let fresh = ModelContext(container)
        let settings = try #require(try fresh.fetch(FetchDescriptor<ProfileSettings>()).first)
        #expect(settings.fontSize == 20)
        #expect(settings.profile?.name == "lovelace")
        #expect(try fresh.fetch(FetchDescriptor<Profile>()).first?.settings === settings)
        #expect(!fresh.hasChanges)
    }

    @Test("a fetch with prefetching of the defaulted relationship")
    func prefetch() throws {
        let container = try makeContainer()
        let writer = ModelContext(container)
        for index in 0..<5 {
            let profile = Profile(name: "p\(index)")
            profile.settings.fontSize = index
            writer.insert(profile)
        }
        try writer.save()
        var descriptor = FetchDescriptor<Profile>(sortBy: [SortDescriptor(\.name)])
        descriptor.relationshipKeyPathsForPrefetching = [\.settings]
        let reader = ModelContext(container)
        let profiles = try reader.fetch(descriptor)
        #expect(profiles.map(\.settings.fontSize) == [0, 1, 2, 3, 4])
        #expect(!reader.hasChanges)
        #expect(try reader.fetchCount(FetchDescriptor<ProfileSettings>()) == 5)
    }
}
