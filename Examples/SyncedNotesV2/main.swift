import Foundation
import OpenSwiftData
import OpenSwiftDataSync

// Version 2 of the SyncedNotes example, as an app update ships it: `Note` gains a property. The
// store of version 1 is migrated when the container opens; the sync engine keeps its client id,
// its cursor and every save version 1 queued, which this version sends, each once.
//
//   swift run SyncedNotesV2 --server URL --user NAME --token JWT --store FILE (sync|list)

@Model
final class Note {
    var text: String
    var done = false
    var priority = 0  // new in version 2
    init(text: String) { self.text = text }
}

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
    print("usage: SyncedNotesV2 --server URL --user NAME --token JWT --store FILE (sync|list)")
    exit(2)
}
let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: store)))
var configuration = SyncConfiguration()
configuration.sync(Note.self)
let engine = try SyncEngine(container: container, server: server, user: user, configuration: configuration, tokenProvider: { token })
print("client:", await engine.currentClientID)
print("pending:", try await engine.pendingChangeCount())
do {
    try await engine.syncNow()
    try await engine.syncNow()
    print("synced; pending:", try await engine.pendingChangeCount())
} catch {
    print("not synced (the saves wait in the store):", error)
}
if command == "list" {
    for note in try ModelContext(container).fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.text)])) {
        print(note.done ? "[x]" : "[ ]", note.text, "priority \(note.priority)")
    }
}
