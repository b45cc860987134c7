/// How values of one Swift type sit in a ``ValueBuffer`` slot: size, alignment, and the type's
/// own copy and destroy operations, erased so that a buffer can hold a row of mixed types the way
/// a struct holds its stored properties.
struct SlotWitness: @unchecked Sendable {
    // @unchecked Sendable: immutable; the closures capture only the metatype.
    let type: Any.Type
    let size: Int
    let alignment: Int
    /// Whether values need no destruction and copy bit for bit (integers, doubles, dates, UUIDs…).
    let isTrivial: Bool
    /// Initializes the slot at `destination` with a copy of the value at `source`.
    let copy: (UnsafeRawPointer, UnsafeMutableRawPointer) -> Void
    /// Deinitializes the value at a slot.
    let destroy: (UnsafeMutableRawPointer) -> Void
    /// Initializes a slot from a boxed value; false when the value is of another type.
    let initialize: (UnsafeMutableRawPointer, Any) -> Bool
    /// A copy of the value at a slot, boxed.
    let box: (UnsafeRawPointer) -> Any

    /// The largest alignment a slot can have: a buffer's storage is 8-byte aligned.
    static let maximumAlignment = 8

    /// Whether values of `T` can live in a slot.
    static func fits<T>(_ type: T.Type) -> Bool { MemoryLayout<T>.alignment <= maximumAlignment }

    static func of<T>(_ type: T.Type) -> SlotWitness {
        SlotWitness(
            type: T.self,
            size: MemoryLayout<T>.size,
            alignment: MemoryLayout<T>.alignment,
            isTrivial: _isPOD(T.self),
            copy: { source, destination in destination.initializeMemory(as: T.self, to: source.load(as: T.self)) },
            destroy: { pointer in pointer.assumingMemoryBound(to: T.self).deinitialize(count: 1) },
            initialize: { pointer, value in
                guard let typed = value as? T else { return false }
                pointer.initializeMemory(as: T.self, to: typed)
                return true
            },
            box: { pointer in pointer.load(as: T.self) }
        )
    }
}
