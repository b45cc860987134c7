/// The persisted values of one model: one typed slot per property, laid out by the entity's
/// ``SlotLayout`` in a single allocation, like the stored properties of a struct.
///
/// A buffer is shared copy-on-write between a model's current and committed values; the owning
/// ``ModelStorage`` copies it before writing when it is not uniquely referenced.
@usableFromInline
final class ValueBuffer: ManagedBuffer<EntityLayout, UInt64> {
    /// A buffer whose slots are all uninitialized.
    static func make(_ layout: EntityLayout) -> ValueBuffer {
        let slots = layout.slots
        let buffer = unsafeDowncast(ValueBuffer.create(minimumCapacity: slots.wordCount) { _ in layout }, to: ValueBuffer.self)
        buffer.withUnsafeMutablePointerToElements { words in
            _ = UnsafeMutableRawPointer(words).advanced(by: slots.flagsOffset).initializeMemory(as: UInt8.self, repeating: 0, count: slots.count)
        }
        return buffer
    }

    deinit {
        let layout = header
        let plan = layout.releasePlan
        withUnsafeMutablePointerToElements { words in
            let base = UnsafeMutableRawPointer(words)
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

    var layout: EntityLayout { header }

    /// Whether slot `index` holds a value.
    func isInitialized(_ index: Int) -> Bool {
        isInitialized(index, flagsOffset: header.slots.flagsOffset)
    }

    /// Whether slot `index` holds a value, given the layout's flags offset (the per-read fast path).
    @inline(__always)
    func isInitialized(_ index: Int, flagsOffset: Int) -> Bool {
        withUnsafeMutablePointerToElements { UnsafeRawPointer($0).load(fromByteOffset: flagsOffset + index, as: UInt8.self) != 0 }
    }

    /// The value of type `V` at a byte offset (the per-read fast path).
    @inline(__always)
    func load<V>(offset: Int, as type: V.Type) -> V {
        withUnsafeMutablePointerToElements { UnsafeRawPointer($0).load(fromByteOffset: offset, as: V.self) }
    }

    /// Stores a value of the slot's type `V`, replacing any previous one.
    func store<V>(_ index: Int, _ value: V) {
        // Read the two offsets from the layout without copying its slot arrays (a copy retains
        // and releases each of them on every store).
        let layout = header
        let offset = layout.slotInfo[index].offset
        let flagsOffset = layout.slots.flagsOffset
        withUnsafeMutablePointerToElements { words in
            let base = UnsafeMutableRawPointer(words)
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

    /// Stores a boxed value; false (and nothing changes) when it is not of the slot's type.
    @discardableResult
    func storeBoxed(_ index: Int, _ value: Any) -> Bool {
        let slots = header.slots
        return withUnsafeMutablePointerToElements { words in
            let base = UnsafeMutableRawPointer(words)
            let slot = base + slots.offsets[index]
            let flag = base + slots.flagsOffset + index
            let witness = slots.witnesses[index]
            let wasInitialized = flag.load(as: UInt8.self) != 0
            if wasInitialized { witness.destroy(slot) }
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
        let offset = header.slots.offsets[index]
        return try withUnsafeMutablePointerToElements { try body(UnsafeMutableRawPointer($0) + offset) }
    }

    /// Marks slot `index` initialized after a codec wrote it in place.
    func markInitialized(_ index: Int) {
        let flags = header.slots.flagsOffset
        withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0).storeBytes(of: 1, toByteOffset: flags + index, as: UInt8.self) }
    }

    /// An independent copy.
    func copy() -> ValueBuffer {
        let slots = header.slots
        let copy = ValueBuffer.make(header)
        withUnsafeMutablePointerToElements { source in
            copy.withUnsafeMutablePointerToElements { destination in
                let from = UnsafeRawPointer(source)
                let to = UnsafeMutableRawPointer(destination)
                for index in 0..<slots.count where from.load(fromByteOffset: slots.flagsOffset + index, as: UInt8.self) != 0 {
                    slots.witnesses[index].copy(from + slots.offsets[index], to + slots.offsets[index])
                    to.storeBytes(of: 1, toByteOffset: slots.flagsOffset + index, as: UInt8.self)
                }
            }
        }
        return copy
    }
}
