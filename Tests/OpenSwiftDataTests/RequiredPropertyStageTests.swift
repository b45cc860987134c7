import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

enum CardsV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Card.self] }

    @Model final class Card {
        var text: String
        var note: String?

        init(text: String, note: String? = nil) {
            self.text = text
            self.note = note
        }
    }
}

enum CardKind: String, Codable, Sendable {
    case short, long
}

/// V2 plus two required properties without defaults (one of a type with no "empty" value), and
/// `note` made non-optional while rows hold nil.
enum CardsV3: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(3, 0, 0) }
    static var models: [any PersistentModel.Type] { [Card.self] }

    @Model final class Card {
        var text: String
        var note: String
        var length: Int
        var kind: CardKind

        init(text: String, note: String, length: Int, kind: CardKind) {
            self.text = text
            self.note = note
            self.length = length
            self.kind = kind
        }
    }
}

/// Gives every card its new values.
func fillCards(_ context: ModelContext) throws {
    for card in try context.fetch(FetchDescriptor<CardsV3.Card>()) {
        card.length = card.text.count
        card.kind = card.text.count > 4 ? .long : .short
        card.note = "note of \(card.text)"
    }
}

enum CardsPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [CardsV2.self, CardsV3.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: CardsV2.self, toVersion: CardsV3.self, willMigrate: nil, didMigrate: fillCards)]
    }
}

/// A stage that fills `length` only for cards with short text.
enum PartialCardsPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { CardsPlan.schemas }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: CardsV2.self, toVersion: CardsV3.self, willMigrate: nil,
                didMigrate: { context in
                    for card in try context.fetch(FetchDescriptor<CardsV3.Card>()) {
                        card.kind = .short
                        card.note = ""
                        if card.text.count <= 2 { card.length = card.text.count }
                    }
                })
        ]
    }
}

/// A stage that deletes the cards it cannot fill and fills the rest.
enum PruningCardsPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { CardsPlan.schemas }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: CardsV2.self, toVersion: CardsV3.self, willMigrate: nil,
                didMigrate: { context in
                    for card in try context.fetch(FetchDescriptor<CardsV3.Card>()) {
                        if card.text.count > 4 {
                            context.delete(card)
                        } else {
                            card.length = card.text.count
                            card.kind = .short
                            card.note = ""
                        }
                    }
                })
        ]
    }
}

/// A stage with no didMigrate: nothing fills the new properties.
enum EmptyCardsPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { CardsPlan.schemas }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: CardsV2.self, toVersion: CardsV3.self, willMigrate: nil, didMigrate: nil)]
    }
}

@Suite("Migration plans: a custom stage that adds required properties")
struct RequiredPropertyStageTests {
    private func makeV2Store(_ url: URL) throws {
        let container = try ModelContainer(for: Schema(versionedSchema: CardsV2.self), configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        context.insert(CardsV2.Card(text: "hi"))
        context.insert(CardsV2.Card(text: "a longer card", note: "kept"))
        context.insert(CardsV2.Card(text: "wide"))
        context.insert(CardsV2.Card(text: "ok"))
        try context.save()
    }

    /// The columns of the store's `Card` table that allow NULL (the primary key aside).
    private func nullableColumns(_ url: URL) throws -> Set<String> {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { db in
            Set(
                try Row.fetchAll(db, sql: "PRAGMA table_info(\"Card\")").filter { ($0["notnull"] as Int? ?? 0) == 0 && ($0["pk"] as Int? ?? 0) == 0 }
                    .map { $0["name"] as String? ?? "" })
        }
    }

    @Test("didMigrate fills the new non-optional properties; the columns are NOT NULL once the stage completes")
    func filled() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("cards.store")
        try makeV2Store(url)
        let container = try ModelContainer(
            for: Schema(versionedSchema: CardsV3.self), migrationPlan: CardsPlan.self, configurations: ModelConfiguration(url: url))
        let cards = try ModelContext(container).fetch(FetchDescriptor<CardsV3.Card>(sortBy: [SortDescriptor(\.text)]))
        #expect(cards.map(\.text) == ["a longer card", "hi", "ok", "wide"])
        #expect(cards.map(\.length) == [13, 2, 2, 4])
        #expect(cards.map(\.kind) == [.long, .short, .short, .short])
        #expect(cards.map(\.note) == ["note of a longer card", "note of hi", "note of ok", "note of wide"])
        #expect(try StoreFile.metadata(at: url.path)["schemaVersion"] == "3.0.0")
        #expect(try nullableColumns(url) == [])
        #expect(!FileManager.default.fileExists(atPath: url.path + StoreFile.stageBackupSuffix))

        // The store opens again without the plan, and saves new cards.
        let again = try ModelContainer(for: Schema(versionedSchema: CardsV3.self), configurations: ModelConfiguration(url: url))
        let context = ModelContext(again)
        context.insert(CardsV3.Card(text: "new", note: "", length: 3, kind: .short))
        try context.save()
        #expect(try ModelContext(again).fetchCount(FetchDescriptor<CardsV3.Card>()) == 5)
    }

