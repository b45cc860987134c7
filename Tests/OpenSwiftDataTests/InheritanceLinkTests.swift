import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

/// A superclass that is the destination of relationships kept in join tables, and the owning
/// side of a many-to-many one (its links then hold keys of its subclass's rows too).
@Model
class Pet {
    var name: String
    var stickers: [Sticker] = []

    init(name: String) {
        self.name = name
    }
}

@Model
final class Cat: Pet {
    var lives: Int

    init(name: String, lives: Int) {
        self.lives = lives
        super.init(name: name)
    }
}

/// The other side of a many-to-many relationship to `Pet`.
@Model
final class Sticker {
    var label: String
    @Relationship(inverse: \Pet.stickers) var pets: [Pet] = []

    init(label: String) {
        self.label = label
    }
}

/// To-many relationships to `Pet` without inverse: each kept in a join table.
@Model
final class Keeper {
    var name: String
    @Relationship(deleteRule: .cascade) var pets: [Pet] = []
    var favorites: [Pet] = []

    init(name: String) {
        self.name = name
    }
}

@Suite("Model inheritance: join tables holding subclass models")
struct InheritanceLinkTests {
    private func container() throws -> ModelContainer {
        try ModelContainer(for: Keeper.self, Sticker.self, Pet.self, Cat.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
    }

    private func links(_ table: String, in container: ModelContainer) throws -> Int {
        try container.store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \"\(table)\"") ?? -1 }
    }

    @Test("a to-many without inverse and a many-to-many to the superclass save subclass models and fetch them back as the subclass")
    func saveAndFetch() throws {
        let container = try container()
        let context = ModelContext(container)
        let keeper = Keeper(name: "Ann")
        context.insert(keeper)
        let rex = Pet(name: "Rex")
        let tom = Cat(name: "Tom", lives: 9)
        keeper.pets = [rex, tom]
        keeper.favorites = [tom]
        let striped = Sticker(label: "striped")
        striped.pets = [tom, rex]
        #expect(tom.stickers.map(\.label) == ["striped"], "the inverse is kept in memory")
        try context.save()

        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<Keeper>()).first)
        let pets = fetched.pets.sorted { $0.name < $1.name }
        #expect(pets.map(\.name) == ["Rex", "Tom"])
        #expect(pets.map { $0 is Cat } == [false, true])
        #expect((pets.last as? Cat)?.lives == 9)
        #expect(fetched.favorites.map { ($0 as? Cat)?.lives } == [9])
        // One instance per row, whichever relationship or fetch reaches it.
        #expect(fetched.favorites.first === pets.last)
        #expect(try reader.fetch(FetchDescriptor<Cat>()).first === pets.last)

        let sticker = try #require(try reader.fetch(FetchDescriptor<Sticker>()).first)
        #expect(Set(sticker.pets.map(\.name)) == ["Rex", "Tom"])
        #expect(sticker.pets.contains { ($0 as? Cat)?.lives == 9 })
        // The owning side's links hold the cat's own key.
        let cat = try #require(try ModelContext(container).fetch(FetchDescriptor<Cat>()).first)
        #expect(cat.stickers.map(\.label) == ["striped"])

        // Prefetching reads every table of the hierarchy and gives the same models.
        var descriptor = FetchDescriptor<Keeper>()
        descriptor.relationshipKeyPathsForPrefetching = [\.pets, \.favorites]
        let prefetched = try #require(try ModelContext(container).fetch(descriptor).first)
        #expect(prefetched.pets.map(\.name) == ["Rex", "Tom"], "primary-key order over the tables")
        #expect(prefetched.pets.map { $0 is Cat } == [false, true])
        #expect((prefetched.favorites.first as? Cat)?.lives == 9)
        var stickers = FetchDescriptor<Sticker>()
        stickers.relationshipKeyPathsForPrefetching = [\.pets]
        #expect(try ModelContext(container).fetch(stickers).first?.pets.map(\.name) == ["Rex", "Tom"])

        // Predicates over the relationship see the subclass's members (evaluated in memory).
        let withTom = #Predicate<Sticker> { $0.pets.contains { $0.name == "Tom" } }
        #expect(try ModelContext(container).fetch(FetchDescriptor(predicate: withTom)).map(\.label) == ["striped"])
        #expect(try ModelContext(container).fetchCount(FetchDescriptor(predicate: withTom)) == 1)
    }

    @Test("removing a subclass model from the relationship removes its link only")
    func remove() throws {
        let container = try container()
        let context = ModelContext(container)
        let keeper = Keeper(name: "Ann")
        context.insert(keeper)
        keeper.pets = [Pet(name: "Rex"), Cat(name: "Tom", lives: 9)]
        let sticker = Sticker(label: "gold")
        context.insert(sticker)
        sticker.pets = keeper.pets
        try context.save()

        let editor = ModelContext(container)
        let fetched = try #require(try editor.fetch(FetchDescriptor<Keeper>()).first)
        fetched.pets.removeAll { $0 is Cat }
        let cat = try #require(try editor.fetch(FetchDescriptor<Cat>()).first)
        cat.stickers = []
        try editor.save()

        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Keeper>()).first?.pets.map(\.name) == ["Rex"])
        #expect(try reader.fetch(FetchDescriptor<Sticker>()).first?.pets.map(\.name) == ["Rex"])
        #expect(try reader.fetchCount(FetchDescriptor<Cat>()) == 1, "unlinked, not deleted")
        #expect(try links("Keeper_pets", in: container) == 1)
    }

    @Test("deleting a subclass model deletes its links (nullify); a cascade reaches subclass models")
    func deleteRules() throws {
        let container = try container()
        let context = ModelContext(container)
        let keeper = Keeper(name: "Ann")
        context.insert(keeper)
        let tom = Cat(name: "Tom", lives: 9)
        keeper.pets = [Pet(name: "Rex"), tom]
        keeper.favorites = [tom]
        let sticker = Sticker(label: "gold")
        context.insert(sticker)
        sticker.pets = [tom]
        try context.save()
        #expect(try links("Keeper_favorites", in: container) == 1)
        #expect(try links("Pet_stickers", in: container) == 1)

        let editor = ModelContext(container)
        let cat = try #require(try editor.fetch(FetchDescriptor<Cat>()).first)
        editor.delete(cat)
        try editor.save()
        #expect(try links("Keeper_favorites", in: container) == 0)
        #expect(try links("Keeper_pets", in: container) == 1)
        #expect(try links("Pet_stickers", in: container) == 0)
        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<Keeper>()).first)
        #expect(fetched.pets.map(\.name) == ["Rex"])
        #expect(fetched.favorites.isEmpty)
        #expect(try reader.fetch(FetchDescriptor<Sticker>()).first?.pets.isEmpty == true)

        // A cat again, then the keeper's cascade deletes both pets and every link.
        let again = Cat(name: "Kit", lives: 7)
        fetched.pets.append(again)
        try reader.save()
        reader.delete(fetched)
        try reader.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Pet>()) == 0)
        #expect(try links("Keeper_pets", in: container) == 0)
    }

    @Test("a batch delete of the subclass deletes its links")
    func batchDelete() throws {
        let container = try container()
        let context = ModelContext(container)
        let keeper = Keeper(name: "Ann")
        context.insert(keeper)
        keeper.favorites = [Pet(name: "Rex"), Cat(name: "Tom", lives: 9)]
        try context.save()
        let deleter = ModelContext(container)
        try deleter.delete(model: Cat.self)
        try deleter.save()
        #expect(try links("Keeper_favorites", in: container) == 1)
        #expect(try ModelContext(container).fetch(FetchDescriptor<Keeper>()).first?.favorites.map(\.name) == ["Rex"])
    }
}

