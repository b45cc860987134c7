/// Where each property of an entity sits in a model's ``ValueBuffer``: offsets computed from
/// the properties' sizes and alignments, as for the stored properties of a struct, followed by one
/// "initialized" byte per property.
struct SlotLayout: Sendable {
    let witnesses: [SlotWitness]
    let offsets: [Int]
    /// The offset of the first "initialized" flag byte.
    let flagsOffset: Int
    /// The buffer size in 8-byte words.
    let wordCount: Int
    /// The slots whose values need destruction.
    let nontrivialIndices: [Int]

    init(witnesses: [SlotWitness]) {
        var offset = 0
        var offsets: [Int] = []
        for witness in witnesses {
            let alignment = max(witness.alignment, 1)
            offset = (offset + alignment - 1) / alignment * alignment
            offsets.append(offset)
            offset += witness.size
        }
        self.witnesses = witnesses
        self.offsets = offsets
        self.flagsOffset = offset
        self.wordCount = max((offset + witnesses.count + 7) / 8, 1)
        self.nontrivialIndices = witnesses.indices.filter { !witnesses[$0].isTrivial }
    }

    var count: Int { witnesses.count }
}

/// How a ``ValueBuffer`` destroys the value of one slot that needs destruction: the common types
/// inline (specialized code, no closure call), any other through its ``SlotWitness``.
struct SlotRelease {
    enum Kind: UInt8 {
        case string, optionalString, toOne, toMany, witness
    }

    let offset: Int
    let flagOffset: Int
    /// The slot's index, for ``Kind/witness``.
    let index: Int
    let kind: Kind

    /// The plan of every slot of `slots` whose values need destruction.
    static func plan(_ slots: SlotLayout) -> [SlotRelease] {
        slots.nontrivialIndices.map { index in
            let type = ObjectIdentifier(slots.witnesses[index].type)
            let kind: Kind
            switch type {
            case ObjectIdentifier(String.self): kind = .string
            case ObjectIdentifier(String?.self): kind = .optionalString
            case ObjectIdentifier(ToOneSlot.self): kind = .toOne
            case ObjectIdentifier(ToManySlot.self): kind = .toMany
            default: kind = .witness
            }
            return SlotRelease(offset: slots.offsets[index], flagOffset: slots.flagsOffset + index, index: index, kind: kind)
        }
    }
}
