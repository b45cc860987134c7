import Foundation
import OpenSwiftData

enum Priority: Int, Codable {
    case low, normal, high
}

@Model
final class TodoItem {
    #Index<TodoItem>([\.dueDate], [\.priority, \.dueDate])

    @Attribute(.unique) var identifier: UUID
    var title: String
    var priority: Priority = Priority.normal
    var dueDate: Date?
    var isDone = false
    var tags: [String] = []
    @Transient var isExpanded = false

    init(title: String, dueDate: Date? = nil) {
        self.identifier = UUID()
        self.title = title
        self.dueDate = dueDate
    }
}

// A file store; without a URL the store goes to $XDG_DATA_HOME/<executable>/default.store.
let url = FileManager.default.temporaryDirectory.appendingPathComponent("todos-\(UUID().uuidString).store")
defer { try? FileManager.default.removeItem(at: url) }
let container = try ModelContainer(for: TodoItem.self, configurations: ModelConfiguration(url: url))
let context = ModelContext(container)

// Insert and save: one SQLite transaction.
let milk = TodoItem(title: "Buy milk", dueDate: .now)
milk.tags = ["errands"]
context.insert(milk)
context.insert(TodoItem(title: "File taxes"))
try context.save()

// Change and delete, then save again; rollback() would undo instead.
milk.isDone = true
let open = try context.fetch(FetchDescriptor<TodoItem>(predicate: #Predicate { !$0.isDone }))
print("Open items: \(open.map(\.title))")

// Sort and page.
var firstPage = FetchDescriptor<TodoItem>(sortBy: [SortDescriptor(\.title)])
firstPage.fetchLimit = 20
print("First page: \(try context.fetch(firstPage).map(\.title))")

// Pass identifiers, not models, between actors.
let id = milk.persistentModelID
try context.save()
let elsewhere = ModelContext(container)
if let sameItem = elsewhere.model(for: id) as? TodoItem {
    print("\(sameItem.title) is done: \(sameItem.isDone)")
}

// Errors are typed and say what went wrong.
do {
    _ = try ModelContainer(for: TodoItem.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: "/dev/zero")))
} catch let error as SwiftDataError {
    print("Could not open the store: \(error.detail)")
}

// An actor with a context of its own: identifiers (Sendable) cross actors, models stay where they were loaded.
@ModelActor
actor TodoImporter {
    func importItems(titled titles: [String]) throws -> [PersistentIdentifier] {
        let items = titles.map { TodoItem(title: $0) }
        for item in items { modelContext.insert(item) }
        try modelContext.save()
        return items.map(\.persistentModelID)
    }
}

let importer = TodoImporter(modelContainer: container)
let importedIDs = try await importer.importItems(titled: ["Water the plants", "Call the bank"])
print(importedIDs.compactMap { (context.model(for: $0) as? TodoItem)?.title })

// Several configurations: each keeps its entities in its own store. The drafts live in memory
// and vanish with the process; the to-do items stay in their file.
@Model
final class Draft {
    var text: String
    init(text: String) { self.text = text }
}

let itemsURL = FileManager.default.temporaryDirectory.appendingPathComponent("items-\(UUID().uuidString).store")
defer { try? FileManager.default.removeItem(at: itemsURL) }
let items = ModelConfiguration("Items", schema: Schema([TodoItem.self]), url: itemsURL)
let scratch = ModelConfiguration("Scratch", schema: Schema([Draft.self]), isStoredInMemoryOnly: true)
let split = try ModelContainer(for: TodoItem.self, Draft.self, configurations: items, scratch)
let splitContext = ModelContext(split)
splitContext.insert(TodoItem(title: "Kept on disk"))
splitContext.insert(Draft(text: "Kept in memory"))
try splitContext.save()
print("Split: \(try splitContext.fetchCount(FetchDescriptor<TodoItem>())) item, \(try splitContext.fetchCount(FetchDescriptor<Draft>())) draft")
