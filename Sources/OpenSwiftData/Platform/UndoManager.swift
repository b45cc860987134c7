#if !canImport(ObjectiveC)
import Foundation

/// A record of undoable operations, for platforms whose Foundation has none (Linux).
///
/// The subset of Foundation's `UndoManager` that model code uses, with the same names:
/// registration with a target and a handler, nested groups, undo and redo stacks, a limit on
/// the levels kept, action names, and disabling registration. Without a run loop there are no
/// per-event groups: a registration made outside an explicit group is an undo step of its own.
/// ``ModelContext`` registers one step per save (see ``ModelContext/undoManager``).
///
/// ```swift
/// let undoManager = UndoManager()
/// context.undoManager = undoManager
/// trip.name = "Porto"
/// try context.save()
/// undoManager.undo()       // trip.name is back to what it was, as an unsaved change
/// try context.save()
/// ```
open class UndoManager {
    /// One registered operation, or a closed nested group.
    private enum Action {
        case call(() -> Void)
        case group([Action])
    }

    private struct Step {
        var actions: [Action]
        var name: String
    }

    private var undoStack: [Step] = []
    private var redoStack: [Step] = []
    /// The explicit groups open, innermost last.
    private var openGroups: [[Action]] = []
    private var openGroupName = ""
    private var registrationDisabled = 0

    /// Whether ``undo()`` is running.
    open private(set) var isUndoing = false
    /// Whether ``redo()`` is running.
    open private(set) var isRedoing = false
    /// Kept for source compatibility; there are no run-loop events to group by on this platform.
    open var groupsByEvent = true
    /// The most undo steps kept (0: no limit); older ones are dropped.
    open var levelsOfUndo = 0 {
        didSet { trim() }
    }

    /// Creates an undo manager with empty stacks.
    public init() {}

    /// How many groups are open.
    open var groupingLevel: Int { openGroups.count }

    /// Whether there is a step to undo.
    open var canUndo: Bool { !undoStack.isEmpty || openGroups.first.map { !$0.isEmpty } == true }

    /// Whether there is a step to redo.
    open var canRedo: Bool { !redoStack.isEmpty }

    /// Whether registrations are recorded.
    open var isUndoRegistrationEnabled: Bool { registrationDisabled == 0 }

    /// The name of the step ``undo()`` would undo.
    open var undoActionName: String { undoStack.last?.name ?? "" }

    /// The name of the step ``redo()`` would redo.
    open var redoActionName: String { redoStack.last?.name ?? "" }

    /// Opens a group: everything registered until the matching ``endUndoGrouping()`` is undone
    /// as one step.
    open func beginUndoGrouping() {
        openGroups.append([])
    }

    /// Closes the innermost open group.
    open func endUndoGrouping() {
        guard let group = openGroups.popLast() else { return }
        if openGroups.isEmpty {
            push(Step(actions: group, name: openGroupName))
            openGroupName = ""
        } else if !group.isEmpty {
            openGroups[openGroups.count - 1].append(.group(group))
        }
    }

    /// Records how to undo an operation on `target`: `handler` is called with it by ``undo()``
    /// (or ``redo()``, for a registration made while undoing). The target is not retained.
    open func registerUndo<Target: AnyObject>(withTarget target: Target, handler: @escaping (Target) -> Void) {
        guard isUndoRegistrationEnabled else { return }
        // The target is not retained (as Foundation's undo manager does not retain it): an
        // action whose target is gone does nothing.
        let action = Action.call { [weak target] in
            if let target { handler(target) }
        }
        if openGroups.isEmpty {
            push(Step(actions: [action], name: ""))
        } else {
            openGroups[openGroups.count - 1].append(action)
        }
    }

    /// Names the step being recorded (or, outside a group, the last one).
    open func setActionName(_ actionName: String) {
        if !openGroups.isEmpty {
            openGroupName = actionName
        } else if isUndoing, !redoStack.isEmpty {
            redoStack[redoStack.count - 1].name = actionName
        } else if !undoStack.isEmpty {
            undoStack[undoStack.count - 1].name = actionName
        }
    }

    /// Closes the open top-level group, then undoes the last step; what the step registers
    /// while undoing becomes the step ``redo()`` replays. Does nothing inside a nested group.
    open func undo() {
        if openGroups.count == 1 { endUndoGrouping() }
        guard openGroups.isEmpty, let step = undoStack.popLast() else { return }
        isUndoing = true
        defer { isUndoing = false }
        replay(step)
    }

    /// Redoes the last undone step.
    open func redo() {
        guard openGroups.isEmpty, let step = redoStack.popLast() else { return }
        isRedoing = true
        defer { isRedoing = false }
        replay(step)
    }

    /// Forgets every step.
    open func removeAllActions() {
        undoStack.removeAll()
        redoStack.removeAll()
        openGroups.removeAll()
        openGroupName = ""
    }

    /// Stops recording registrations until ``enableUndoRegistration()`` (calls nest).
    open func disableUndoRegistration() { registrationDisabled += 1 }

    /// Resumes recording registrations.
    open func enableUndoRegistration() { registrationDisabled = max(0, registrationDisabled - 1) }

    private func replay(_ step: Step) {
        beginUndoGrouping()
        run(step.actions)
        let inverse = openGroups.popLast() ?? []
        let target = Step(actions: inverse, name: step.name)
        guard !inverse.isEmpty else { return }
        if isUndoing {
            redoStack.append(target)
        } else {
            undoStack.append(target)
            trim()
        }
    }

    /// Runs actions last first, as undoing requires.
    private func run(_ actions: [Action]) {
        for action in actions.reversed() {
            switch action {
            case let .call(body): body()
            case let .group(nested): run(nested)
            }
        }
    }

    private func push(_ step: Step) {
        guard !step.actions.isEmpty else { return }
        if isUndoing {
            redoStack.append(step)
            return
        }
        undoStack.append(step)
        if !isRedoing { redoStack.removeAll() }
        trim()
    }

    private func trim() {
        if levelsOfUndo > 0, undoStack.count > levelsOfUndo {
            undoStack.removeFirst(undoStack.count - levelsOfUndo)
        }
    }
}
#endif
