import Foundation
import OpenSwiftData

// Models of the sync engine tests.

@Model
final class Folder {
    var name: String
    @Relationship(deleteRule: .cascade, inverse: \Note.folder) var notes: [Note] = []

    init(name: String) { self.name = name }
}

@Model
final class Note {
    var title: String
    var body: String = ""
    var pinned: Bool = false
    var folder: Folder?
    @Relationship(inverse: \Tag.notes) var tags: [Tag] = []
    /// The scope the note syncs in (nil: the user's private scope).
    var space: String?

    init(title: String, body: String = "", folder: Folder? = nil) {
        self.title = title
        self.body = body
        self.folder = folder
    }
}

@Model
final class Tag {
    var name: String
    var notes: [Note] = []

    init(name: String) { self.name = name }
}

/// Synced under `rejectStale`.
@Model
final class Reading {
    @Attribute(.unique) var key: String
    var value: Double

    init(key: String, value: Double) {
        self.key = key
        self.value = value
    }
}

/// Never configured to sync.
@Model
final class Unsynced {
    var text: String
    init(text: String) { self.text = text }
}

let engineTestTypes: [any PersistentModel.Type] = [Folder.self, Note.self, Tag.self, Reading.self]
