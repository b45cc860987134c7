import Foundation
import OpenSwiftData
import OpenSwiftDataTestSupport
import Testing

/// A box with two collections of items that both name `Item.box` as their inverse, as an Apple
/// sample declares them: each keeps its own members.
@Model
final class Box {
    var label: String
    @Relationship(deleteRule: .cascade, inverse: \Item.box) var front: [Item] = []
    @Relationship(inverse: \Item.box) var back: [Item] = []

    init(label: String) { self.label = label }
}

@Model
final class Item {
    var name: String
    var box: Box?

    init(name: String) { self.name = name }
}

/// The same shape with one delete rule for both collections, which sync accepts.
@Model
final class Drawer {
    var label: String
    @Relationship(inverse: \Sock.drawer) var left: [Sock] = []
    @Relationship(inverse: \Sock.drawer) var right: [Sock] = []

    init(label: String) { self.label = label }
}

@Model
final class Sock {
    var colour: String
    var drawer: Drawer?

    init(colour: String) { self.colour = colour }
}

/// A to-one that names one of the collections sharing it: setting it from the spoon's side puts
/// the spoon in that collection.
@Model
final class Tray {
    @Relationship(inverse: \Spoon.tray) var clean: [Spoon] = []
    var dirty: [Spoon] = []
    init() {}
}

@Model
final class Spoon {
    @Relationship(inverse: \Tray.dirty) var tray: Tray?
    init() {}
}

/// Two collections sharing a to-many inverse: a board added from the pin's side could be in
/// either, so the model is refused.
@Model
final class Board {
    @Relationship(inverse: \Pin.boards) var pinned: [Pin] = []
    @Relationship(inverse: \Pin.boards) var archived: [Pin] = []
    init() {}
}

@Model
final class Pin {
    var boards: [Board] = []
    init() {}
}

/// A to-one and a to-many sharing one inverse: refused too.
@Model
final class Stage {
    @Relationship(inverse: \Actor.stage) var lead: Actor?
    @Relationship(inverse: \Actor.stage) var chorus: [Actor] = []
    init() {}
}

@Model
final class Actor {
    var stage: Stage?
    init() {}
}

/// A box as an earlier version of the app declared it: one collection, read through `Item.box`.
enum BoxesV1 {
    @Model final class Box {
        var label: String
        @Relationship(inverse: \Item.box) var front: [Item] = []
        init(label: String) { self.label = label }
    }

    @Model final class Item {
        var name: String
        var box: Box?
        init(name: String) { self.name = name }
    }
}

/// A crate of goods, some of them a subclass, before and after a second collection shares the
/// inverse `Good.crate`.
enum CratesV1 {
    @Model final class Crate {
        var label: String
        @Relationship(inverse: \Good.crate) var inside: [Good] = []
        init(label: String) { self.label = label }
    }

    @Model class Good {
        var name: String
        var crate: Crate?
        init(name: String) { self.name = name }
    }

    @Model final class Fragile: Good {
        var padding: Int
        init(name: String, padding: Int) {
            self.padding = padding
            super.init(name: name)
        }
    }
}

enum CratesV2 {
    @Model final class Crate {
        var label: String
        @Relationship(inverse: \Good.crate) var inside: [Good] = []
        @Relationship(inverse: \Good.crate) var onTop: [Good] = []
        init(label: String) { self.label = label }
    }

    @Model class Good {
        var name: String
        var crate: Crate?
        init(name: String) { self.name = name }
    }

    @Model final class Fragile: Good {
        var padding: Int
        init(name: String, padding: Int) {
            self.padding = padding
            super.init(name: name)
        }
    }
}

@Suite("Collections sharing one inverse keep their own members")
struct SharedInverseTests {
    private func names(_ items: [Item]) -> [String] { items.map(\.name).sorted() }

    /// A box holding f1…f3 in front and b1…b3 at the back.
    private func filledBox(in context: ModelContext) -> Box {
        let box = Box(label: "shoes")
        context.insert(box)
        box.front = ["f1", "f2", "f3"].map(Item.init(name:))
        box.back = ["b1", "b2", "b3"].map(Item.init(name:))
        return box
    }

