import Foundation
import Observation
import OpenSwiftData
import OpenSwiftDataSyncProtocol
import Testing

/// A record whose `count` and `score` merge as counters.
@Model
final class CaptureTally {
    @Attribute(.unique) var key: String
    var count: Int = 0
    var score: Double = 0
    var note: String = ""

    init(key: String) {
        self.key = key
    }
}

private func tallyContainer(at url: URL, declaring: Bool = true) throws -> ModelContainer {
    let container = try ModelContainer(for: CaptureTally.self, configurations: ModelConfiguration(url: url))
    if declaring {
        var configuration = SyncCaptureConfiguration()
        configuration.sync(CaptureTally.self)
        configuration.merge(entity: "CaptureTally", property: "count", kind: .counter)
        configuration.merge(entity: "CaptureTally", property: "score", kind: .counter)
        try container.enableSyncCapture(configuration)
    }
    return container
}

/// The last log entry's only change.
private func lastChange(_ container: ModelContainer) throws -> SyncChange {
    try #require(try container.syncLogEntries().last?.changes.first)
}

@Suite("Sync capture: counters")
struct MergeCaptureTests {
    @Test("a counter's save logs its difference, not its value; setting it outright logs the difference too")
    func savesLogDifferences() throws {
        let container = try tallyContainer(at: syncStoreURL())
        let context = ModelContext(container)
        let tally = CaptureTally(key: "t")
        tally.count = 4
        context.insert(tally)
        try context.save()
        // An insert carries the value: its contribution from nothing.
        #expect(try lastChange(container).value(of: "count")?.stored == .integer(4))
        tally.count += 3
        tally.score = 0.5
        tally.note = "x"
        try context.save()
        var change = try lastChange(container)
        #expect(change.value(of: "count") == nil)
        #expect(change.value(of: "note")?.stored == .text("x"))
        #expect(
            Set(change.counterDeltas.map { "\($0.name)=\($0.value.stored)" }) == [
                "count=\(SyncStoredValue.integer(3))", "score=\(SyncStoredValue.real(0.5))",
            ])
        tally.count = 0
        try context.save()
        change = try lastChange(container)
        #expect(change.counterDeltas.map(\.value.stored) == [.integer(-7)])
        // A save that leaves the counter where it was logs no contribution.
        tally.count = 0
        tally.note = "y"
        try context.save()
        #expect(try lastChange(container).counterDeltas.isEmpty)
    }

    @Test("a context that read an older value adds its difference to the row; its model and its observers show the merged value")
    func secondContextAddsItsDifference() throws {
        let container = try tallyContainer(at: syncStoreURL())
        let first = ModelContext(container)
        first.insert(CaptureTally(key: "t"))
        try first.save()
        let second = ModelContext(container)
        let stale = try #require(try second.fetch(FetchDescriptor<CaptureTally>()).first)
        _ = stale.count
        let mine = try #require(try first.fetch(FetchDescriptor<CaptureTally>()).first)
        mine.count += 5
        try first.save()
        stale.count += 1
        let fired = LockedFlag()
        withObservationTracking {
            _ = stale.count
        } onChange: {
            fired.set()
        }
        try second.save()
        #expect(stale.count == 6)
        #expect(fired.value, "observers see the merged value")
        #expect(!second.hasChanges)
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureTally>()).first?.count == 6)
        #expect(try lastChange(container).counterDeltas.map(\.value.stored) == [.integer(1)])
    }

    @Test(
        "an inserted model that takes over an existing row (an upsert) adds its counter, as the server adds an insert's value to an existing record")
    func upsertAddsItsValue() throws {
        let container = try tallyContainer(at: syncStoreURL())
        let context = ModelContext(container)
        let tally = CaptureTally(key: "t")
        tally.count = 42
        context.insert(tally)
        try context.save()
        // A launch seeds the entry again, with the counter at zero: it takes nothing away.
        let other = ModelContext(container)
        let seeded = CaptureTally(key: "t")
        seeded.note = "seeded"
        other.insert(seeded)
        try other.save()
        var change = try lastChange(container)
        #expect(change.kind == .update)
        #expect(change.value(of: "count") == nil)
        #expect(change.value(of: "note")?.stored == .text("seeded"))
        #expect(change.counterDeltas.isEmpty)
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureTally>()).map(\.count) == [42])
        // An upsert with a value contributes that value, and the model shows the sum.
        let third = ModelContext(container)
        let again = CaptureTally(key: "t")
        again.count = 2
        third.insert(again)
        try third.save()
        change = try lastChange(container)
        #expect(change.counterDeltas.map(\.value.stored) == [.integer(2)])
        #expect(again.count == 44)
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureTally>()).map(\.count) == [44])
    }

    @Test("undoing a counter's save is a save of its own difference: the count goes back, and others' contributions stay")
    func undoIsADifference() throws {
        let container = try tallyContainer(at: syncStoreURL())
        let context = ModelContext(container)
        let undoManager = UndoManager()
        context.undoManager = undoManager
        let tally = CaptureTally(key: "t")
        context.insert(tally)
        try context.save()
        tally.count += 5
        try context.save()
        // Another context adds 2 meanwhile.
        let other = ModelContext(container)
        let elsewhere = try #require(try other.fetch(FetchDescriptor<CaptureTally>()).first)
        elsewhere.count += 2
        try other.save()
        undoManager.undo()
        #expect(tally.count == 0)
        try context.save()
        #expect(try lastChange(container).counterDeltas.map(\.value.stored) == [.integer(-5)])
        #expect(tally.count == 2)
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureTally>()).first?.count == 2)
    }

    @Test("undoing a counter's save takes back its difference when another context added to the row before that save")
    func undoAfterAnotherContextAdded() throws {
        let container = try tallyContainer(at: syncStoreURL())
        let context = ModelContext(container)
        let undoManager = UndoManager()
        context.undoManager = undoManager
        let tally = CaptureTally(key: "t")
        tally.count = 5
        context.insert(tally)
        try context.save()
        // Another context adds 2 (the row holds 7) while this one still shows 5.
        let other = ModelContext(container)
        let elsewhere = try #require(try other.fetch(FetchDescriptor<CaptureTally>()).first)
        elsewhere.count += 2
        try other.save()
        tally.count += 1
        try context.save()
        #expect(tally.count == 8)
        undoManager.undo()
        #expect(tally.count == 7)
        try context.save()
        #expect(try lastChange(container).counterDeltas.map(\.value.stored) == [.integer(-1)])
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureTally>()).first?.count == 7)
        undoManager.redo()
        #expect(tally.count == 8)
        try context.save()
        #expect(try lastChange(container).counterDeltas.map(\.value.stored) == [.integer(1)])
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureTally>()).first?.count == 8)
    }

    @Test("undoing a counter's save takes back its difference from a model refetched after others added to it")
    func undoOnARefetchedModel() throws {
        let container = try tallyContainer(at: syncStoreURL())
        let seed = ModelContext(container)
        seed.insert(CaptureTally(key: "t"))
        try seed.save()
        let context = ModelContext(container)
        let undoManager = UndoManager()
        context.undoManager = undoManager
        let tally = try #require(try context.fetch(FetchDescriptor<CaptureTally>()).first)
        tally.count += 1
        try context.save()
        #expect(tally.count == 1)
        // Another context adds 2; this one reads the row again and shows 3.
        let other = ModelContext(container)
        let elsewhere = try #require(try other.fetch(FetchDescriptor<CaptureTally>()).first)
        elsewhere.count += 2
        try other.save()
        _ = try context.fetch(FetchDescriptor<CaptureTally>())
        try #require(tally.count == 3)
        undoManager.undo()
        #expect(tally.count == 2)
        try context.save()
        #expect(try lastChange(container).counterDeltas.map(\.value.stored) == [.integer(-1)])
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureTally>()).first?.count == 2)
    }

    @Test("the store records merged fields: reopened, it logs differences from its first save, before any configuration")
    func reopenedStoreKeepsMerging() throws {
        let url = syncStoreURL()
        do {
            let container = try tallyContainer(at: url)
            let context = ModelContext(container)
            context.insert(CaptureTally(key: "t"))
            try context.save()
        }
        let reopened = try tallyContainer(at: url, declaring: false)
        let context = ModelContext(reopened)
        let tally = try #require(try context.fetch(FetchDescriptor<CaptureTally>()).first)
        tally.count += 2
        try context.save()
        let change = try lastChange(reopened)
        #expect(change.counterDeltas.map(\.value.stored) == [.integer(2)])
        #expect(change.value(of: "count") == nil)
    }

    @Test("a save that would take an integer counter out of range fails with a typed error naming the property, and changes nothing")
    func overflowFailsTheSave() throws {
        let container = try tallyContainer(at: syncStoreURL())
        let first = ModelContext(container)
        first.insert(CaptureTally(key: "t"))
        try first.save()
        let second = ModelContext(container)
        let stale = try #require(try second.fetch(FetchDescriptor<CaptureTally>()).first)
        _ = stale.count
        let mine = try #require(try first.fetch(FetchDescriptor<CaptureTally>()).first)
        mine.count = .max
        try first.save()
        stale.count = 1
        #expect(throws: SyncCaptureError.counterOverflow(entity: "CaptureTally", property: "count")) { try second.save() }
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureTally>()).first?.count == .max)
    }

    @Test("a merge kind that does not fit the property, or on an optional, is refused when capture is enabled, naming the property")
    func declarationsAreChecked() throws {
        let container = try ModelContainer(for: CaptureTally.self, configurations: ModelConfiguration(url: syncStoreURL()))
        var configuration = SyncCaptureConfiguration()
        configuration.sync(CaptureTally.self)
        configuration.merge(entity: "CaptureTally", property: "note", kind: .counter)
        do {
            try container.enableSyncCapture(configuration)
            Issue.record("a counter on a String was accepted")
        } catch let SyncCaptureError.mergeKindMismatch(entity, property, kind, _) {
            #expect(entity == "CaptureTally" && property == "note" && kind == .counter)
        }
        #expect(!container.isSyncCaptureEnabled)
    }
}

