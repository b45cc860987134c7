import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

@Suite("Uniqueness and indexes")
struct UniqueTests {
    @Test("inserting a model whose .unique value exists updates that row in place")
    func attributeUpsert() throws {
        let container = try inMemoryContainer(Account.self)
        let context = ModelContext(container)
        let original = Account(email: "ada@example.com", name: "Ada")
        context.insert(original)
        try context.save()
        let originalID = original.persistentModelID

        let other = ModelContext(container)
        let duplicate = Account(email: "ada@example.com", name: "Ada Lovelace")
        duplicate.logins = 3
        other.insert(duplicate)
        try other.save()
        #expect(duplicate.persistentModelID == originalID, "the inserted model takes the existing row's identifier")

        let rows = try ModelContext(container).fetch(FetchDescriptor<Account>())
        #expect(rows.count == 1)
        #expect(rows[0].name == "Ada Lovelace")
        #expect(rows[0].logins == 3)
    }

    @Test("two inserts of one key in one save end as one row, the last one winning")
    func upsertWithinOneSave() throws {
        let container = try inMemoryContainer(Account.self)
        let context = ModelContext(container)
        context.insert(Account(email: "x@y", name: "first"))
        context.insert(Account(email: "x@y", name: "second"))
        try context.save()
        let rows = try ModelContext(container).fetch(FetchDescriptor<Account>())
        #expect(rows.map(\.name) == ["second"])
    }

    @Test("an upsert over a row registered in the same context keeps one instance per row")
    func upsertRegisteredRow() throws {
        let container = try inMemoryContainer(Account.self)
        let context = ModelContext(container)
        let original = Account(email: "a@b", name: "old")
        context.insert(original)
        try context.save()
        let replacement = Account(email: "a@b", name: "new")
        context.insert(replacement)
        try context.save()
        let fetched = try context.fetch(FetchDescriptor<Account>())
        #expect(fetched.count == 1)
        #expect(fetched[0] === replacement)
        #expect(original.name == "new", "the replaced instance sees the row's new values")
    }

    @Test("an upsert over a registered instance with unsaved changes: the inserted model's values win in the store as in memory")
    func upsertOverChangedInstance() throws {
        let container = try inMemoryContainer(Account.self)
        let context = ModelContext(container)
        let original = Account(email: "a@b", name: "old")
        context.insert(original)
        try context.save()
        original.logins = 7
        original.name = "changed"
        let replacement = Account(email: "a@b", name: "new")
        context.insert(replacement)
        try context.save()
        #expect(original.name == "new")
        #expect(original.logins == replacement.logins)
        let stored = try ModelContext(container).fetch(FetchDescriptor<Account>())
        #expect(stored.map(\.name) == ["new"])
        #expect(stored.map(\.logins) == [replacement.logins], "the store holds what the models hold")
    }

    @Test("#Unique compound constraints upsert on the whole tuple only")
    func compoundUnique() throws {
        let container = try inMemoryContainer(Person.self)
        let context = ModelContext(container)
        context.insert(Person(givenName: "Ada", familyName: "Lovelace", age: 36))
        context.insert(Person(givenName: "Ada", familyName: "Byron", age: 20))
        try context.save()
        context.insert(Person(givenName: "Ada", familyName: "Lovelace", age: 37))
        try context.save()
        let people = try ModelContext(container).fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.familyName)]))
        #expect(people.map(\.familyName) == ["Byron", "Lovelace"])
        #expect(people.map(\.age) == [20, 37])
    }

    @Test("changing a registered model onto another row's unique key fails the save with a typed error")
    func updateConflict() throws {
        let container = try inMemoryContainer(Account.self)
        let context = ModelContext(container)
        let a = Account(email: "a", name: "A")
        let b = Account(email: "b", name: "B")
        context.insert(a)
        context.insert(b)
        try context.save()
        b.email = "a"
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        let emails = try ModelContext(container).fetch(FetchDescriptor<Account>(sortBy: [SortDescriptor(\.email)])).map(\.email)
        #expect(emails == ["a", "b"])
    }

    @Test("unique constraints and #Index become real SQLite indexes")
    func sqliteIndexes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("indexes.store")
        _ = try ModelContainer(for: Person.self, Account.self, configurations: ModelConfiguration(url: url))
        let queue = try DatabaseQueue(path: url.path)
        let indexes = try queue.read { db -> [String: (unique: Bool, columns: [String])] in
            var result: [String: (Bool, [String])] = [:]
            for table in ["Person", "Account"] {
                for index in try db.indexes(on: table) { result[index.name] = (index.isUnique, index.columns) }
            }
            return result
        }
        let described = indexes.values.map { "\($0.unique ? "unique" : "index")(\($0.columns.joined(separator: ",")))" }.sorted()
        #expect(described == ["index(age,familyName)", "index(familyName)", "unique(email)", "unique(givenName,familyName)"])
    }

    @Test("an empty #Unique or #Index group is left out: the store opens and the other groups hold")
    func emptyConstraintGroups() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("empty-groups.store")
        let container = try ModelContainer(for: Movement.self, configurations: ModelConfiguration(url: url))
        let entity = try #require(container.schema.entity(for: Movement.self))
        #expect(entity.uniquenessConstraints == [["code"]])
        #expect(entity.indices == [["amount"]])
        let context = ModelContext(container)
        context.insert(Movement(code: "rent", amount: 1))
        context.insert(Movement(code: "rent", amount: 2))
        try context.save()
        let stored = try ModelContext(container).fetch(FetchDescriptor<Movement>())
        #expect(stored.map(\.amount) == [2])
        let queue = try DatabaseQueue(path: url.path)
        let described = try queue.read { db in
            try db.indexes(on: "Movement").map { "\($0.isUnique ? "unique" : "index")(\($0.columns.joined(separator: ",")))" }.sorted()
        }
        #expect(described == ["index(amount)", "unique(code)"])
    }

    @Test("the schema records unique constraints and indices by property name")
    func schemaRecordsConstraints() throws {
        let schema = Schema([Person.self, Account.self])
        let person = try #require(schema.entity(for: Person.self))
        #expect(person.uniquenessConstraints == [["givenName", "familyName"]])
        #expect(person.indices == [["familyName"], ["age", "familyName"]])
        let account = try #require(schema.entity(for: Account.self))
        #expect(account.uniquenessConstraints == [["email"]])
        #expect(account.attributesByName["email"]?.isUnique == true)
    }
}

/// A model whose `#Unique` and `#Index` each carry an empty group, as real code sometimes writes.
@Model
final class Movement {
    #Unique<Movement>([\.code], [])
    #Index<Movement>([], [\.amount])
    var code: String
    var amount: Int

    init(code: String, amount: Int) {
        self.code = code
        self.amount = amount
    }
}
