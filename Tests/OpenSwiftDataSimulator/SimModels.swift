import Foundation
import OpenSwiftData

// The simulator's models. Every one has a unique `key` (its sync record id), chosen by the
// simulator from its seeded counters, so that record ids, and everything ordered by them, are
// the same in every run of a seed.

/// A list of items; deleting it cascades to its items (a server-side and local cascade).
@Model
final class SimList {
    @Attribute(.unique) var key: String
    var name: String
    /// The scope (nil: the user's private scope).
    var space: String?
    @Relationship(deleteRule: .cascade, inverse: \SimItem.list) var items: [SimItem] = []

    init(key: String, name: String, space: String?) {
        self.key = key
        self.name = name
        self.space = space
    }
}

/// The workload's main record: fields several clients update at once, a to-one list and
/// many-to-many tags.
@Model
final class SimItem {
    @Attribute(.unique) var key: String
    var title: String
    var count: Int = 0
    var done: Bool = false
    var space: String?
    var list: SimList?
    @Relationship(inverse: \SimTag.items) var tags: [SimTag] = []

    init(key: String, title: String, space: String?) {
        self.key = key
        self.title = title
        self.space = space
    }
}

/// A tag (many-to-many with items).
@Model
final class SimTag {
    @Attribute(.unique) var key: String
    var label: String
    var space: String?
    var items: [SimItem] = []

    init(key: String, label: String, space: String?) {
        self.key = key
        self.label = label
        self.space = space
    }
}

/// Synced under `rejectStale`: concurrent updates from several clients are rejected.
@Model
final class SimCounter {
    @Attribute(.unique) var key: String
    var value: Int
    var space: String?

    init(key: String, value: Int, space: String?) {
        self.key = key
        self.value = value
        self.space = space
    }
}

/// A counter that merges (`hits` is declared `.counter`): clients add to it, or set it outright,
/// concurrently; its value must be the sum of the contributions of the saves the server applied.
@Model
final class SimTally {
    @Attribute(.unique) var key: String
    var hits: Int = 0
    var space: String?

    init(key: String, space: String?) {
        self.key = key
        self.space = space
    }
}

/// A set that merges (`members` is declared `.set`): clients add and remove members of a small
/// pool concurrently; every replica must show what an observed-remove set fed the applied
/// changes in server order holds, in the same order.
@Model
final class SimRoster {
    @Attribute(.unique) var key: String
    var members: [String] = []
    var space: String?

    init(key: String, space: String?) {
        self.key = key
        self.space = space
    }
}

/// A text that merges (`body` is declared `.text`): clients insert and delete characters
/// concurrently. Every character the workload types is one no other save typed, so each
/// save's edit is exactly the characters it added or removed, and the check can say of every
/// character whether an applied save typed it and whether one deleted it.
@Model
final class SimNote {
    @Attribute(.unique) var key: String
    var body: String = ""
    var space: String?

    init(key: String, body: String, space: String?) {
        self.key = key
        self.body = body
        self.space = space
    }
}

/// An attachment: `image` is `.externalStorage` and always over 128 KiB, so it syncs as a blob
/// whose bytes travel on their own, uploaded and downloaded after the record.
@Model
final class SimPhoto {
    @Attribute(.unique) var key: String
    @Attribute(.externalStorage) var image: Data?
    var space: String?

    init(key: String, image: Data?, space: String?) {
        self.key = key
        self.image = image
        self.space = space
    }
}

/// The ledger: every save the workload makes also inserts one mark, so each committed save
/// is one record whose fate (on the server, or reported rejected) the checks can look up.
@Model
final class SimMark {
    @Attribute(.unique) var key: String
    var client: String

    init(key: String, client: String) {
        self.key = key
        self.client = client
    }
}

let simModelTypes: [any PersistentModel.Type] = [
    SimList.self, SimItem.self, SimTag.self, SimCounter.self, SimTally.self, SimRoster.self, SimNote.self, SimPhoto.self, SimMark.self,
]
