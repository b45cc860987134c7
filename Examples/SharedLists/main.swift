// A shopping list its owner shares from the app: a writer adds to it, a reader sees it and
// cannot change it. Compiled by `swift build`; the sync guide quotes it.
import Foundation
import OpenSwiftData
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol

@Model
final class ListItem {
    var text: String
    var list: String?  // the list's scope, "list:<id>" (nil: the user's private scope)

    init(text: String, list: String?) {
        self.text = text
        self.list = list
    }
}

/// The owner shares the list with a writer and a reader, and later takes the reader's access back.
func shareGroceries(_ engine: SyncEngine) async throws {
    let groceries: ScopeID = "list:groceries"
    try await engine.share(groceries, with: "bob", role: .writer)
    let members = try await engine.share(groceries, with: "carol", role: .reader)
    print("owner \(members.owner), writers \(members.writers), readers \(members.readers)")
    do {
        try await engine.share("list:bobs-errands", with: "carol", role: .reader)  // bob's list, not ours
    } catch SyncEngineError.notScopeOwner(let scope) {
        print("only the owner of \(scope) shares it")
    }
    try await engine.unshare(groceries, from: "carol")
}

/// What a member's app watches: lists it may read coming and going, and its refused saves.
func watchSharing(_ engine: SyncEngine) async {
    for await event in engine.events {
        switch event {
        case .grantsChanged(let change):
            print("lists added: \(change.added), removed: \(change.removed)")
        case .rejected(let rejection) where [.readOnly, .scopeNotGranted].contains(rejection.reason):
            print("not writable here, rolled back: \(rejection.message ?? "")")
        default:
            break
        }
    }
}

var configuration = SyncConfiguration()
configuration.sync(ListItem.self, scope: \ListItem.list)
let store = FileManager.default.temporaryDirectory.appendingPathComponent("lists-\(UUID().uuidString).sqlite")
let container = try ModelContainer(for: ListItem.self, configurations: ModelConfiguration(url: store))
guard let server = URL(string: "http://127.0.0.1:8080") else { exit(1) }  // the app's osd-server
let engine = try SyncEngine(container: container, server: server, user: "alice", configuration: configuration) { "token" }
let context = ModelContext(container)
context.insert(ListItem(text: "Milk", list: "list:groceries"))
try context.save()
print("members:", (try? await engine.members(of: "list:groceries")).map { "\($0.writers) \($0.readers)" } ?? "not synced yet")
