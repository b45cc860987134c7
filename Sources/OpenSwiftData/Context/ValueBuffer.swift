/// A copy of one model's persisted values, outside the model's storage: the values last read
/// from or written to the store once the model has changed since, a save's snapshot for putting
/// a model back when the save fails, the values an undo puts back, a row read to refresh a model.
///
/// One typed slot per property, laid out by the entity's ``SlotLayout`` in a single allocation,
/// like the stored properties of a struct (the same layout as the storage's own slots).
final class ValueBuffer: ManagedBuffer<EntityLayout, UInt64>, SlotBuffer {
    /// A buffer whose slots are all empty.
    static func make(_ layout: EntityLayout) -> ValueBuffer {
        let buffer = unsafeDowncast(ValueBuffer.create(minimumCapacity: layout.slots.wordCount) { _ in layout }, to: ValueBuffer.self)
        buffer.withSlotBase { SlotMemory.clearFlags($0, layout) }
        return buffer
    }

    deinit {
        let layout = header
        withSlotBase { SlotMemory.destroyValues($0, layout) }
    }

    var slotLayout: EntityLayout { header }

    @inline(__always)
    func withSlotBase<R>(_ body: (UnsafeMutableRawPointer) throws -> R) rethrows -> R {
        try withUnsafeMutablePointerToElements { try body(UnsafeMutableRawPointer($0)) }
    }
}
