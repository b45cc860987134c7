import Foundation
import Testing

@testable import OpenSwiftData

@Model
final class BatchedNote {
    var index: Int
    var title: String

    init(index: Int, title: String) {
        self.index = index
        self.title = title
    }
}

@Suite("Fetching in batches")
struct FetchBatchTests {
    private func context(notes count: Int) throws -> ModelContext {
        let container = try ModelContainer(for: BatchedNote.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.autosaveEnabled = false
        for index in 0..<count { context.insert(BatchedNote(index: index, title: "note \(index)")) }
        try context.save()
        return ModelContext(container)
    }

    @Test("fetch(_:batchSize:) gives the same models in the same order as fetch(_:), holding at most two batches registered as it is read")
    func batchedFetchMatchesFetch() throws {
        let context = try context(notes: 2_500)
        let descriptor = FetchDescriptor<BatchedNote>(predicate: #Predicate { $0.index % 2 == 0 }, sortBy: [SortDescriptor(\.index, order: .reverse)])
        let notes = try context.fetch(descriptor, batchSize: 100)
        #expect(notes.count == 1_250)
        #expect(context.identityMap["BatchedNote"]?.count ?? 0 == 0)
        var indexes: [Int] = []
        var largestRegistered = 0
        for note in notes {
            indexes.append(note.index)
            largestRegistered = max(largestRegistered, context.identityMap["BatchedNote"]?.count ?? 0)
        }
        #expect(indexes == stride(from: 2_498, through: 0, by: -2).map { $0 })
        #expect(largestRegistered <= 200)
        #expect(notes[1_249].title == "note 0")
        #expect(notes[0].title == "note 2498")
        #expect(try ModelContext(context.container).fetch(descriptor).map(\.index) == indexes)
        #expect(try context.fetchIdentifiers(descriptor, batchSize: 7).map { $0 } == (try context.fetchIdentifiers(descriptor)))
    }

    @Test("a model changed while reading in batches stays registered, keeps its change, and the next save writes it")
    func changedModelStaysRegistered() throws {
        let context = try context(notes: 300)
        let notes = try context.fetch(FetchDescriptor<BatchedNote>(sortBy: [SortDescriptor(\.index)]), batchSize: 50)
        let first = notes[0]
        first.title = "edited"
        for note in notes { _ = note.title }
        #expect(notes[0] === first)
        #expect(first.title == "edited")
        try context.save()
        let stored = try ModelContext(context.container).fetch(FetchDescriptor<BatchedNote>(predicate: #Predicate { $0.index == 0 }))
        #expect(stored.map(\.title) == ["edited"])
    }

    @Test(
        "unsaved changes of the entity with includePendingChanges are a typed error; without them, or with includePendingChanges false, the fetch runs"
    )
    func pendingChanges() throws {
        let context = try context(notes: 10)
        context.insert(BatchedNote(index: 99, title: "unsaved"))
        #expect(throws: SwiftDataError.includePendingChangesWithBatchSize) {
            _ = try context.fetch(FetchDescriptor<BatchedNote>(), batchSize: 5)
        }
        var stored = FetchDescriptor<BatchedNote>(sortBy: [SortDescriptor(\.index)])
        stored.includePendingChanges = false
        #expect(try context.fetch(stored, batchSize: 5).map(\.index) == Array(0..<10))
        try context.save()
        #expect(try context.fetch(FetchDescriptor<BatchedNote>(), batchSize: 5).count == 11)
    }

    @Test("a row deleted after the collection was made reads as a model with default values, not as a crash or a shifted index")
    func rowDeletedAfterwards() throws {
        let context = try context(notes: 20)
        let notes = try context.fetch(FetchDescriptor<BatchedNote>(sortBy: [SortDescriptor(\.index)]), batchSize: 5)
        let other = ModelContext(context.container)
        try other.delete(model: BatchedNote.self, where: #Predicate { $0.index == 12 })
        try other.save()
        #expect(notes.count == 20)
        #expect(notes[11].index == 11)
        #expect(notes[13].index == 13)
        #expect(notes[12].title == "")
    }

    @Test("a model kept from a batch reading has left, or fetched before the batches, is saved when it is changed afterwards")
    func keptModelsStillSave() throws {
        let context = try context(notes: 300)
        let earlier = try #require(try context.fetch(FetchDescriptor<BatchedNote>(predicate: #Predicate { $0.index == 5 })).first)
        let notes = try context.fetch(FetchDescriptor<BatchedNote>(sortBy: [SortDescriptor(\.index)]), batchSize: 50)
        let kept = notes[10]
        for note in notes { _ = note.title }
        // Fetched before the collection: still the context's.
        #expect(context.identityMap["BatchedNote"]?[try #require(earlier.persistentModelID.rowID)]?.model === earlier)
        kept.title = "kept and edited"
        earlier.title = "earlier and edited"
        #expect(context.hasChanges)
        try context.save()
        let stored = try ModelContext(context.container).fetch(
            FetchDescriptor<BatchedNote>(predicate: #Predicate { $0.index == 10 || $0.index == 5 }, sortBy: [SortDescriptor(\.index)]))
        #expect(stored.map(\.title) == ["earlier and edited", "kept and edited"])
    }

}
