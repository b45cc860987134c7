// A FAQ whose use counts the user's phone and laptop both increment, each offline: the count
// is declared a counter, so every device ends with the sum of all increments.
import Foundation
import OpenSwiftData
import OpenSwiftDataSync

@Model
final class FAQEntity {
    @Attribute(.unique) var key: String
    var question: String
    var usageCount: Int = 0

    init(key: String, question: String) {
        self.key = key
        self.question = question
    }
}

var configuration = SyncConfiguration()
configuration.sync(FAQEntity.self)
configuration.merge(\FAQEntity.usageCount, .counter)

let store = FileManager.default.temporaryDirectory.appendingPathComponent("faq-\(UUID().uuidString).sqlite")
let container = try ModelContainer(for: FAQEntity.self, configurations: ModelConfiguration(url: store))
guard let server = URL(string: "http://127.0.0.1:8080") else { exit(1) }  // the app's osd-server
let engine = try SyncEngine(container: container, server: server, user: "alice", configuration: configuration) { "token" }

// The model code stays plain SwiftData: a save records the difference (+1), which the server
// adds to the count; setting the count outright (to 0, say) records the difference too.
let context = ModelContext(container)
let entry = FAQEntity(key: "reset-password", question: "How do I reset my password?")
context.insert(entry)
try context.save()
entry.usageCount += 1
try context.save()
print("\(entry.key): used \(entry.usageCount) times; \(try await engine.pendingChangeCount()) saves to push")