    @Test("three items in front and three at the back stay apart, in memory, after a save, and in a new container on the same file")
    func membersStayApart() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("boxes.store")
        do {
            let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let box = filledBox(in: context)
            #expect(names(box.front) == ["f1", "f2", "f3"])
            #expect(names(box.back) == ["b1", "b2", "b3"])
            try context.save()
            let reader = ModelContext(container)
            let fetched = try #require(try reader.fetch(FetchDescriptor<Box>()).first)
            #expect(names(fetched.front) == ["f1", "f2", "f3"])
            #expect(names(fetched.back) == ["b1", "b2", "b3"])
            #expect(fetched.front.allSatisfy { $0.box === fetched } && fetched.back.allSatisfy { $0.box === fetched })
        }
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let box = try #require(try context.fetch(FetchDescriptor<Box>()).first)
        #expect(box.front.count == 3)
        #expect(box.back.count == 3)
        #expect(names(box.front) == ["f1", "f2", "f3"])
        #expect(names(box.back) == ["b1", "b2", "b3"])
        let items = try context.fetch(FetchDescriptor<Item>())
        #expect(items.count == 6)
        #expect(items.allSatisfy { $0.box?.label == "shoes" })
        // Prefetching reads the same members.
        var descriptor = FetchDescriptor<Box>()
        descriptor.relationshipKeyPathsForPrefetching = [\.front, \.back]
        let prefetched = try #require(try ModelContext(container).fetch(descriptor).first)
        #expect(names(prefetched.front) == ["f1", "f2", "f3"])
        #expect(names(prefetched.back) == ["b1", "b2", "b3"])
    }

    @Test("moving an item from front to back takes it out of front; its box stays the same")
    func moveBetweenCollections() throws {
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let box = filledBox(in: context)
        try context.save()
        let f1 = try #require(box.front.first { $0.name == "f1" })
        box.back.append(f1)
        #expect(names(box.front) == ["f2", "f3"])
        #expect(names(box.back) == ["b1", "b2", "b3", "f1"])
        #expect(f1.box === box)
        try context.save()
        let fresh = try #require(try ModelContext(container).fetch(FetchDescriptor<Box>()).first)
        #expect(names(fresh.front) == ["f2", "f3"])
        // The history of that save records both collections of the box as changed.
        let history = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        let move = try #require(history.last?.changes.first { $0.changedPersistentIdentifier == box.persistentModelID })
        #expect(Set(move.changedPropertyNames).isSuperset(of: ["front", "back"]))
        #expect(names(fresh.back) == ["b1", "b2", "b3", "f1"])

        // Removing first, then appending, ends the same way.
        let b1 = try #require(box.back.first { $0.name == "b1" })
        box.back.removeAll { $0 === b1 }
        #expect(b1.box == nil)
        box.front.append(b1)
        #expect(b1.box === box)
        #expect(names(box.front) == ["b1", "f2", "f3"])
        #expect(!box.back.contains { $0 === b1 })
    }

    @Test("an item moved to another box leaves its collection; set from the item's side it joins the first collection")
    func moveBetweenBoxes() throws {
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let shoes = filledBox(in: context)
        let hats = Box(label: "hats")
        context.insert(hats)
        try context.save()
        let b2 = try #require(shoes.back.first { $0.name == "b2" })
        hats.back.append(b2)
        #expect(names(shoes.back) == ["b1", "b3"])
        #expect(names(hats.back) == ["b2"])
        #expect(b2.box === hats)

        let f3 = try #require(shoes.front.first { $0.name == "f3" })
        f3.box = hats
        #expect(names(shoes.front) == ["f1", "f2"])
        #expect(names(hats.front) == ["f3"])
        #expect(names(hats.back) == ["b2"])

        let b3 = try #require(shoes.back.first { $0.name == "b3" })
        b3.box = nil
        #expect(names(shoes.back) == ["b1"])
        try context.save()

        let reader = ModelContext(container)
        let boxes = try reader.fetch(FetchDescriptor<Box>(sortBy: [SortDescriptor(\.label)]))
        #expect(boxes.map(\.label) == ["hats", "shoes"])
        #expect(names(boxes[0].front) == ["f3"])
        #expect(names(boxes[0].back) == ["b2"])
        #expect(names(boxes[1].front) == ["f1", "f2"])
        #expect(names(boxes[1].back) == ["b1"])
        let loose = try reader.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.box == nil }))
        #expect(loose.map(\.name) == ["b3"])
    }

    @Test("a to-one that names one of the collections with inverse: puts a model set from its side in that one")
    func namedFirstCollection() throws {
        let container = try ModelContainer(for: Tray.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let tray = Tray()
        context.insert(tray)
        let spoon = Spoon()
        context.insert(spoon)
        spoon.tray = tray
        #expect(tray.dirty.count == 1 && tray.clean.isEmpty)
        tray.clean.append(spoon)
        #expect(tray.dirty.isEmpty && tray.clean.count == 1)
        #expect(spoon.tray === tray)
        try context.save()
        let reader = ModelContext(container)
        let fresh = try #require(try reader.fetch(FetchDescriptor<Tray>()).first)
        #expect(fresh.clean.count == 1 && fresh.dirty.isEmpty)
    }

    @Test("each collection's delete rule applies to its own members, and a deleted item leaves its collection")
    func deleteRules() throws {
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let box = filledBox(in: context)
        try context.save()
        let f2 = try #require(box.front.first { $0.name == "f2" })
        context.delete(f2)
        try context.save()
        #expect(names(box.front) == ["f1", "f3"])
        let reader = ModelContext(container)
        #expect(names(try #require(try reader.fetch(FetchDescriptor<Box>()).first).front) == ["f1", "f3"])

        context.delete(box)  // front cascades, back nullifies
        try context.save()
        let left = try ModelContext(container).fetch(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.name)]))
        #expect(left.map(\.name) == ["b1", "b2", "b3"])
        #expect(left.allSatisfy { $0.box == nil })
    }

    @Test("predicates test each collection on its own")
    func predicates() throws {
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let shoes = filledBox(in: context)
        let hats = Box(label: "hats")
        context.insert(hats)
        hats.back = [Item(name: "f9")]
        try context.save()
        _ = shoes

        let reader = ModelContext(container)
        let threeInFront = try reader.fetch(FetchDescriptor<Box>(predicate: #Predicate { $0.front.count == 3 }))
        #expect(threeInFront.map(\.label) == ["shoes"])
        let emptyFront = try reader.fetch(FetchDescriptor<Box>(predicate: #Predicate { $0.front.isEmpty }))
        #expect(emptyFront.map(\.label) == ["hats"])
        let b1AtBack = try reader.fetch(FetchDescriptor<Box>(predicate: #Predicate { box in box.back.contains { $0.name == "b1" } }))
        #expect(b1AtBack.map(\.label) == ["shoes"])
        let f1AtBack = try reader.fetch(FetchDescriptor<Box>(predicate: #Predicate { box in box.back.contains { $0.name == "f1" } }))
        #expect(f1AtBack.isEmpty)
        let inShoes = try reader.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.box?.label == "shoes" }))
        #expect(inShoes.count == 6)
    }

    @Test("a live query over one collection wakes when another context moves an item into it")
    @MainActor
    func liveQuery() async throws {
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let writer = ModelContext(container)
        let box = filledBox(in: writer)
        try writer.save()
        let context = ModelContext(container)
        var crowded = context.liveResults(FetchDescriptor<Box>(predicate: #Predicate { $0.back.count > 3 })).makeAsyncIterator()
        #expect(try await crowded.next(isolation: #isolation)?.isEmpty == true)
        let f1 = try #require(box.front.first { $0.name == "f1" })
        box.back.append(f1)
        try writer.save()
        let woken = try await crowded.next(isolation: #isolation)
        #expect(woken?.map(\.label) == ["shoes"])
        #expect(woken.map { names($0[0].back) } == ["b1", "b2", "b3", "f1"])
    }

    @Test("undo puts a moved item back in the collection it left")
    func undoMove() throws {
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let undoManager = UndoManager()
        context.undoManager = undoManager
        let box = filledBox(in: context)
        try context.save()
        let f1 = try #require(box.front.first { $0.name == "f1" })
        box.back.append(f1)
        try context.save()
        undoManager.undo()
        #expect(names(box.front) == ["f1", "f2", "f3"])
        #expect(names(box.back) == ["b1", "b2", "b3"])
        #expect(f1.box === box)
        try context.save()
        let fresh = try #require(try ModelContext(container).fetch(FetchDescriptor<Box>()).first)
        #expect(names(fresh.front) == ["f1", "f2", "f3"])
        #expect(names(fresh.back) == ["b1", "b2", "b3"])
    }

    @Test("a shared to-many inverse, or a to-one among the relationships sharing an inverse, is refused when the container is created")
    func ambiguousModelsRefused() throws {
        let toMany = #expect(throws: SwiftDataError.self) {
            _ = try ModelContainer(for: Board.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        }
        #expect(toMany == .loadIssueModelContainer)
        #expect(toMany?.detail.contains("Board.pinned, Board.archived") == true)
        #expect(toMany?.detail.contains("Pin.boards") == true)

        let toOne = #expect(throws: SwiftDataError.self) {
            _ = try ModelContainer(for: Stage.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        }
        #expect(toOne == .loadIssueModelContainer)
        #expect(toOne?.entityName == "Stage")
        #expect(toOne?.propertyName == "lead")
        #expect(toOne?.detail.contains("Actor.stage") == true)
    }

    @Test("a store whose collection was read through the item's box gets its members in that collection when a second one shares the inverse")
    func lightweightMigration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("boxes.store")
        do {
            let container = try ModelContainer(for: BoxesV1.Box.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let box = BoxesV1.Box(label: "shoes")
            context.insert(box)
            box.front = ["f1", "f2"].map(BoxesV1.Item.init(name:))
            context.insert(BoxesV1.Item(name: "loose"))
            try context.save()
        }
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let box = try #require(try context.fetch(FetchDescriptor<Box>()).first)
        #expect(names(box.front) == ["f1", "f2"])
        #expect(box.back.isEmpty)
        let loose = try #require(try context.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.name == "loose" })).first)
        #expect(loose.box == nil)
        box.back.append(loose)
        try context.save()
        let fresh = try #require(try ModelContext(container).fetch(FetchDescriptor<Box>()).first)
        #expect(names(fresh.front) == ["f1", "f2"])
        #expect(names(fresh.back) == ["loose"])
    }

    @Test("the migration fills the first collection with the subclass's models too")
    func lightweightMigrationWithSubclass() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("crates.store")
        do {
            let container = try ModelContainer(for: CratesV1.Crate.self, CratesV1.Fragile.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let crate = CratesV1.Crate(label: "move")
            context.insert(crate)
            crate.inside = [CratesV1.Good(name: "books"), CratesV1.Fragile(name: "vase", padding: 3)]
            try context.save()
        }
        let container = try ModelContainer(for: CratesV2.Crate.self, CratesV2.Fragile.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let crate = try #require(try context.fetch(FetchDescriptor<CratesV2.Crate>()).first)
        #expect(crate.inside.map(\.name).sorted() == ["books", "vase"])
        #expect(crate.onTop.isEmpty)
        let vase = try #require(crate.inside.first { $0 is CratesV2.Fragile })
        crate.onTop.append(vase)
        try context.save()
        let reader = ModelContext(container)
        let fresh = try #require(try reader.fetch(FetchDescriptor<CratesV2.Crate>()).first)
        #expect(fresh.inside.map(\.name) == ["books"])
        #expect(fresh.onTop.map(\.name) == ["vase"])
        #expect(fresh.onTop.first?.crate === fresh)
    }

    @Test("sync captures each collection's members as links, and another store applies them to the same collections")
    func syncCapture() throws {
        func container() throws -> ModelContainer {
            let container = try ModelContainer(for: Drawer.self, configurations: ModelConfiguration(url: syncStoreURL()))
            try container.enableSyncCapture(SyncCaptureConfiguration(Drawer.self, Sock.self))
            return container
        }
        let source = try container()
        let context = ModelContext(source)
        let drawer = Drawer(label: "top")
        context.insert(drawer)
        drawer.left = [Sock(colour: "red"), Sock(colour: "blue")]
        drawer.right = [Sock(colour: "green")]
        try context.save()
        let moved = try #require(drawer.left.first { $0.colour == "blue" })
        drawer.right.append(moved)
        try context.save()

        let copy = try container()
        try copy.applyRemoteChanges(
            try source.syncLogEntries().flatMap { entry in
                entry.changes.map { change in
                    change.kind == .delete
                        ? RemoteRecordChange.delete(change.entity, recordID: change.recordID, serverVersion: entry.sequence)
                        : RemoteRecordChange.upsert(
                            change.entity, recordID: change.recordID, serverVersion: entry.sequence, fields: change.fields, links: change.links)
                }
            })
        let reader = ModelContext(copy)
        let copied = try #require(try reader.fetch(FetchDescriptor<Drawer>()).first)
        #expect(copied.left.map(\.colour) == ["red"])
        #expect(copied.right.map(\.colour).sorted() == ["blue", "green"])
        #expect((copied.left + copied.right).allSatisfy { $0.drawer === copied })
    }

    @Test("sync refuses a shared inverse whose collections have different delete rules, naming them")
    func syncRefusesDifferentDeleteRules() throws {
        let container = try ModelContainer(for: Box.self, configurations: ModelConfiguration(url: syncStoreURL()))
        let error = #expect(throws: SyncCaptureError.self) {
            try container.enableSyncCapture(SyncCaptureConfiguration(Box.self, Item.self))
        }
        #expect(error == .sharedInverseDeleteRules(entity: "Item", property: "box", collections: ["Box.front", "Box.back"]))
    }
}
