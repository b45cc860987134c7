import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

enum ContactStatus: String, Codable {
    case active, blocked
}

/// Version 1 of a contact book.
enum ContactsV1 {
    @Model final class Contact {
        var name: String
        var age: Int
        var nickname: String?
        var group: Group?

        init(name: String, age: Int, nickname: String? = nil) {
            self.name = name
            self.age = age
            self.nickname = nickname
        }
    }

    @Model final class Group {
        var title: String
        @Relationship(inverse: \Contact.group) var members: [Contact] = []

        init(title: String) {
            self.title = title
        }
    }
}

/// Version 2: properties added (optional, defaulted, an enum with a default), one renamed, one
/// removed, one made optional, an index and an entity added.
enum ContactsV2 {
    @Model final class Contact {
        @Attribute(originalName: "name") var fullName: String
        var age: Int?
        var email: String?
        var score: Int = 7
        var status: ContactStatus = ContactStatus.active
        var group: Group?

        #Index<Contact>([\.fullName])

        init(fullName: String) {
            self.fullName = fullName
        }
    }

    @Model final class Group {
        var title: String
        @Relationship(inverse: \Contact.group) var members: [Contact] = []

        init(title: String) {
            self.title = title
        }
    }

    @Model final class Tag {
        var label: String

        init(label: String) {
            self.label = label
        }
    }
}

/// Changes a lightweight migration refuses.
enum ContactsTypeChange {
    @Model final class Contact {
        var name: String
        var age: String
        var nickname: String?
        var group: Group?

        init(name: String, age: String) {
            self.name = name
            self.age = age
        }
    }

    @Model final class Group {
        var title: String
        @Relationship(inverse: \Contact.group) var members: [Contact] = []

        init(title: String) {
            self.title = title
        }
    }
}

enum ContactsUniqueName {
    @Model final class Contact {
        #Unique<Contact>([\.name])
        var name: String
        var age: Int
        var nickname: String?
        var group: Group?

        init(name: String, age: Int) {
            self.name = name
            self.age = age
        }
    }

    @Model final class Group {
        var title: String
        @Relationship(inverse: \Contact.group) var members: [Contact] = []

        init(title: String) {
            self.title = title
        }
    }
}

/// Version 1 with `Group` renamed to `Team` (and its `title` to `name`).
enum ContactsRenamed {
    @Model final class Contact {
        var name: String
        var age: Int
        var nickname: String?
        var group: Team?

        init(name: String, age: Int) {
            self.name = name
            self.age = age
        }
    }

    @Model final class Team {
        static var originalEntityName: String? { "Group" }
        @Attribute(originalName: "title") var name: String
        @Relationship(inverse: \Contact.group) var members: [Contact] = []

        init(name: String) {
            self.name = name
        }
    }
}

/// An entity with a many-to-many relationship, then the same entity renamed.
enum TripsWithTags {
    @Model final class Trip {
        var name: String
        var tags: [Label] = []
        init(name: String) { self.name = name }
    }

    @Model final class Label {
        var text: String
        init(text: String) { self.text = text }
    }
}

enum TripsRenamed {
    @Model final class Journey {
        static var originalEntityName: String? { "Trip" }
        var name: String
        var tags: [Label] = []
        init(name: String) { self.name = name }
    }

    @Model final class Label {
        var text: String
        init(text: String) { self.text = text }
    }
}

/// A property renamed, and a new property given the old name.
enum MemosV1 {
    @Model final class Memo {
        var title: String
        init(title: String) { self.title = title }
    }
}

enum MemosV2 {
    @Model final class Memo {
        @Attribute(originalName: "title") var name: String
        var title: String?
        init(name: String) { self.name = name }
    }
}

