import Foundation
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

/// Inserts, renames and deletes its own notes, one save per round, under its own author.
@ModelActor
actor StressWriter {
    func run(writer: Int, rounds: Int) throws -> [String: Int] {
        modelContext.author = "writer-\(writer)"
        var expected: [String: Int] = [:]  // title -> count, for the notes that stay
        var mine: [Note] = []
        for round in 0..<rounds {
            for index in 0..<3 {
                let note = Note(title: "w\(writer)-r\(round)-\(index)")
                modelContext.insert(note)
                mine.append(note)
                expected[note.title] = 0
            }
            if round % 3 == 1, let target = mine.first(where: { !$0.isDeleted }) {
                target.count += round
                expected[target.title] = target.count
            }
            if round % 4 == 2, let victim = mine.last(where: { !$0.isDeleted && expected[$0.title] == 0 }) {
                modelContext.delete(victim)
                expected[victim.title] = nil
            }
            try modelContext.save()
            mine.removeAll { $0.isDeleted }
        }
        return expected
    }
}

/// Reads while the writers write: no fetch ever sees a row twice or a note not written by a
/// writer.
@ModelActor
actor StressReader {
    func run(reads: Int) async throws -> Bool {
        var consistent = true
        for _ in 0..<reads {
            let notes = try modelContext.fetch(FetchDescriptor<Note>())
            let titles = notes.map(\.title)
            consistent = consistent && Set(titles).count == titles.count && titles.allSatisfy { $0.hasPrefix("w") }
            consistent = consistent && Set(notes.map(\.persistentModelID)).count == notes.count
            await Task.yield()
        }
        return consistent
    }
}

@Suite("Concurrency stress")
struct ConcurrencyStressTests {
    @Test("four writer actors and two readers on one file store: every row and every history entry is there once, in the right transaction")
    func writersAndReaders() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: directory.file("stress.store")))
        let writers = 4, rounds = 24
        let expected = try await withThrowingTaskGroup(of: [String: Int].self) { group in
            for number in 0..<writers {
                let writer = StressWriter(modelContainer: container)
                group.addTask { try await writer.run(writer: number, rounds: rounds) }
            }
            for _ in 0..<2 {
                let reader = StressReader(modelContainer: container)
                group.addTask {
                    let consistent = try await reader.run(reads: 40)
                    #expect(consistent)
                    return [:]
                }
            }
            var all: [String: Int] = [:]
            for try await part in group { all.merge(part) { $1 } }
            return all
        }

        // Rows: exactly the notes each writer kept, with their last values, once each.
        let context = ModelContext(container)
        let notes = try context.fetch(FetchDescriptor<Note>())
        #expect(notes.count == expected.count)
        #expect(Dictionary(notes.map { ($0.title, $0.count) }, uniquingKeysWith: { _, _ in -1 }) == expected)

        // History: one transaction per save, by the right author; per row, one insert, one
        // delete for each deleted row, and the last recorded count of each row is its count.
        let transactions = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(transactions.count == writers * rounds)
        for number in 0..<writers {
            #expect(transactions.filter { $0.author == "writer-\(number)" }.count == rounds)
        }
        #expect(transactions.map(\.transactionIdentifier) == transactions.map(\.transactionIdentifier).sorted())
        var replayed: [PersistentIdentifier: Int] = [:]  // id -> last recorded count (0 when inserted)
        var insertedTwice = false
        for transaction in transactions {
            for change in transaction.changes {
                let id = change.changedPersistentIdentifier
                switch change {
                case .insert:
                    if replayed[id] != nil { insertedTwice = true }
                    replayed[id] = 0
                case .update:
                    #expect(replayed[id] != nil, "an update of a row never inserted")
                    if case let .integer(count)? = change.storedValues["count"] { replayed[id] = Int(count) }
                case .delete:
                    #expect(replayed.removeValue(forKey: id) != nil, "a deletion of a row never inserted")
                }
            }
        }
        #expect(!insertedTwice)
        #expect(Set(replayed.keys) == Set(notes.map(\.persistentModelID)))
        for note in notes {
            #expect(replayed[note.persistentModelID] == note.count)
        }
    }
}
