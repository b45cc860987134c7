import Foundation
import OpenSwiftData

@Model final class Chore {
    @Attribute(.preserveValueOnDeletion) var title: String
    var done = false
    init(title: String) { self.title = title }
}

let container = try ModelContainer(for: Chore.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
let context = ModelContext(container)
context.author = "importer"
let task = Chore(title: "Write the history example")
context.insert(task)
try context.save()
task.done = true
try context.save()
context.delete(task)
try context.save()

// Every save is one transaction: who, when, and what changed, with the stored values.
for transaction in try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()) {
    for change in transaction.changes {
        switch change {
        case .insert(let insert):
            print("\(transaction.author ?? "-") inserted \(insert.changedPersistentIdentifier)")
        case .update(let update):
            print("updated \(change.changedPropertyNames) to \(change.storedValues) of \(update.changedPersistentIdentifier)")
        case .delete(let delete):
            let title = (delete as? DefaultHistoryDelete<Chore>)?.tombstone[\Chore.title] as? String
            print("deleted \(title ?? "?")")
        }
    }
}

// Read only what is new since the last token you processed, then trim what every reader has seen.
let seen = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
if let last = seen.last?.token {
    let newer = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.token > last }))
    print("\(newer.count) transactions after the token")
    try context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.token <= last }))
}

// Undo: each save is one step; undoing puts the previous values back as unsaved changes.
let undoManager = UndoManager()
context.undoManager = undoManager
let note = Chore(title: "Undo me")
context.insert(note)
try context.save()
note.title = "Renamed"
try context.save()
undoManager.undo()
try context.save()
print("after undo: \(note.title)")