    @Test("rows didMigrate leaves without a value fail the stage, naming entity, property and count; the store is put back")
    func unfilled() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("cards.store")
        try makeV2Store(url)
        do {
            _ = try ModelContainer(
                for: Schema(versionedSchema: CardsV3.self), migrationPlan: PartialCardsPlan.self, configurations: ModelConfiguration(url: url))
            Issue.record("the stage must fail")
        } catch let error as SwiftDataError {
            #expect(error == .loadIssueModelContainer)
            #expect(error.entityName == "Card")
            #expect(error.propertyName == "length")
            #expect(error.detail.contains("2 rows of Card have no value for Card.length"), "\(error.detail)")
            #expect(!error.detail.contains("custom"), "the message must not ask for what the user wrote: \(error.detail)")
        }
        #expect(try StoreFile.metadata(at: url.path)["schemaVersion"] == "2.0.0")
        #expect(try StoreFile.metadata(at: url.path)[StoreFile.stageMarkerKey] == nil)
        let v2 = try ModelContainer(for: Schema(versionedSchema: CardsV2.self), configurations: ModelConfiguration(url: url))
        let cards = try ModelContext(v2).fetch(FetchDescriptor<CardsV2.Card>(sortBy: [SortDescriptor(\.text)]))
        #expect(cards.map(\.text) == ["a longer card", "hi", "ok", "wide"])
        #expect(cards.map(\.note) == ["kept", nil, nil, nil])

        // The full plan then succeeds from there.
        _ = try ModelContainer(
            for: Schema(versionedSchema: CardsV3.self), migrationPlan: CardsPlan.self, configurations: ModelConfiguration(url: url))
        #expect(try StoreFile.metadata(at: url.path)["schemaVersion"] == "3.0.0")
    }

    @Test("a stage without didMigrate fails on the first property no row has, and puts the store back")
    func noDidMigrate() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("cards.store")
        try makeV2Store(url)
        do {
            _ = try ModelContainer(
                for: Schema(versionedSchema: CardsV3.self), migrationPlan: EmptyCardsPlan.self, configurations: ModelConfiguration(url: url))
            Issue.record("the stage must fail")
        } catch let error as SwiftDataError {
            #expect(error.entityName == "Card")
            #expect(error.propertyName == "kind")
            #expect(error.detail.contains("4 rows of Card have no value for Card.kind"), "\(error.detail)")
        }
        #expect(try StoreFile.metadata(at: url.path)["schemaVersion"] == "2.0.0")
    }

    @Test("didMigrate may delete the rows it cannot fill")
    func pruned() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("cards.store")
        try makeV2Store(url)
        let container = try ModelContainer(
            for: Schema(versionedSchema: CardsV3.self), migrationPlan: PruningCardsPlan.self, configurations: ModelConfiguration(url: url))
        let cards = try ModelContext(container).fetch(FetchDescriptor<CardsV3.Card>(sortBy: [SortDescriptor(\.text)]))
        #expect(cards.map(\.text) == ["hi", "ok", "wide"])
        #expect(cards.map(\.length) == [2, 2, 4])
        #expect(try nullableColumns(url) == [])
    }

    @Test("without a custom stage, the new required property is refused by inference, and the message names the ways out")
    func lightweightRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("cards.store")
        try makeV2Store(url)
        do {
            _ = try ModelContainer(for: Schema(versionedSchema: CardsV3.self), configurations: ModelConfiguration(url: url))
            Issue.record("the migration must be refused")
        } catch let error as SwiftDataError {
            #expect(error == .incompatibleSchema)
            #expect(error.entityName == "Card")
            #expect(error.detail.contains("didMigrate"), "\(error.detail)")
        }
        #expect(try StoreFile.metadata(at: url.path)["schemaVersion"] == "2.0.0")
    }
}
