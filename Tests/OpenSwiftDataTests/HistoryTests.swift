import Foundation
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

@Model
final class Ledger {
    @Attribute(.unique) var code: String
    @Attribute(.preserveValueOnDeletion) var label: String
    @Attribute(.preserveValueOnDeletion) var opened: Date
    var amount: Int
    var memo: String?

    init(code: String, label: String, amount: Int = 0) {
        self.code = code
        self.label = label
        self.opened = Date(timeIntervalSince1970: 1_700_000_000)
        self.amount = amount
    }
}

/// A value whose encoding fails when negative: a save fails inside its write transaction.
struct CheckedReading: Codable, Hashable {
    var value: Int

    init(_ value: Int) { self.value = value }

    init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(Int.self)
    }

    func encode(to encoder: any Encoder) throws {
        guard value >= 0 else { throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "negative reading")) }
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

@Model
final class Meter {
    var name: String
    var reading: CheckedReading

    init(name: String, reading: Int) {
        self.name = name
        self.reading = CheckedReading(reading)
    }
}

private typealias Transactions = HistoryDescriptor<DefaultHistoryTransaction>

/// A to-many relationship kept by the other side's foreign key, then renamed (no column
/// changes, so no migration runs).
enum ShelvesV1 {
    @Model final class Shelf {
        var name: String
        @Relationship(inverse: \Book.shelf) var books: [Book] = []
        init(name: String) { self.name = name }
    }

    @Model final class Book {
        var title: String
        var shelf: Shelf?
        init(title: String) { self.title = title }
    }
}

enum ShelvesV2 {
    @Model final class Shelf {
        var name: String
        @Relationship(originalName: "books", inverse: \Book.shelf) var volumes: [Book] = []
        init(name: String) { self.name = name }
    }

    @Model final class Book {
        var title: String
        var shelf: Shelf?
        init(title: String) { self.title = title }
    }
}

@Suite("History")
struct HistoryTests {
    private func inserts(_ transaction: DefaultHistoryTransaction) -> [PersistentIdentifier] {
        transaction.changes.compactMap { if case let .insert(change) = $0 { change.changedPersistentIdentifier } else { nil } }
    }

    @Test(
        "every save appends one transaction with its author, its inserts, updates (with the changed key paths and values) and deletes",
        arguments: [false, true])
    func recordsEachSave(onDisk: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let configuration = onDisk ? ModelConfiguration(url: directory.file("history.store")) : ModelConfiguration(isStoredInMemoryOnly: true)
        let container = try ModelContainer(for: Ledger.self, configurations: configuration)
        let context = ModelContext(container)
        context.author = "importer"
        let a = Ledger(code: "A", label: "first", amount: 1)
        let b = Ledger(code: "B", label: "second", amount: 2)
        context.insert(a)
        context.insert(b)
        try context.save()

        context.author = "editor"
        a.amount = 10
        a.memo = "raised"
        context.delete(b)
        try context.save()
        try context.save()  // nothing to save: no transaction

        let history = try context.fetchHistory(Transactions())
        try #require(history.count == 2)
        let (first, second) = (history[0], history[1])
        #expect(first.author == "importer" && second.author == "editor")
        #expect(first.token < second.token && first.transactionIdentifier < second.transactionIdentifier)
        #expect(first.storeIdentifier == second.storeIdentifier)
        #expect(!first.processIdentifier.isEmpty && !first.bundleIdentifier.isEmpty)
        #expect(Set(inserts(first)) == [a.persistentModelID, b.persistentModelID])

        let insertion = try #require(first.changes.first { $0.changedPersistentIdentifier == a.persistentModelID })
        // An insertion's values are the row's when the history is fetched: `a` was raised since.
        #expect(Set(insertion.changedPropertyNames) == ["code", "label", "opened", "amount", "memo"])
        #expect(insertion.storedValues["code"] == .text("A") && insertion.storedValues["amount"] == .integer(10))
        #expect(insertion.storedValues["memo"] == .text("raised"))
        let gone = try #require(first.changes.first { $0.changedPersistentIdentifier == b.persistentModelID })
        #expect(gone.storedValues.isEmpty && gone.changedPropertyNames.isEmpty, "b's row was deleted; its deletion follows")

        var sawUpdate = false, sawDelete = false
        for change in second.changes {
            switch change {
            case let .update(update):
                sawUpdate = true
                #expect(update.changedPersistentIdentifier == a.persistentModelID)
                let typed = try #require(update as? DefaultHistoryUpdate<Ledger>)
                #expect(Set(typed.updatedAttributes.map { $0 as AnyKeyPath }) == [\Ledger.amount, \Ledger.memo])
                #expect(change.storedValues == ["amount": .integer(10), "memo": .text("raised")])
                #expect(Set(change.changedPropertyNames) == ["amount", "memo"])
            case let .delete(deletion):
                sawDelete = true
                #expect(deletion.changedPersistentIdentifier.entityName == "Ledger")
            case .insert:
                Issue.record("the second save inserted nothing")
            }
        }
        #expect(sawUpdate && sawDelete)
    }

