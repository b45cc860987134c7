/// An object whose tail holds one row of typed slots laid out by an entity's ``SlotLayout``:
/// a model's storage (its current values) or a ``ValueBuffer`` (a copy of them, such as the
/// values last saved). The slot operations are written once, here, for both.
///
/// Not `Sendable`: like the model that owns it, a buffer is confined to its context's isolation.
protocol SlotBuffer: AnyObject {
    /// The layout of the slots (an entity with no layout has no slot buffer).
    var slotLayout: EntityLayout { get }
    /// Runs `body` with the address of the first slot. The address is stable while the object
    /// lives (a managed buffer's tail never moves).
    func withSlotBase<R>(_ body: (UnsafeMutableRawPointer) throws -> R) rethrows -> R
}

extension SlotBuffer {
    /// Whether slot `index` holds a value.
    func isInitialized(_ index: Int) -> Bool {
        isInitialized(index, flagsOffset: slotLayout.flagsOffset)
    }

    /// Whether slot `index` holds a value, given the layout's flags offset (the per-read fast path).
    @inline(__always)
    func isInitialized(_ index: Int, flagsOffset: Int) -> Bool {
        withSlotBase { UnsafeRawPointer($0).load(fromByteOffset: flagsOffset + index, as: UInt8.self) != 0 }
    }

    /// The value of type `V` at a byte offset (the per-read fast path).
    @inline(__always)
    func load<V>(offset: Int, as type: V.Type) -> V {
        withSlotBase { UnsafeRawPointer($0).load(fromByteOffset: offset, as: V.self) }
    }

    /// Stores a value of the slot's type `V`, replacing any previous one.
    func store<V>(_ index: Int, _ value: V) {
        // Plain values from the layout, not its slot arrays (a copy retains and releases each of
        // them on every store).
        let layout = slotLayout
        let offset = layout.slotInfo[index].offset
        let flagsOffset = layout.flagsOffset
        withSlotBase { base in
            let slot = base + offset
            let flag = base + flagsOffset + index
            if flag.load(as: UInt8.self) != 0 {
                slot.assumingMemoryBound(to: V.self).pointee = value
            } else {
                slot.initializeMemory(as: V.self, to: value)
                flag.storeBytes(of: 1, as: UInt8.self)
            }
        }
    }

    /// Stores a boxed value; false (and the slot is left empty) when it is not of the slot's type.
    @discardableResult
    func storeBoxed(_ index: Int, _ value: Any) -> Bool {
        let slots = slotLayout.slots
        return withSlotBase { base in
            let slot = base + slots.offsets[index]
            let flag = base + slots.flagsOffset + index
            let witness = slots.witnesses[index]
            if flag.load(as: UInt8.self) != 0 { witness.destroy(slot) }
            guard witness.initialize(slot, value) else {
                flag.storeBytes(of: 0, as: UInt8.self)
                return false
            }
            flag.storeBytes(of: 1, as: UInt8.self)
            return true
        }
    }

    /// Runs `body` with the address of slot `index` (for codecs reading and writing in place).
    func withSlot<R>(_ index: Int, _ body: (UnsafeMutableRawPointer) throws -> R) rethrows -> R {
        let offset = slotLayout.slotInfo[index].offset
        return try withSlotBase { try body($0 + offset) }
    }

    /// Marks slot `index` initialized after a codec wrote it in place.
    func markInitialized(_ index: Int) {
        let flags = slotLayout.flagsOffset
        withSlotBase { $0.storeBytes(of: 1, toByteOffset: flags + index, as: UInt8.self) }
    }

    /// An independent copy of the slots.
    func copyValues() -> ValueBuffer {
        let copy = ValueBuffer.make(slotLayout)
        copy.assignValues(from: self)
        return copy
    }

    /// Makes every slot hold what `source` (of the same layout) holds: a copy of its value where
    /// it has one, nothing where it has none.
    func assignValues(from source: some SlotBuffer) {
        guard source !== self else { return }
        let slots = slotLayout.slots
        source.withSlotBase { from in
            withSlotBase { to in
                for index in 0..<slots.count {
                    let flag = slots.flagsOffset + index
                    let slot = to + slots.offsets[index]
                    if to.load(fromByteOffset: flag, as: UInt8.self) != 0 {
                        slots.witnesses[index].destroy(slot)
                        to.storeBytes(of: 0, toByteOffset: flag, as: UInt8.self)
                    }
                    guard from.load(fromByteOffset: flag, as: UInt8.self) != 0 else { continue }
                    slots.witnesses[index].copy(UnsafeRawPointer(from + slots.offsets[index]), slot)
                    to.storeBytes(of: 1, toByteOffset: flag, as: UInt8.self)
                }
            }
        }
    }
}

/// Slot memory without an owner: the steps both kinds of ``SlotBuffer`` take when made and when
/// they go.
enum SlotMemory {
    /// Marks every slot of a fresh tail empty.
    static func clearFlags(_ base: UnsafeMutableRawPointer, _ layout: EntityLayout) {
        let slots = layout.slots
        _ = (base + slots.flagsOffset).initializeMemory(as: UInt8.self, repeating: 0, count: slots.count)
    }

    /// Destroys the value of every initialized slot (the common types inline, any other
    /// through its witness).
    static func destroyValues(_ base: UnsafeMutableRawPointer, _ layout: EntityLayout) {
        let plan = layout.releasePlan
        for entry in UnsafeBufferPointer(start: plan, count: layout.releaseCount)
        where base.load(fromByteOffset: entry.flagOffset, as: UInt8.self) != 0 {
            let slot = base + entry.offset
            switch entry.kind {
            case .string: slot.assumingMemoryBound(to: String.self).deinitialize(count: 1)
            case .optionalString: slot.assumingMemoryBound(to: String?.self).deinitialize(count: 1)
            case .toOne: slot.assumingMemoryBound(to: ToOneSlot.self).deinitialize(count: 1)
            case .toMany: slot.assumingMemoryBound(to: ToManySlot.self).deinitialize(count: 1)
            case .witness: layout.slots.witnesses[entry.index].destroy(slot)
            }
        }
    }
}