/// The shelter before pets had a subclass: the join table's `target` references `Pet`'s table.
enum ShelterV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [Keeper.self, Pet.self] }

    @Model final class Keeper {
        var name: String
        var pets: [Pet] = []
        init(name: String) { self.name = name }
    }

    @Model class Pet {
        var name: String
        init(name: String) { self.name = name }
    }
}

/// A subclass added: the join table's `target` holds keys of both tables.
enum ShelterV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Keeper.self, Pet.self, Cat.self] }

    @Model final class Keeper {
        var name: String
        var pets: [Pet] = []
        init(name: String) { self.name = name }
    }

    @Model class Pet {
        var name: String
        init(name: String) { self.name = name }
    }

    @Model final class Cat: Pet {
        var lives: Int = 9
        init(name: String, lives: Int) {
            self.lives = lives
            super.init(name: name)
        }
    }
}

enum ShelterPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ShelterV1.self, ShelterV2.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: ShelterV1.self, toVersion: ShelterV2.self)] }
}

@Suite("Model inheritance: join tables across a migration")
struct InheritanceLinkMigrationTests {
    @Test("adding a subclass rebuilds the join table without its foreign key on that side; old links stay, new ones hold the subclass")
    func addSubclass() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("shelter.store")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: ShelterV1.self), configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let keeper = ShelterV1.Keeper(name: "Ann")
            context.insert(keeper)
            keeper.pets = [ShelterV1.Pet(name: "Rex")]
            try context.save()
        }
        let container = try ModelContainer(
            for: Schema(versionedSchema: ShelterV2.self), migrationPlan: ShelterPlan.self, configurations: ModelConfiguration(url: url))
        let references = try container.store.read { db in try String.fetchAll(db, sql: "SELECT \"from\" FROM pragma_foreign_key_list('Keeper_pets')")
        }
        #expect(references == ["source"])
        let context = ModelContext(container)
        let keeper = try #require(try context.fetch(FetchDescriptor<ShelterV2.Keeper>()).first)
        #expect(keeper.pets.map(\.name) == ["Rex"])
        keeper.pets.append(ShelterV2.Cat(name: "Tom", lives: 7))
        try context.save()
        let pets = try #require(try ModelContext(container).fetch(FetchDescriptor<ShelterV2.Keeper>()).first?.pets)
        #expect(pets.map(\.name) == ["Rex", "Tom"])
        #expect((pets.last as? ShelterV2.Cat)?.lives == 7)
        let violations = try container.store.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") }
        #expect(violations.isEmpty)
    }
}