    @Test("a deletion's tombstone carries the values of the .preserveValueOnDeletion attributes, typed, also for batch deletes")
    func tombstones() throws {
        let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for code in ["A", "B", "C"] { context.insert(Ledger(code: code, label: "label \(code)", amount: 5)) }
        try context.save()
        let a = try #require(try context.fetch(FetchDescriptor<Ledger>(predicate: #Predicate { $0.code == "A" })).first)
        context.delete(a)
        try context.save()
        let other = ModelContext(container)
        try other.delete(model: Ledger.self, where: #Predicate { $0.code != "A" })
        try other.save()

        let history = try context.fetchHistory(Transactions())
        try #require(history.count == 3)
        var labels: [String] = []
        for transaction in history.dropFirst() {
            for change in transaction.changes {
                guard case let .delete(deletion) = change, let typed = deletion as? DefaultHistoryDelete<Ledger> else {
                    Issue.record("expected only deletions, got \(change)")
                    continue
                }
                labels.append(try #require(typed.tombstone[\Ledger.label] as? String))
                #expect(typed.tombstone[\Ledger.opened] as? Date == Date(timeIntervalSince1970: 1_700_000_000))
                #expect(typed.tombstone[\Ledger.amount] == nil, "amount is not preserved")
                #expect(Array(typed.tombstone).count == 2)
            }
        }
        #expect(labels.sorted() == ["label A", "label B", "label C"])
    }

    @Test("tokens are Codable and Comparable; fetching after a token returns the later transactions only")
    func tokens() throws {
        let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for code in ["A", "B", "C", "D"] {
            context.insert(Ledger(code: code, label: code))
            try context.save()
        }
        let all = try context.fetchHistory(Transactions())
        #expect(all.count == 4)
        let data = try JSONEncoder().encode(all[1].token)
        let token = try JSONDecoder().decode(DefaultHistoryToken.self, from: data)
        #expect(token == all[1].token)
        let later = try context.fetchHistory(Transactions(predicate: #Predicate { $0.token > token }))
        #expect(later.map(\.id) == [all[2].id, all[3].id])
        let upTo = try context.fetchHistory(Transactions(predicate: #Predicate { token >= $0.token }))
        #expect(upTo.map(\.id) == [all[0].id, all[1].id])
    }

    @Test("author and time predicates, fetchLimit and sortBy")
    func descriptors() throws {
        let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for (index, author) in ["a", "b", "a", "c", "a"].enumerated() {
            context.author = author
            context.insert(Ledger(code: "\(index)", label: author))
            try context.save()
        }
        let byA = try context.fetchHistory(Transactions(predicate: #Predicate { $0.author == "a" }))
        #expect(byA.count == 3 && byA.allSatisfy { $0.author == "a" })
        let future = Date.distantFuture
        let notA = try context.fetchHistory(Transactions(predicate: #Predicate { $0.author != "a" && $0.timestamp <= future }))
        #expect(notA.map(\.author) == ["b", "c"])
        // A condition SQL cannot see (the changes) runs on the transactions SQL returns.
        let withOneChange = try context.fetchHistory(Transactions(predicate: #Predicate { $0.author == "a" && $0.changes.count == 1 }))
        #expect(withOneChange.count == 3)
        var limited = Transactions(predicate: #Predicate { $0.author == "a" })
        limited.fetchLimit = 2
        #expect(try context.fetchHistory(limited).count == 2)
        var newestFirst = Transactions(sortBy: [SortDescriptor(\.transactionIdentifier, order: .reverse)])
        newestFirst.fetchLimit = 1
        let newest = try context.fetchHistory(newestFirst)
        #expect(newest.count == 1 && newest.first?.author == "a" && newest.first?.id == byA.last?.id)
    }

    @Test("deleteHistory removes transactions; a token from before them then fails with historyTokenExpired")
    func deleteAndExpire() throws {
        let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for code in ["A", "B", "C", "D"] {
            context.insert(Ledger(code: code, label: code))
            try context.save()
        }
        let all = try context.fetchHistory(Transactions())
        let (old, kept) = (all[0].token, all[2].token)
        try context.deleteHistory(Transactions(predicate: #Predicate { $0.token <= kept }))
        #expect(try context.fetchHistory(Transactions()).map(\.id) == [all[3].id])
        #expect(try context.fetchCount(FetchDescriptor<Ledger>()) == 4, "the data stays")
        #expect(throws: SwiftDataError.historyTokenExpired) {
            try context.fetchHistory(Transactions(predicate: #Predicate { $0.token > old }))
        }
        // The token of the last deleted transaction is still good: nothing after it is gone.
        #expect(try context.fetchHistory(Transactions(predicate: #Predicate { $0.token > kept })).count == 1)
        struct Other: HistoryTransaction {
            var id: Int
            var timestamp: Date
            var changes: [HistoryChange]
            var token: DefaultHistoryToken
            var transactionIdentifier: Int
            var storeIdentifier: String
            var author: String?
            static func == (lhs: Other, rhs: Other) -> Bool { lhs.id == rhs.id }
            func hash(into hasher: inout Hasher) { hasher.combine(id) }
        }
        #expect(throws: SwiftDataError.invalidTransactionFetchRequest) {
            try context.fetchHistory(HistoryDescriptor<Other>())
        }
    }

    @Test("erasing the container records a deletion for every row")
    func eraseIsRecorded() throws {
        let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let ledgers = ["A", "B"].map { Ledger(code: $0, label: $0) }
        for ledger in ledgers { context.insert(ledger) }
        try context.save()
        try container.erase()
        let last = try #require(try context.fetchHistory(Transactions()).last)
        let deleted = last.changes.compactMap { change -> PersistentIdentifier? in
            if case .delete = change { return change.changedPersistentIdentifier }
            return nil
        }
        #expect(Set(deleted) == Set(ledgers.map(\.persistentModelID)))
    }

    @Test("a save that fails inside its write transaction (after deleting a row) keeps neither the deletion nor any history")
    func failureInsideTheWrite() throws {
        let container = try ModelContainer(for: Meter.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let first = Meter(name: "a", reading: 1)
        context.insert(first)
        context.insert(Meter(name: "b", reading: 2))
        try context.save()
        let before = try context.fetchHistory(Transactions()).count

        context.delete(first)
        context.insert(Meter(name: "c", reading: -1))
        #expect(throws: SwiftDataError.self) { try context.save() }
        #expect(try context.fetchHistory(Transactions()).count == before)
        #expect(try ModelContext(container).fetch(FetchDescriptor<Meter>()).map(\.name).sorted() == ["a", "b"])
    }

    @Test("foreign keys set to NULL by a deletion are recorded as updates, also for relationships never loaded")
    func nullifiedReferencesAreRecorded() throws {
        let container = try ModelContainer(
            for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let setup = ModelContext(container)
        let group = ContactsV1.Group(title: "team")
        setup.insert(group)
        let members = ["a", "b"].map { ContactsV1.Contact(name: $0, age: 1) }
        for member in members {
            setup.insert(member)
            member.group = group
        }
        try setup.save()

        let context = ModelContext(container)
        try context.delete(model: ContactsV1.Group.self)
        try context.save()
        let last = try #require(try context.fetchHistory(Transactions()).last)
        let nullified = last.changes.filter { $0.storedValues["group"] == .null }.map(\.changedPersistentIdentifier)
        #expect(Set(nullified) == Set(members.map(\.persistentModelID)))
        #expect(last.changes.contains { if case .delete = $0 { $0.changedPersistentIdentifier == group.persistentModelID } else { false } })
    }

    @Test("a save that deletes a row records cleared foreign keys only for the rows that stay; rows deleted with it are recorded as deleted, once")
    func deletionsInOneSave() throws {
        let container = try ModelContainer(
            for: ContactsV1.Contact.self, ContactsV1.Group.self, Conversation.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let setup = ModelContext(container)
        let group = ContactsV1.Group(title: "team")
        setup.insert(group)
        let members = ["stays", "goes"].map { ContactsV1.Contact(name: $0, age: 1) }
        for member in members {
            setup.insert(member)
            member.group = group
        }
        let chat = Conversation(title: "chat")
        setup.insert(chat)
        for index in 0..<3 { chat.messages.append(ChatMessage(text: "\(index)")) }
        try setup.save()
        let messageIDs = chat.messages.map(\.persistentModelID)

        let context = ModelContext(container)
        let ids = [group.persistentModelID, members[1].persistentModelID, chat.persistentModelID]
        context.delete(try #require(context.model(for: ids[0]) as? ContactsV1.Group))
        context.delete(try #require(context.model(for: ids[1]) as? ContactsV1.Contact))
        context.delete(try #require(context.model(for: ids[2]) as? Conversation))
        try context.save()

        let last = try #require(try context.fetchHistory(Transactions()).last)
        let updated = last.changes.compactMap { change -> PersistentIdentifier? in
            if case .update = change { change.changedPersistentIdentifier } else { nil }
        }
        #expect(updated == [members[0].persistentModelID], "only the member that stays has its group cleared: \(updated)")
        let deleted = last.changes.compactMap { change -> PersistentIdentifier? in
            if case .delete = change { change.changedPersistentIdentifier } else { nil }
        }
        #expect(deleted.count == Set(deleted).count)
        #expect(Set(deleted) == Set(ids + messageIDs), "the cascade deletes the messages")
        let reader = ModelContext(container)
        let stays = try #require(try reader.fetch(FetchDescriptor<ContactsV1.Contact>()).first)
        #expect(stays.name == "stays" && stays.group == nil)
        #expect(try reader.fetchCount(FetchDescriptor<ChatMessage>()) == 0)
    }

    @Test("a relationship renamed without a column change is read under its new name in older entries")
    func renamedRelationshipInHistory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("shelves.store")
        do {
            let container = try ModelContainer(for: ShelvesV1.Shelf.self, ShelvesV1.Book.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let shelf = ShelvesV1.Shelf(name: "fiction")
            context.insert(shelf)
            try context.save()
            shelf.books.append(ShelvesV1.Book(title: "Dune"))
            try context.save()
        }
        let container = try ModelContainer(for: ShelvesV2.Shelf.self, ShelvesV2.Book.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let shelfUpdate = try #require(
            try context.fetchHistory(Transactions()).last?.changes.first {
                if case .update = $0 { $0.changedPersistentIdentifier.entityName == "Shelf" } else { false }
            })
        #expect(shelfUpdate.changedPropertyNames == ["volumes"])
        guard case let .update(update) = shelfUpdate, let typed = update as? DefaultHistoryUpdate<ShelvesV2.Shelf> else {
            Issue.record("expected a typed update of Shelf")
            return
        }
        #expect(typed.updatedAttributes.map { $0 as AnyKeyPath } == [\ShelvesV2.Shelf.volumes])
    }

    @Test("a token behind a force unwrap, or from another store, is checked for expiry too")
    func tokenExpiryEverywhere() throws {
        let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for code in ["A", "B", "C"] {
            context.insert(Ledger(code: code, label: code))
            try context.save()
        }
        let all = try context.fetchHistory(Transactions())
        let first: DefaultHistoryToken? = all[0].token
        let second = all[1].token
        try context.deleteHistory(Transactions(predicate: #Predicate { $0.token <= second }))
        #expect(throws: SwiftDataError.historyTokenExpired) {
            try context.fetchHistory(Transactions(predicate: #Predicate { $0.token > first! }))
        }
        let otherContainer = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let otherContext = ModelContext(otherContainer)
        otherContext.insert(Ledger(code: "X", label: "x"))
        try otherContext.save()
        let foreign = try #require(try otherContext.fetchHistory(Transactions()).first?.token)
        #expect(throws: SwiftDataError.historyTokenExpired) {
            try context.fetchHistory(Transactions(predicate: #Predicate { $0.token > foreign }))
        }
        // Trimming with an old token is harmless.
        try context.deleteHistory(Transactions(predicate: #Predicate { $0.token <= first! }))
    }

    @Test("a save that fails writes neither its data nor its history")
    func failedSaveRecordsNothing() throws {
        let container = try ModelContainer(
            for: TodoList.self, TodoItem.self, Tag.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let list = TodoList(name: "groceries")
        context.insert(list)
        let item = TodoItem(title: "milk", list: list)
        context.insert(item)
        try context.save()
        let before = try context.fetchHistory(Transactions()).count

        context.delete(list)  // .deny while an item belongs to it
        #expect(throws: SwiftDataError.self) { try context.save() }
        #expect(try context.fetchHistory(Transactions()).count == before)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<TodoList>()) == 1)
    }

    @Test("an upsert is recorded as an update of the existing row; many-to-many changes name the relationship")
    func upsertAndRelationships() throws {
        let container = try ModelContainer(
            for: Ledger.self, TodoList.self, TodoItem.self, Tag.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let original = Ledger(code: "A", label: "one")
        context.insert(original)
        try context.save()
        context.insert(Ledger(code: "A", label: "two"))
        try context.save()
        let upsert = try #require(try context.fetchHistory(Transactions()).last)
        guard case let .update(update)? = upsert.changes.first, upsert.changes.count == 1 else {
            Issue.record("expected one update, got \(upsert.changes)")
            return
        }
        #expect(update.changedPersistentIdentifier == original.persistentModelID)

        let list = TodoList(name: "l")
        let item = TodoItem(title: "t", list: list)
        let tag = Tag(name: "urgent")
        context.insert(item)
        context.insert(tag)
        try context.save()
        item.tags.append(tag)
        try context.save()
        let last = try #require(try context.fetchHistory(Transactions()).last)
        let itemChange = try #require(last.changes.first { $0.changedPersistentIdentifier == item.persistentModelID })
        #expect(itemChange.changedPropertyNames.contains("tags"))
        let tagKey = try #require(Int64(tag.persistentModelID.description.split(separator: "/").last.map(String.init) ?? ""))
        #expect(itemChange.storedValues["tags"] == .text("[\(tagKey)]"))
    }

    @Test("an insertion carries every stored value of its row, foreign keys and many-to-many keys included, for a bulk insert too")
    func insertionValues() throws {
        let container = try ModelContainer(
            for: TodoList.self, TodoItem.self, Tag.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let list = TodoList(name: "errands")
        let tags = [Tag(name: "home"), Tag(name: "work")]
        let item = TodoItem(title: "milk", list: list)
        item.tags = tags
        context.insert(item)
        let bulk = (0..<300).map { TodoItem(title: "bulk \($0)", list: list) }
        for model in bulk { context.insert(model) }
        try context.save()

        func key(_ model: some PersistentModel) throws -> Int64 {
            try #require(Int64(model.persistentModelID.description.split(separator: "/").last.map(String.init) ?? ""))
        }
        let transaction = try #require(try context.fetchHistory(Transactions()).last)
        let insertions = transaction.changes.filter { if case .insert = $0 { true } else { false } }
        #expect(insertions.count == 304)
        let itemInsert = try #require(insertions.first { $0.changedPersistentIdentifier == item.persistentModelID })
        #expect(itemInsert.storedValues["title"] == .text("milk"))
        #expect(itemInsert.storedValues["list"] == .integer(try key(list)))
        let tagKeys = try tags.map(key).sorted()
        #expect(itemInsert.storedValues["tags"] == .text("[\(tagKeys.map(String.init).joined(separator: ","))]"))
        let listInsert = try #require(insertions.first { $0.changedPersistentIdentifier == list.persistentModelID })
        #expect(listInsert.storedValues["name"] == .text("errands"))
        let tagInsert = try #require(insertions.first { $0.changedPersistentIdentifier == tags[0].persistentModelID })
        #expect(tagInsert.storedValues["items"] == .text("[\(try key(item))]"), "the other side of a many-to-many relationship")
        for model in bulk {
            let change = try #require(insertions.first { $0.changedPersistentIdentifier == model.persistentModelID })
            #expect(change.storedValues["title"] == .text(model.title))
        }
    }

    @Test("a deleted row's key is never given to another row, so a key in the history names one record")
    func keysAreNotReused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("keys.store")
        var deletedID: PersistentIdentifier
        do {
            let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Ledger(code: "A", label: "a"))
            let b = Ledger(code: "B", label: "b")
            context.insert(b)
            try context.save()
            deletedID = b.persistentModelID
            context.delete(b)
            try context.save()
        }
        let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let c = Ledger(code: "C", label: "c")
        context.insert(c)
        try context.save()
        #expect(c.persistentModelID != deletedID)
        #expect(try context.fetchHistory(Transactions()).count == 3, "history survives reopening")
    }
}
