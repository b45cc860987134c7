import Foundation
import OpenSwiftDataMerge

/// What undoing (or redoing) one save does to the context's models.
struct UndoStep {
    enum Entry {
        /// Put these values back into the listed properties.
        case values(Registration, indices: [Int], from: ValueBuffer)
        /// Add a save's difference to a merged property (a counter), or take it back: what
        /// other saves added since stays.
        case offset(Registration, keyPath: AnyKeyPath, difference: Any, adding: Bool)
        /// Delete a model the save inserted (or that a redo re-inserted).
        case delete(Registration)
        /// Insert again a model the save deleted.
        case insert(Registration)
    }

    var entries: [Entry]
}

extension UndoStep.Entry {
    /// The model the entry changes.
    var registration: Registration {
        switch self {
        case let .values(registration, _, _), let .offset(registration, _, _, _), let .delete(registration), let .insert(registration):
            return registration
        }
    }
}

extension ModelContext {
    /// Registers, after a save, the step that undoes it: the changed models get their previous
    /// values back, the inserted ones are deleted and the deleted ones inserted again, all as
    /// unsaved changes of this context (save to make the undo durable); a merged property (a
    /// counter) gets its save's difference taken back instead of its previous value. Upserts and
    /// deletions by predicate are not undoable. A save that writes only what an undo or redo
    /// changed registers no step of its own: it writes that step.
    func registerUndo(
        updates: [(Registration, changed: [Int], before: ValueBuffer)], differences: [(Registration, keyPath: AnyKeyPath, difference: Any)],
        insertions: [Registration], deletions: [Registration]
    ) {
        // The save that writes only an undo's (or redo's) changes is that step: the undo
        // manager already holds its reverse. A save with other changes too is a step of its own
        // (which, as any new step, clears the redo stack).
        let undone = undoneModels
        undoneModels = []
        let saved = updates.map { ObjectIdentifier($0.0.storage) } + (insertions + deletions).map { ObjectIdentifier($0.storage) }
        if !undone.isEmpty, saved.allSatisfy(undone.contains) { return }
        guard let undoManager, undoManager.isUndoRegistrationEnabled else { return }
        var entries: [UndoStep.Entry] = deletions.map { .insert($0) }
        entries += insertions.map { .delete($0) }
        entries += updates.compactMap { $0.changed.isEmpty ? nil : .values($0.0, indices: $0.changed, from: $0.before) }
        entries += differences.map { .offset($0.0, keyPath: $0.keyPath, difference: $0.difference, adding: false) }
        guard !entries.isEmpty else { return }
        register(UndoStep(entries: entries), in: undoManager)
    }

    private func register(_ step: UndoStep, in undoManager: UndoManager) {
        undoManager.registerUndo(withTarget: self) { context in
            let inverse = context.apply(step)
            // Marked after applying: applying notes changes, which unmark.
            for entry in step.entries { context.undoneModels.insert(ObjectIdentifier(entry.registration.storage)) }
            if let manager = context.undoManager { context.register(inverse, in: manager) }
        }
    }

    /// Applies a step to the models and returns the step that reverses it.
    private func apply(_ step: UndoStep) -> UndoStep {
        var inverse: [UndoStep.Entry] = []
        for entry in step.entries.reversed() {
            switch entry {
            case let .values(registration, indices, source):
                if let undone = restore(registration, indices: indices, from: source) { inverse.append(undone) }
            case let .offset(registration, keyPath, difference, adding):
                if offset(registration, keyPath: keyPath, by: difference, adding: adding) {
                    inverse.append(.offset(registration, keyPath: keyPath, difference: difference, adding: !adding))
                }
            case let .delete(registration):
                delete(registration.model)
                inverse.append(.insert(registration))
            case let .insert(registration):
                insert(registration.model)
                inverse.append(.delete(registration))
            }
        }
        return UndoStep(entries: inverse)
    }

    /// Copies the listed properties' values from `source` into a model (as changes) and tells
    /// its observers; returns the entry that puts the replaced values back.
    private func restore(_ registration: Registration, indices: [Int], from source: ValueBuffer) -> UndoStep.Entry? {
        let storage = registration.storage
        guard storage.context === self, storage.state == .registered || storage.state == .inserted,
            let layout = storage.layout, let replaced = storage.values?.copyValues(),
            let values = storage.writableValues()
        else { return nil }
        let witnesses = layout.slots.witnesses
        var restored: [Int] = []
        for index in indices where index < witnesses.count && source.isInitialized(index) {
            let witness = witnesses[index]
            values.withSlot(index) { destination in
                if values.isInitialized(index) { witness.destroy(destination) }
                source.withSlot(index) { witness.copy(UnsafeRawPointer($0), destination) }
            }
            values.markInitialized(index)
            storage.noteChange(index)
            restored.append(index)
        }
        for index in restored { registration.model._$notifyObservers(ofChangeTo: layout.properties[index].keyPath) }
        return .values(registration, indices: restored, from: replaced)
    }

    /// Adds `difference` to a merged property (or subtracts it), as a change the model's setter
    /// makes; false when the model is no longer this context's or the result does not fit.
    private func offset(_ registration: Registration, keyPath: AnyKeyPath, by difference: Any, adding: Bool) -> Bool {
        let storage = registration.storage
        guard storage.context === self, storage.state == .registered || storage.state == .inserted else { return false }
        func open<M: PersistentModel>(_ model: M) -> Bool {
            func typed<V>(_: V.Type) -> Bool {
                guard let keyPath = keyPath as? ReferenceWritableKeyPath<M, V>,
                    let moved = Self.offset(model[keyPath: keyPath], by: difference, adding: adding) as? V
                else { return false }
                model[keyPath: keyPath] = moved
                return true
            }
            return _openExistential(type(of: keyPath).valueType, do: typed)
        }
        return open(registration.model)
    }

    /// `value` plus (or minus) `difference`, both of one counter type (nil on overflow), or a
    /// set with its save's ``SetDifference`` applied (or taken back).
    private static func offset(_ value: Any, by difference: Any, adding: Bool) -> Any? {
        func integer<N: FixedWidthInteger>(_ value: N, _ difference: N) -> N? {
            let result = adding ? value.addingReportingOverflow(difference) : value.subtractingReportingOverflow(difference)
            return result.overflow ? nil : result.partialValue
        }
        switch (value, difference) {
        case let (value as Int, difference as Int): return integer(value, difference)
        case let (value as Int64, difference as Int64): return integer(value, difference)
        case let (value as Double, difference as Double): return adding ? value + difference : value - difference
        case let (value as Float, difference as Float): return adding ? value + difference : value - difference
        case let (value as String, difference as TextDifference):
            // A text: its save's edit taken back (or made again) where it is now.
            return difference.applied(to: value, adding: adding)
        case let (value as any Encodable, difference as SetDifference):
            // A set: its save's adds go and its removes come back (or the other way round).
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            guard let data = try? encoder.encode(value), let elements = SetElements.split(String(decoding: data, as: UTF8.self)) else { return nil }
            let result =
                adding
                ? SetElements.applying(difference.adds, removing: difference.removes, to: elements)
                : SetElements.applying(difference.removes, removing: difference.adds, to: elements)
            return SetBridge.swiftValue(result, as: difference.type)
        default: return nil
        }
    }
}
