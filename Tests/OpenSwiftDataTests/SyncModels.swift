import Foundation
import OpenSwiftData

// Models of the sync capture tests (entity names are unique in the test module).

@Model
final class SyncProject {
    var title: String
    var budget: Decimal = 0
    @Relationship(deleteRule: .cascade, inverse: \SyncTask.project) var tasks: [SyncTask] = []

    init(title: String) { self.title = title }
}

@Model
final class SyncTask {
    var title: String
    var done: Bool = false
    var due: Date?
    var estimate: Double = 0
    var priority: Int = 0
    var payload: Data?
    var token: UUID?
    var link: URL?
    var state: SyncTaskState = .open
    var notes: [String] = []
    var project: SyncProject?
    var assignee: SyncUser?
    @Relationship(inverse: \SyncLabel.tasks) var labels: [SyncLabel] = []

    init(title: String, project: SyncProject? = nil) {
        self.title = title
        self.project = project
    }
}

enum SyncTaskState: String, Codable {
    case open, closed
}

@Model
final class SyncUser {
    @Attribute(.unique) var handle: String
    var name: String

    init(handle: String, name: String) {
        self.handle = handle
        self.name = name
    }
}

@Model
final class SyncLabel {
    var name: String
    var tasks: [SyncTask] = []

    init(name: String) { self.name = name }
}

/// Attributes without defaults, one of a type with no empty value (an enum): what a remote
/// insert must fill without reading them first.
@Model
final class SyncTicket {
    var state: SyncTaskState
    var summary: String
    init(state: SyncTaskState, summary: String) {
        self.state = state
        self.summary = summary
    }
}

/// Not synced by the tests: references to it are not captured.
@Model
final class SyncLocalNote {
    var text: String
    init(text: String) { self.text = text }
}

@Model
final class SyncCompoundKey {
    #Unique<SyncCompoundKey>([\.a, \.b])
    var a: String
    var b: String
    init(a: String, b: String) {
        self.a = a
        self.b = b
    }
}

@Model
final class SyncTwoKeys {
    @Attribute(.unique) var a: String
    @Attribute(.unique) var b: String
    init(a: String, b: String) {
        self.a = a
        self.b = b
    }
}

let syncTestTypes: [any PersistentModel.Type] = [SyncProject.self, SyncTask.self, SyncUser.self, SyncLabel.self, SyncLocalNote.self]

/// A temporary store file path.
func syncStoreURL(_ name: String = #function) -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-sync-\(UUID().uuidString)")
    return directory.appendingPathComponent("store.sqlite")
}
