import Foundation
import Observation
import OpenSwiftData
import Testing

@Suite("Undo")
struct UndoTests {
    private func makeContext() throws -> (ModelContext, UndoManager) {
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let undoManager = UndoManager()
        context.undoManager = undoManager
        return (context, undoManager)
    }

    private func titles(_ context: ModelContainer) throws -> [String] {
        try ModelContext(context).fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title)
    }

    @Test("undoing a save of a partially fetched model puts back a property it had not read")
    func undoPartiallyFetched() throws {
        let (context, undoManager) = try makeContext()
        context.insert(Note(title: "draft", count: 1, status: .pending))
        try context.save()
        var descriptor = FetchDescriptor<Note>()
        descriptor.propertiesToFetch = [\.title]
        let fetching = ModelContext(context.container)
        fetching.undoManager = undoManager
        let note = try #require(try fetching.fetch(descriptor).first)
        note.count = 5  // never read before this write
        try fetching.save()
        undoManager.undo()
        #expect(note.count == 1)
        try fetching.save()
        #expect(try ModelContext(context.container).fetch(FetchDescriptor<Note>()).map(\.count) == [1])
    }

    @Test("undoing a save puts the previous values back as unsaved changes, tells observers, and redo replays it")
    func undoRedoValues() throws {
        let (context, undoManager) = try makeContext()
        let note = Note(title: "draft", count: 1, status: .pending)
        context.insert(note)
        try context.save()
        note.title = "final"
        note.count = 2
        try context.save()

        let observed = LockedFlag()
        withObservationTracking {
            _ = note.title
        } onChange: {
            observed.set()
        }
        #expect(undoManager.canUndo)
        undoManager.undo()
        #expect(note.title == "draft" && note.count == 1)
        #expect(observed.value)
        #expect(context.hasChanges && context.changedModelsArray.count == 1)
        try context.save()
        #expect(try titles(context.container) == ["draft"])

        #expect(undoManager.canRedo)
        undoManager.redo()
        #expect(note.title == "final" && note.count == 2)
        try context.save()
        #expect(try titles(context.container) == ["final"])
    }

    @Test("undoing a save deletes what it inserted and inserts again what it deleted")
    func undoInsertAndDelete() throws {
        let (context, undoManager) = try makeContext()
        let kept = Note(title: "kept")
        context.insert(kept)
        try context.save()
        context.insert(Note(title: "new"))
        context.delete(kept)
        try context.save()
        #expect(try titles(context.container) == ["new"])

        undoManager.undo()
        try context.save()
        #expect(try titles(context.container) == ["kept"])
        #expect(kept.title == "kept" && !kept.isDeleted)

        undoManager.redo()
        try context.save()
        #expect(try titles(context.container) == ["new"])
    }

    @Test("an edit after an undo is a step of its own: it can be undone, and it clears the redo stack")
    func editAfterUndo() throws {
        let (context, undoManager) = try makeContext()
        let note = Note(title: "a", count: 0, status: .pending)
        context.insert(note)
        try context.save()
        note.title = "b"
        try context.save()
        undoManager.undo()
        #expect(note.title == "a")
        note.count = 5
        try context.save()
        #expect(!undoManager.canRedo, "the new edit cleared the redo stack")
        undoManager.undo()
        #expect(note.count == 0 && note.title == "b", "undoing the new step undid the edit (and the undo saved with it)")
        context.rollback()
        #expect(note.count == 5 && note.title == "a")
    }

    @Test("an explicit group spanning two saves is undone as one step")
    func groups() throws {
        let (context, undoManager) = try makeContext()
        let note = Note(title: "a")
        context.insert(note)
        try context.save()

        undoManager.beginUndoGrouping()
        note.title = "b"
        try context.save()
        note.title = "c"
        try context.save()
        undoManager.endUndoGrouping()
        undoManager.setActionName("Rename twice")
        #expect(undoManager.undoActionName == "Rename twice")

        undoManager.undo()
        #expect(note.title == "a")
        undoManager.redo()
        #expect(note.title == "c")
    }

    @Test("the undo manager keeps levelsOfUndo steps, drops redo on a new registration, and can be paused")
    func undoManagerBookkeeping() {
        final class Counter { var value = 0 }
        let counter = Counter()
        let undoManager = UndoManager()
        undoManager.levelsOfUndo = 2
        func increment() {
            counter.value += 1
            undoManager.registerUndo(withTarget: counter) { target in
                target.value -= 1
                undoManager.registerUndo(withTarget: target) { $0.value += 1 }
            }
        }
        increment()
        increment()
        increment()
        undoManager.undo()
        undoManager.undo()
        undoManager.undo()
        #expect(counter.value == 1, "only two levels were kept")
        #expect(!undoManager.canUndo && undoManager.canRedo)
        undoManager.redo()
        #expect(counter.value == 2)
        increment()
        #expect(!undoManager.canRedo, "a new registration clears the redo stack")
        undoManager.disableUndoRegistration()
        increment()
        undoManager.enableUndoRegistration()
        undoManager.undo()
        #expect(counter.value == 3, "the unregistered increment stays; the last registered one is undone")
    }
}