@Suite("Lightweight migrations")
struct MigrationTests {
    @Test("history from before a rename reads under the new name; a new property with the old name keeps its own changes")
    func historyAcrossRenamedProperty() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("memos.store")
        do {
            let container = try ModelContainer(for: MemosV1.Memo.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let memo = MemosV1.Memo(title: "a")
            context.insert(memo)
            try context.save()
            memo.title = "b"
            try context.save()
        }
        let container = try ModelContainer(for: MemosV2.Memo.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let memo = try #require(try context.fetch(FetchDescriptor<MemosV2.Memo>()).first)
        #expect(memo.name == "b" && memo.title == nil)
        memo.title = "new"
        try context.save()

        let changes = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).flatMap(\.changes)
        let updates = changes.filter { if case .update = $0 { true } else { false } }
        try #require(updates.count == 2)
        #expect(updates[0].changedPropertyNames == ["name"] && updates[0].storedValues == ["name": .text("b")], "written as title before the rename")
        #expect(updates[1].changedPropertyNames == ["title"] && updates[1].storedValues == ["title": .text("new")], "the new title")
        guard case let .update(typed)? = updates.first, let update = typed as? DefaultHistoryUpdate<MemosV2.Memo> else {
            Issue.record("expected a typed update")
            return
        }
        #expect(update.updatedAttributes.map { $0 as AnyKeyPath } == [\MemosV2.Memo.name])
        let insertion = try #require(changes.first)
        #expect(
            insertion.storedValues["name"] == .text("b") && insertion.storedValues["title"] == .text("new"),
            "the row's values now, under the current names")
    }
    /// A version-1 store with two groups and three contacts (two named "Ada").
    private func makeV1Store(_ url: URL) throws {
        let container = try ModelContainer(for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let friends = ContactsV1.Group(title: "friends")
        context.insert(friends)
        for (name, age) in [("Ada", 36), ("Grace", 45), ("Ada", 29)] {
            let contact = ContactsV1.Contact(name: name, age: age, nickname: name == "Grace" ? "amazing" : nil)
            context.insert(contact)
            if age > 30 { contact.group = friends }
        }
        try context.save()
    }

    private func checkpoint(_ url: URL) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        try queue.close()
    }

    @Test("added, renamed, removed and loosened properties, a new index and a new entity: rows keep their values, new columns get defaults")
    func inferredChanges() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("contacts.store")
        try makeV1Store(url)

        let container = try ModelContainer(
            for: ContactsV2.Contact.self, ContactsV2.Group.self, ContactsV2.Tag.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let contacts = try context.fetch(FetchDescriptor<ContactsV2.Contact>(sortBy: [SortDescriptor(\.fullName), SortDescriptor(\.score)]))
        #expect(contacts.map(\.fullName) == ["Ada", "Ada", "Grace"])
        #expect(Set(contacts.compactMap(\.age)) == [36, 45, 29])
        #expect(contacts.allSatisfy { $0.email == nil && $0.score == 7 && $0.status == .active })
        // The relationship survived the table rebuild.
        let friends = try #require(try context.fetch(FetchDescriptor<ContactsV2.Group>()).first)
        #expect(friends.members.map(\.fullName).sorted() == ["Ada", "Grace"])
        // The new entity and the new column work.
        context.insert(ContactsV2.Tag(label: "vip"))
        contacts[0].email = "ada@example.com"
        contacts[0].age = nil
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<ContactsV2.Tag>()) == 1)
        #expect(
            try ModelContext(container).fetch(FetchDescriptor(predicate: #Predicate<ContactsV2.Contact> { $0.email != nil })).map(\.fullName) == [
                "Ada"
            ])
        // The declared index exists, and the backup is gone.
        let indexes = try container.store.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Contact'")
        }
        #expect(indexes.contains("osd_Contact_index_fullName"))
        #expect(!FileManager.default.fileExists(atPath: url.path + "-backup"))

        // Reopening with the same schema migrates nothing.
        let again = try ModelContainer(
            for: ContactsV2.Contact.self, ContactsV2.Group.self, ContactsV2.Tag.self, configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(again).fetchCount(FetchDescriptor<ContactsV2.Contact>()) == 3)
    }

    @Test("an entity renamed through originalEntityName keeps its rows, its relationships and its key sequence")
    func entityRename() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("contacts.store")
        try makeV1Store(url)
        do {
            // The group with the largest key is deleted: its key must stay used after the rename.
            let container = try ModelContainer(for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let doomed = ContactsV1.Group(title: "doomed")
            context.insert(doomed)
            try context.save()
            doomed.title = "doomed!"
            try context.save()
            context.delete(doomed)
            try context.save()
        }

        let container = try ModelContainer(for: ContactsRenamed.Contact.self, ContactsRenamed.Team.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let teams = try context.fetch(FetchDescriptor<ContactsRenamed.Team>())
        #expect(teams.map(\.name) == ["friends"])
        #expect(teams.first?.members.map(\.name).sorted() == ["Ada", "Grace"])
        let contacts = try context.fetch(FetchDescriptor<ContactsRenamed.Contact>(predicate: #Predicate { $0.group?.name == "friends" }))
        #expect(contacts.count == 2)
        let tables = try container.store.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        #expect(tables.contains("Team") && !tables.contains("Group"))
        let violations = try container.store.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") }
        #expect(violations.isEmpty)
        let indexes = try container.store.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'osd_Group%'")
        }
        #expect(indexes.isEmpty, "the old table's indexes were replaced by the new entity's")

        // History written before the rename reads under the new names: nothing recorded for
        // the old entity is lost to a reader such as the sync outbox.
        let history = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        let teamChanges = history.flatMap(\.changes).filter { $0.changedPersistentIdentifier.entityName == "Team" }
        let inserted = teamChanges.compactMap { change -> [String: HistoryValue]? in
            if case .insert = change { return change.storedValues } else { return nil }
        }
        #expect(inserted.contains { $0["name"] == .text("friends") }, "\(inserted)")
        let updates = teamChanges.compactMap { change -> (any HistoryUpdate)? in if case let .update(update) = change { update } else { nil } }
        let rename = try #require(updates.first)
        #expect(teamChanges.first { if case .update = $0 { true } else { false } }?.storedValues == ["name": .text("doomed!")])
        let typed = try #require(rename as? DefaultHistoryUpdate<ContactsRenamed.Team>)
        #expect(typed.updatedAttributes.map { $0 as AnyKeyPath } == [\ContactsRenamed.Team.name])
        #expect(teamChanges.contains { if case .delete = $0 { true } else { false } })

        // A team inserted now does not take the key of the renamed group.
        let old = try #require(teams.first)
        let fresh = ContactsRenamed.Team(name: "family")
        context.insert(fresh)
        try context.save()
        #expect(fresh.persistentModelID != old.persistentModelID)
        #expect(fresh.persistentModelID.rowID == 3, "keys 1 (friends) and 2 (the deleted group) stay taken")
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<ContactsRenamed.Team>()) == 2)
    }

    @Test("renaming an entity whose many-to-many links are stored in a join table is refused, not silently emptied")
    func entityRenameWithJoinTable() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("trips.store")
        do {
            let container = try ModelContainer(for: TripsWithTags.Trip.self, TripsWithTags.Label.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let trip = TripsWithTags.Trip(name: "Lisbon")
            context.insert(trip)
            trip.tags = [TripsWithTags.Label(text: "sunny")]
            try context.save()
        }
        let error = #expect(throws: SwiftDataError.self) {
            _ = try ModelContainer(for: TripsRenamed.Journey.self, TripsRenamed.Label.self, configurations: ModelConfiguration(url: url))
        }
        #expect(error?.detail.contains("now lives in") == true, "refused for the join table: \(String(describing: error))")
        let container = try ModelContainer(for: TripsWithTags.Trip.self, TripsWithTags.Label.self, configurations: ModelConfiguration(url: url))
        let trip = try #require(try ModelContext(container).fetch(FetchDescriptor<TripsWithTags.Trip>()).first)
        #expect(trip.tags.map(\.text) == ["sunny"])
    }

    @Test("a type change is refused with a typed error naming the property, and the store is untouched")
    func typeChangeRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("contacts.store")
        try makeV1Store(url)
        try checkpoint(url)
        let before = try Data(contentsOf: url)
        do {
            _ = try ModelContainer(for: ContactsTypeChange.Contact.self, ContactsTypeChange.Group.self, configurations: ModelConfiguration(url: url))
            Issue.record("a type change must be refused")
        } catch let error as SwiftDataError {
            #expect(error == .incompatibleSchema)
            #expect(error.entityName == "Contact")
            #expect(error.propertyName == "age")
            #expect(error.detail.contains("INTEGER to TEXT"))
        }
        #expect(try Data(contentsOf: url) == before)
        let reopened = try ModelContainer(for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(reopened).fetchCount(FetchDescriptor<ContactsV1.Contact>()) == 3)
    }

    @Test("a uniqueness constraint that existing rows violate fails the migration as a whole")
    func uniqueOverDuplicates() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("contacts.store")
        try makeV1Store(url)
        #expect(throws: SwiftDataError.incompatibleSchema) {
            try ModelContainer(for: ContactsUniqueName.Contact.self, ContactsUniqueName.Group.self, configurations: ModelConfiguration(url: url))
        }
        // Still a version-1 store, every row in place.
        let reopened = try ModelContainer(for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(reopened).fetchCount(FetchDescriptor<ContactsV1.Contact>()) == 3)
        let indexes = try reopened.store.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'osd_Contact_unique%'")
        }
        #expect(indexes.isEmpty)
    }

    @Test("removing an entity and its relationship drops its table; the rest stays")
    func removedEntity() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("contacts.store")
        try makeV1Store(url)
        let container = try ModelContainer(for: OtherContacts.Contact.self, configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(container).fetch(FetchDescriptor<OtherContacts.Contact>()).map(\.name).sorted() == ["Ada", "Ada", "Grace"])
        let tables = try container.store.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        #expect(!tables.contains("Group"))
    }
}