/// A record whose `members` (an array) and `labels` (a `Set`) merge as sets.
@Model
final class CaptureRoster {
    @Attribute(.unique) var key: String
    var members: [String] = []
    var labels: Set<String> = []

    init(key: String) {
        self.key = key
    }
}

private func rosterContainer(at url: URL) throws -> ModelContainer {
    let container = try ModelContainer(for: CaptureRoster.self, configurations: ModelConfiguration(url: url))
    var configuration = SyncCaptureConfiguration()
    configuration.sync(CaptureRoster.self)
    configuration.merge(entity: "CaptureRoster", property: "members", kind: .set)
    configuration.merge(entity: "CaptureRoster", property: "labels", kind: .set)
    try container.enableSyncCapture(configuration)
    return container
}

@Suite("Sync capture: sets")
struct SetCaptureTests {
    /// A logged set contribution, decoded.
    private func setChanges(_ change: SyncChange) throws -> [String: SetChange] {
        var changes: [String: SetChange] = [:]
        for delta in change.counterDeltas {
            guard case let .text(text) = delta.value.stored else { continue }
            changes[delta.name] = try JSONDecoder().decode(SetChange.self, from: Data(text.utf8))
        }
        return changes
    }

    @Test("a set's save logs the elements it added and removed, not its value; a reorder or a repeat logs nothing")
    func savesLogAddsAndRemoves() throws {
        let container = try rosterContainer(at: syncStoreURL())
        let context = ModelContext(container)
        let roster = CaptureRoster(key: "r")
        roster.members = ["ann", "bob"]
        context.insert(roster)
        try context.save()
        // An insert carries the value: its elements are its adds.
        #expect(try lastChange(container).value(of: "members")?.stored == .text("[\"ann\",\"bob\"]"))
        roster.members = ["bob", "carol", "carol"]
        roster.labels.insert("vip")
        try context.save()
        var change = try lastChange(container)
        #expect(change.value(of: "members") == nil)
        #expect(try setChanges(change)["members"] == SetChange(add: ["\"carol\""], remove: ["\"ann\""]))
        #expect(try setChanges(change)["labels"] == SetChange(add: ["\"vip\""]))
        // The model shows the merged value: repeats collapse.
        #expect(roster.members == ["bob", "carol"])
        roster.members = ["carol", "bob"]
        try context.save()
        change = try lastChange(container)
        #expect(try setChanges(change).isEmpty)
    }

