import Foundation
import OpenSwiftData

enum Status: String, Codable {
    case pending, sent, failed
}

@Model
final class Message {
    var text: String
    var status: Status
    var retryCount = 0
    var tags: [String] = []

    init(text: String, status: Status) {
        self.text = text
        self.status = status
    }
}

let container = try ModelContainer(for: Message.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
let context = ModelContext(container)
let urgent = Message(text: "Meet at the Café", status: .failed)
urgent.tags = ["urgent"]
context.insert(urgent)
context.insert(Message(text: "Lunch?", status: .pending))
context.insert(Message(text: "Old news", status: .sent))
try context.save()

// Written as for SwiftData: implicit members, static members, hasPrefix/hasSuffix all compile.
let toRetry = #Predicate<Message> { $0.status == .pending || ($0.status == .failed && $0.retryCount < 3) }
print(try context.fetch(FetchDescriptor(predicate: toRetry, sortBy: [SortDescriptor(\.text)])).map(\.text))
// ["Lunch?", "Meet at the Café"]

let search = #Predicate<Message> { $0.text.localizedStandardContains("cafe") && $0.tags.contains("urgent") }
print(try context.fetch(FetchDescriptor(predicate: search)).map(\.text))  // ["Meet at the Café"]
print(try context.explain(FetchDescriptor(predicate: search)).runsEntirelyInSQL)  // true

// Predicates compose: a captured predicate is inlined into the SQL of the one that calls it.
let recent = #Predicate<Message> { $0.text.hasSuffix("?") || $0.status != .sent }
let recentAndPending = #Predicate<Message> { recent.evaluate($0) && $0.status == .pending }
print(try context.fetch(FetchDescriptor(predicate: recentAndPending)).map(\.text))  // ["Lunch?"]

// Strings sort as Foundation sorts them on Apple's platforms: .localizedStandard unless asked otherwise.
let byText = FetchDescriptor<Message>(sortBy: [SortDescriptor(\.text, comparator: .localizedStandard)])
print(try context.fetch(byText).map(\.text))  // ["Lunch?", "Meet at the Café", "Old news"]

// Count and identify without loading models; read large results a batch at a time.
print(try context.fetchCount(FetchDescriptor<Message>(predicate: toRetry)))  // 2
let retryIDs = try context.fetchIdentifiers(FetchDescriptor<Message>(predicate: toRetry))
try context.enumerate(FetchDescriptor<Message>(), batchSize: 500) { message in
    print(message.text, message.retryCount)
}
let allMessages = try context.fetch(FetchDescriptor<Message>(sortBy: [SortDescriptor(\.text)]), batchSize: 100)
print(retryIDs.count, allMessages.count, allMessages[0].text)  // 2 3 Lunch?
