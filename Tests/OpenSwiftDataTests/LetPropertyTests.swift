import Foundation
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

/// `let` properties as SwiftData apps declare them: an identity and a creation date, set once.
@Model
final class Receipt {
    @Attribute(.unique) let id: UUID
    let createdAt: Date
    let note: String?
    var total: Double

    init(id: UUID = UUID(), createdAt: Date, note: String? = nil, total: Double) {
        self.id = id
        self.createdAt = createdAt
        self.note = note
        self.total = total
    }
}

/// A `let` in a class with subclasses, and one in the subclass.
@Model
class Vault {
    let number: Int
    var owner: String

    init(number: Int, owner: String) {
        self.number = number
        self.owner = owner
    }
}

@Model
final class SavingsVault: Vault {
    let openedOn: Date
    var rate: Double

    init(number: Int, owner: String, openedOn: Date, rate: Double) {
        self.openedOn = openedOn
        self.rate = rate
        super.init(number: number, owner: owner)
    }
}

@Suite("let properties in @Model classes")
struct LetPropertyTests {
    @Test("let properties are saved, and read back from a reopened store file")
    func persistedAcrossReopen() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("receipts.store")
        let first = UUID()
        let second = UUID()
        let created = Date(timeIntervalSince1970: 1_700_000_000.25)
        do {
            let container = try ModelContainer(for: Receipt.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Receipt(id: first, createdAt: created, note: "lunch", total: 12.5))
            context.insert(Receipt(id: second, createdAt: created.addingTimeInterval(60), total: 3))
            try context.save()
        }
        let container = try ModelContainer(for: Receipt.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let receipts = try context.fetch(FetchDescriptor<Receipt>(sortBy: [SortDescriptor(\.createdAt)]))
        #expect(receipts.map(\.id) == [first, second])
        #expect(receipts.map(\.createdAt) == [created, created.addingTimeInterval(60)])
        #expect(receipts.map(\.note) == ["lunch", nil])
        #expect(receipts.map(\.total) == [12.5, 3])
    }

    @Test("Predicates, sorts and partial fetches use let properties")
    func queriesOnLetProperties() throws {
        let container = try inMemoryContainer(Receipt.self)
        let context = ModelContext(container)
        let wanted = UUID()
        let base = Date(timeIntervalSince1970: 1_000)
        context.insert(Receipt(createdAt: base.addingTimeInterval(2), total: 1))
        context.insert(Receipt(id: wanted, createdAt: base, total: 2))
        context.insert(Receipt(createdAt: base.addingTimeInterval(1), total: 3))

        // Before the save: the pending inserts' let values are in the query too.
        let pending = try context.fetch(FetchDescriptor<Receipt>(predicate: #Predicate { $0.id == wanted }))
        #expect(pending.map(\.total) == [2])
        try context.save()

        let other = ModelContext(container)
        let found = try other.fetch(FetchDescriptor<Receipt>(predicate: #Predicate { $0.id == wanted }))
        #expect(found.map(\.createdAt) == [base])
        let sorted = try other.fetch(FetchDescriptor<Receipt>(sortBy: [SortDescriptor(\.createdAt, order: .reverse)]))
        #expect(sorted.map(\.total) == [1, 3, 2])

        var partial = FetchDescriptor<Receipt>(sortBy: [SortDescriptor(\.createdAt)])
        partial.propertiesToFetch = [\.total]
        let third = ModelContext(container)
        #expect(try third.fetch(partial).map(\.createdAt) == [base, base.addingTimeInterval(1), base.addingTimeInterval(2)])
    }

    @Test("A unique let upserts: inserting the same id again updates the row")
    func uniqueLetUpserts() throws {
        let container = try inMemoryContainer(Receipt.self)
        let context = ModelContext(container)
        let id = UUID()
        context.insert(Receipt(id: id, createdAt: .distantPast, total: 1))
        try context.save()
        context.insert(Receipt(id: id, createdAt: .distantPast, total: 9))
        try context.save()
        let all = try ModelContext(container).fetch(FetchDescriptor<Receipt>())
        #expect(all.count == 1)
        #expect(all.first?.total == 9)
    }

    @Test("Changing the var properties of a model leaves its let properties as inserted")
    func updatesKeepLets() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("receipts.store")
        let id = UUID()
        let created = Date(timeIntervalSince1970: 42)
        do {
            let container = try ModelContainer(for: Receipt.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Receipt(id: id, createdAt: created, note: "n", total: 1))
            try context.save()
            let editing = ModelContext(container)
            let fetched = try #require(try editing.fetch(FetchDescriptor<Receipt>()).first)
            fetched.total = 2
            try editing.save()
        }
        let container = try ModelContainer(for: Receipt.self, configurations: ModelConfiguration(url: url))
        let receipt = try #require(try ModelContext(container).fetch(FetchDescriptor<Receipt>()).first)
        #expect(receipt.id == id)
        #expect(receipt.createdAt == created)
        #expect(receipt.note == "n")
        #expect(receipt.total == 2)
    }

    @Test("let properties of a superclass and of its subclass are saved and fetched")
    func letsInAHierarchy() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("vaults.store")
        let opened = Date(timeIntervalSince1970: 86_400)
        do {
            let container = try ModelContainer(for: Vault.self, SavingsVault.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Vault(number: 1, owner: "Ada"))
            context.insert(SavingsVault(number: 2, owner: "Grace", openedOn: opened, rate: 0.02))
            try context.save()
        }
        let container = try ModelContainer(for: Vault.self, SavingsVault.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let vaults = try context.fetch(FetchDescriptor<Vault>(sortBy: [SortDescriptor(\.number)]))
        #expect(vaults.map(\.number) == [1, 2])
        #expect(vaults.map(\.owner) == ["Ada", "Grace"])
        let savings = try context.fetch(FetchDescriptor<SavingsVault>())
        #expect(savings.map(\.number) == [2])
        #expect(savings.map(\.openedOn) == [opened])
        #expect(savings.map(\.rate) == [0.02])
    }
}