/// Version 1 without groups.
enum OtherContacts {
    @Model final class Contact {
        var name: String
        var age: Int
        var nickname: String?

        init(name: String, age: Int) {
            self.name = name
            self.age = age
        }
    }
}

/// Collects migration progress reports.
final class ProgressLog: @unchecked Sendable {
    // @unchecked Sendable: `events` is only touched while holding `lock`.
    private let lock = NSLock()
    private var events: [MigrationProgress] = []
    func append(_ event: MigrationProgress) { lock.withLock { events.append(event) } }
    var all: [MigrationProgress] { lock.withLock { events } }
}

@Suite("Migration progress and backup")
struct MigrationProgressTests {
    @Test("a table rebuild copies rows in batches, reports rows done of total, and keeps the backup when asked")
    func progressAndBackup() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("contacts.store")
        do {
            let container = try ModelContainer(for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(url: url))
            try container.store.write { db in
                let insert = try db.makeStatement(sql: "INSERT INTO \"Contact\" (name, age, nickname, \"group\") VALUES (?, ?, NULL, NULL)")
                for number in 0..<25_003 { try insert.execute(arguments: ["contact \(number)", number % 90]) }
            }
        }
        let log = ProgressLog()
        var configuration = ModelConfiguration(url: url)
        configuration.migrationOptions = MigrationOptions(keepsBackup: true, progress: { log.append($0) })
        let container = try ModelContainer(for: ContactsV2.Contact.self, ContactsV2.Group.self, ContactsV2.Tag.self, configurations: configuration)
        let contactEvents = log.all.filter { $0.table == "Contact" }
        #expect(contactEvents.map(\.rowsDone) == [10_000, 20_000, 25_003])
        #expect(contactEvents.allSatisfy { $0.rowsTotal == 25_003 })
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<ContactsV2.Contact>()) == 25_003)
        #expect(FileManager.default.fileExists(atPath: url.path + "-backup"))
        let backup = try StoreFile.metadata(at: url.path + "-backup")
        #expect(backup["layout"]?.contains("nickname") == true, "the backup is the version-1 store")
    }
}

