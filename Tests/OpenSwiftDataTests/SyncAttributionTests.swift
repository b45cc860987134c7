import Foundation
import OpenSwiftData
import Testing

@Suite("Every write attributed")
struct SyncAttributionTests {
    private func container(_ types: [any PersistentModel.Type] = syncTestTypes + [Ledger.self]) throws -> ModelContainer {
        let container = try ModelContainer(for: Schema(types), configurations: ModelConfiguration(url: syncStoreURL()))
        try container.enableSyncCapture(SyncCaptureConfiguration(SyncProject.self, SyncTask.self, SyncUser.self, SyncLabel.self))
        return container
    }

    @Test("a batch delete is logged like a save: history with the author and tombstones, a sync deletion per synced record")
    func batchDelete() throws {
        let container = try container()
        let context = ModelContext(container)
        context.author = "app"
        let tasks = ["a", "b", "c"].map { SyncTask(title: $0) }
        for task in tasks { context.insert(task) }
        context.insert(Ledger(code: "L1", label: "kept in tombstone"))
        try context.save()
        let ids = try tasks.map { try #require(try container.syncRecordID(for: $0.persistentModelID)) }

        let other = ModelContext(container)  // nothing registered: the rows go by one DELETE
        other.author = "cleaner"
        try other.delete(model: SyncTask.self, where: #Predicate { $0.title != "b" })
        try other.delete(model: Ledger.self)
        try other.save()

        let entry = try #require(try container.syncLogEntries().last)
        #expect(entry.author == "cleaner")
        #expect(entry.changes.allSatisfy { $0.kind == .delete && $0.entity == "SyncTask" })
        #expect(Set(entry.changes.map(\.recordID)) == [ids[0], ids[2]])
        #expect(try container.persistentIdentifier(forSyncRecord: ids[0], entity: "SyncTask") == nil)
        #expect(try container.persistentIdentifier(forSyncRecord: ids[1], entity: "SyncTask") != nil)

        let transaction = try #require(try other.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).last)
        #expect(transaction.author == "cleaner")
        let tombstone = transaction.changes.compactMap { change -> HistoryTombstone<Ledger>? in
            if case let .delete(deletion) = change { return (deletion as? DefaultHistoryDelete<Ledger>)?.tombstone }
            return nil
        }.first
        #expect(tombstone?[\Ledger.label] as? String == "kept in tombstone")
    }

    @Test("erase(author:) records a deletion per row with tombstones and the author, logs synced deletions, and announces the save")
    func erase() async throws {
        let container = try container()
        let context = ModelContext(container)
        context.insert(SyncUser(handle: "u42", name: "Ada"))
        context.insert(SyncTask(title: "t", project: SyncProject(title: "p")))
        context.insert(Ledger(code: "L1", label: "label"))
        try context.save()
        try container.registerSyncConsumer("engine")
        var events = container.saveEvents().makeAsyncIterator()

        try container.erase(author: "reset")

        let event = try #require(await events.next())
        #expect(event.author == "reset")
        #expect(event.deleted.count == 4)
        let transaction = try #require(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).last)
        #expect(event.historyToken == transaction.token)
        #expect(transaction.author == "reset")
        #expect(transaction.changes.count == 4)
        let labels = transaction.changes.compactMap { change -> String? in
            if case let .delete(deletion) = change { return (deletion as? DefaultHistoryDelete<Ledger>)?.tombstone[\Ledger.label] as? String }
            return nil
        }
        #expect(labels == ["label"])
        let entry = try #require(try container.syncLogEntries().last)
        #expect(entry.author == "reset")
        #expect(Set(entry.changes.map(\.entity)) == ["SyncUser", "SyncTask", "SyncProject"])
        #expect(entry.changes.allSatisfy { $0.kind == .delete })
        #expect(entry.changes.contains { $0.recordID == "u42" })

        // Empty and usable: the same unique record can come back.
        context.insert(SyncUser(handle: "u42", name: "again"))
        try context.save()
        #expect(try container.syncLogEntries().last?.changes.first?.kind == .insert)
        // deleteAllData is erase without an author.
        container.deleteAllData()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<SyncUser>()) == 0)
    }

    @Test("a save's event carries its context's author and history token")
    func saveEventCarriesAuthorAndToken() async throws {
        let container = try ModelContainer(for: Ledger.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        var events = container.saveEvents().makeAsyncIterator()
        let context = ModelContext(container)
        context.author = "writer"
        context.insert(Ledger(code: "A", label: "a"))
        try context.save()
        let event = try #require(await events.next())
        #expect(event.author == "writer")
        let token = try #require(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).last?.token)
        #expect(event.historyToken == token)
    }
}