    @Test("an inserted model that takes over an existing row by its unique value adds its elements to the row's")
    func upsertAddsItsElements() throws {
        let container = try rosterContainer(at: syncStoreURL())
        let context = ModelContext(container)
        let roster = CaptureRoster(key: "r")
        roster.members = ["ann", "bob"]
        context.insert(roster)
        try context.save()
        let other = ModelContext(container)
        let again = CaptureRoster(key: "r")
        again.members = ["carol", "ann"]
        other.insert(again)
        try other.save()
        #expect(again.members == ["ann", "bob", "carol"])
        let change = try lastChange(container)
        #expect(try setChanges(change)["members"] == SetChange(add: ["\"carol\"", "\"ann\""]))
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureRoster>()).first?.members == ["ann", "bob", "carol"])
    }

    @Test("two contexts merge: the second save's adds and removes apply to what the first saved")
    func twoContextsMerge() throws {
        let container = try rosterContainer(at: syncStoreURL())
        let context = ModelContext(container)
        let roster = CaptureRoster(key: "r")
        roster.members = ["ann"]
        context.insert(roster)
        try context.save()
        let other = ModelContext(container)
        let seenByOther = try #require(try other.fetch(FetchDescriptor<CaptureRoster>()).first)
        #expect(seenByOther.members == ["ann"])
        roster.members.append("bob")
        try context.save()
        seenByOther.members = ["carol"]
        try other.save()
        #expect(seenByOther.members == ["bob", "carol"])
        #expect(try ModelContext(container).fetch(FetchDescriptor<CaptureRoster>()).first?.members == ["bob", "carol"])
    }
}