@Suite("Lightweight migrations: constraints")
struct MigrationConstraintTests {
    @Test("removing a uniqueness constraint drops its index; adding it back over unique rows creates it")
    func uniqueRemovedAndAdded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("contacts.store")
        func uniqueIndexes(_ container: ModelContainer) throws -> [String] {
            try container.store.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'osd_Contact_unique%'")
            }
        }
        do {
            let container = try ModelContainer(
                for: ContactsUniqueName.Contact.self, ContactsUniqueName.Group.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(ContactsUniqueName.Contact(name: "Ada", age: 36))
            context.insert(ContactsUniqueName.Contact(name: "Grace", age: 45))
            try context.save()
            #expect(try uniqueIndexes(container).count == 1)
        }
        do {
            let container = try ModelContainer(for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(url: url))
            #expect(try uniqueIndexes(container).isEmpty)
            // Without the constraint, a second "Ada" is a new row.
            let context = ModelContext(container)
            context.insert(ContactsV1.Contact(name: "Ada", age: 1))
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<ContactsV1.Contact>()) == 3)
        }
        // Adding it back over the duplicate is refused, and the store stays as it is.
        #expect(throws: SwiftDataError.incompatibleSchema) {
            try ModelContainer(for: ContactsUniqueName.Contact.self, ContactsUniqueName.Group.self, configurations: ModelConfiguration(url: url))
        }
        let reopened = try ModelContainer(for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(reopened).fetchCount(FetchDescriptor<ContactsV1.Contact>()) == 3)
    }
}