/// The keeper's relationship renamed without `originalName`: its links would live in a new
/// join table, whose `target` side (a hierarchy) has no foreign key to tell.
enum ShelterV3: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(3, 0, 0) }
    static var models: [any PersistentModel.Type] { [Keeper.self, Pet.self, Cat.self] }

    @Model final class Keeper {
        var name: String
        var animals: [Pet] = []
        init(name: String) { self.name = name }
    }

    @Model class Pet {
        var name: String
        init(name: String) { self.name = name }
    }

    @Model final class Cat: Pet {
        var lives: Int = 9
        init(name: String, lives: Int) {
            self.lives = lives
            super.init(name: name)
        }
    }
}

enum ShelterRenamePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ShelterV2.self, ShelterV3.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: ShelterV2.self, toVersion: ShelterV3.self)] }
}

@Suite("Model inheritance: a renamed relationship to a hierarchy")
struct InheritanceLinkRenameTests {
    @Test("renaming a relationship whose join table holds subclass keys is refused, not a silent loss of its links; the store is unchanged")
    func renameRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("shelter.store")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: ShelterV2.self), configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let keeper = ShelterV2.Keeper(name: "Ann")
            context.insert(keeper)
            keeper.pets = [ShelterV2.Pet(name: "Rex"), ShelterV2.Cat(name: "Tom", lives: 7)]
            try context.save()
        }
        #expect {
            _ = try ModelContainer(
                for: Schema(versionedSchema: ShelterV3.self), migrationPlan: ShelterRenamePlan.self, configurations: ModelConfiguration(url: url))
        } throws: { error in
            guard let error = error as? SwiftDataError else { return false }
            return error.description.contains("Keeper_pets") && error.description.contains("Keeper_animals")
        }
        let container = try ModelContainer(for: Schema(versionedSchema: ShelterV2.self), configurations: ModelConfiguration(url: url))
        let keeper = try #require(try ModelContext(container).fetch(FetchDescriptor<ShelterV2.Keeper>()).first)
        #expect(Set(keeper.pets.map(\.name)) == ["Rex", "Tom"])
    }
}
