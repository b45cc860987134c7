import Foundation
import OpenSwiftData
import OpenSwiftDataSync

@Model
final class Note {
    var text: String
    var done = false
    init(text: String) { self.text = text }
}

/// Everything an app adds to sync its models: which models, and an engine to start.
func startSync(_ container: ModelContainer, server: URL, user: String, token: String, batch: Int = 100) async throws -> SyncEngine {
    var configuration = SyncConfiguration()
    configuration.sync(Note.self)  // each user's notes, in their private scope
    configuration.maxMutationsPerPush = batch
    let engine = try SyncEngine(container: container, server: server, user: user,
                                configuration: configuration, tokenProvider: { token })
    await engine.start()  // pushes saves, pulls others' changes, listens on the live channel
    Task {
        for await event in engine.events { print("sync:", event) }
    }
    return engine
}

// The rest is the command line of this example: two processes on one machine editing the same
// notes through `swift run osd-server` (see the README):
//
//   swift run SyncedNotes --server http://127.0.0.1:8080 --user alice --token T --store a.sqlite add "Milk"
//   swift run SyncedNotes ... --store b.sqlite list
//
// Commands: `add TEXT…` (one save each), `add-many N` (N saves), `done TEXT`, `list`, `sync`,
// `watch` (print events until killed). Each command ends with `syncNow()`.

var options: [String: String] = [:]
var words: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument.hasPrefix("--"), let value = arguments.popFirst() {
        options[String(argument.dropFirst(2))] = value
    } else {
        words.append(argument)
    }
}
guard let serverText = options["server"], let server = URL(string: serverText), let user = options["user"],
      let token = options["token"], let store = options["store"], let command = words.first else {
    print("usage: SyncedNotes --server URL --user NAME --token JWT --store FILE [--batch N] (add TEXT…|add-many N|done TEXT|list|sync|watch)")
    exit(2)
}
let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: store)))
let engine = try await startSync(container, server: server, user: user, token: token, batch: Int(options["batch"] ?? "") ?? 100)
print("client:", await engine.currentClientID)
let context = ModelContext(container)
if command != "add-many" { try? await engine.syncNow() }  // start from the server's latest
switch command {
case "add":
    for text in words.dropFirst() {
        context.insert(Note(text: text))
        try context.save()
    }
case "add-many":
    let count = Int(words.dropFirst().first ?? "") ?? 0
    for index in 0..<count {
        context.insert(Note(text: "note \(index)"))
        try context.save()
    }
    print("saved:", count)
case "done":
    let text = words.dropFirst().joined(separator: " ")
    for note in try context.fetch(FetchDescriptor<Note>()) where note.text == text { note.done = true }
    try context.save()
case "watch":
    while true { try await Task.sleep(for: .seconds(3600)) }
default:
    break
}
do {
    try await engine.syncNow()
    print("synced; pending:", try await engine.pendingChangeCount())
} catch {
    print("not synced (the saves wait in the store):", error)
}
if command == "list" {
    for note in try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.text)])) {
        print(note.done ? "[x]" : "[ ]", note.text)
    }
}
await engine.stop()
