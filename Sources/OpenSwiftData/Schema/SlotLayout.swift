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
