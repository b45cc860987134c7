/// A text that several replicas edit concurrently and that converges: a sequence CRDT of Unicode
/// scalars (FugueMax in its list form, kept as runs).
///
/// Every scalar ever inserted keeps its place, deleted ones as tombstones, so that an operation
/// made on any replica applies by identity: ``apply(_:)`` of the same operations in any order
/// consistent with their causes gives every replica the same text. Concurrent insertions at one
/// place are ordered by replica and never interleave: text typed forwards or backwards at the
/// same spot by two devices comes out as two blocks.
///
/// ```swift
/// var alice = TextDocument()
/// let hello = alice.insert("Hello", at: 0, replica: 1)
/// var bob = alice
/// let world = alice.insert(" world", at: 5, replica: 1)
/// let there = bob.insert(" there", at: 5, replica: 2)
/// try alice.apply(there)
/// try bob.apply(world)
/// // alice.text == bob.text: both insertions kept, each whole
/// ```
public struct TextDocument: Sendable {
    /// Why an operation cannot be applied.
    public enum Failure: Error, Hashable, Sendable {
        /// An insertion's origin is a scalar this document does not hold (the operation that
        /// inserted it has not been applied yet).
        case missingOrigin(TextID)
        /// An insertion reuses an identity this document holds for other content.
        case conflictingIdentity(TextID)
        /// An insertion or a deletion would reach a sequence number past the largest one.
        case sequenceOverflow(TextID)
        /// An insertion starts further past its replica's last sequence number than a replica
        /// can leave unapplied (``TextDocument`` stores scalars by sequence number).
        case sequenceGap(TextID)
        /// Bytes given to ``init(encoded:)`` are not a state ``encoded()`` wrote; the message
        /// names what does not fit.
        case malformedState(String)
    }

    /// One run: consecutive scalars of one replica, inserted together, adjacent in the text,
    /// all deleted or all not.
    struct Run {
        var replica: UInt32
        var seq: UInt32
        var count: UInt32
        /// The first scalar's origins (a later scalar's left origin is the scalar before it).
        var originLeft: PackedTextID
        var originRight: PackedTextID
        var deleted: Bool
        /// The chunk holding it.
        var chunk: Int32
        /// The run that holds the sequence numbers following this one's, when a split cut it
        /// (-1: none).
        var next: Int32
    }

    /// Up to ``chunkCapacity`` runs in text order, with their visible scalar count.
    struct Chunk {
        var runs: ContiguousArray<Int32>
        var visible: Int
    }

    static let chunkCapacity = 128

    /// The replicas' identities, by index.
    var replicas: [UInt64] = []
    var replicaIndex: [UInt64: UInt32] = [:]
    /// Per replica index: its scalars, by sequence number (gaps hold U+FFFD, never shown).
    var content: [ContiguousArray<Unicode.Scalar>] = []
    /// Per replica index: the first run of each insertion, by ascending sequence number.
    var starts: [ContiguousArray<(seq: UInt32, run: Int32)>] = []
    /// Every run ever made (a split adds one; none is removed).
    var runs: ContiguousArray<Run> = []
    /// Every chunk ever made.
    var chunks: ContiguousArray<Chunk> = []
    /// The chunks in text order.
    var order: ContiguousArray<Int32> = []
    /// Per chunk: its index in `order`.
    var rank: ContiguousArray<Int32> = []
    /// Deletions of scalars not inserted yet, per replica identity: applied when they arrive.
    var pendingDeletions: [UInt64: [TextOperation.Deletion]] = [:]
    /// The number of visible scalars.
    public internal(set) var scalarCount = 0
    /// Where the last lookup by position ended: the chunk's index in `order` and the visible
    /// scalars before it (nil: unknown).
    var cursor: (rank: Int, before: Int)?
    /// The text as it reads now, once built (nil after a change).
    var cachedText: String?

    /// An empty text.
    public init() {}

    /// The text as it reads now (kept until the next change).
    public var text: String {
        if let cachedText { return cachedText }
        return render()
    }

    /// The text, built from the visible runs.
    func render() -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(scalarCount + scalarCount / 4)
        for chunk in order {
            for index in chunks[Int(chunk)].runs {
                let run = runs[Int(index)]
                guard !run.deleted else { continue }
                let start = Int(run.seq)
                for scalar in content[Int(run.replica)][start..<start + Int(run.count)] {
                    Self.appendUTF8(scalar, to: &bytes)
                }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends a scalar's UTF-8 encoding.
    @inline(__always)
    static func appendUTF8(_ scalar: Unicode.Scalar, to bytes: inout [UInt8]) {
        let value = scalar.value
        switch value {
        case 0..<0x80:
            bytes.append(UInt8(truncatingIfNeeded: value))
        case 0x80..<0x800:
            bytes.append(UInt8(truncatingIfNeeded: 0xC0 | value >> 6))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | value & 0x3F))
        case 0x800..<0x10000:
            bytes.append(UInt8(truncatingIfNeeded: 0xE0 | value >> 12))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | value >> 6 & 0x3F))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | value & 0x3F))
        default:
            bytes.append(UInt8(truncatingIfNeeded: 0xF0 | value >> 18))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | value >> 12 & 0x3F))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | value >> 6 & 0x3F))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | value & 0x3F))
        }
    }

    /// The number of runs the text is kept in (tombstones included), a measure of its memory.
    public var runCount: Int { runs.count }

    /// The next sequence number of `replica` (the count of scalars it has inserted).
    public func nextSequence(of replica: UInt64) -> UInt32 {
        guard let index = replicaIndex[replica] else { return 0 }
        return UInt32(content[Int(index)].count)
    }

    // MARK: Replicas and identities

    mutating func index(of replica: UInt64) -> UInt32 {
        if let index = replicaIndex[replica] { return index }
        let index = UInt32(replicas.count)
        replicas.append(replica)
        replicaIndex[replica] = index
        content.append([])
        starts.append([])
        return index
    }

    func packed(_ id: TextID?) -> PackedTextID? {
        guard let id else { return PackedTextID.none }
        guard let index = replicaIndex[id.replica] else { return nil }
        return PackedTextID(replica: index, seq: id.seq)
    }

    func unpacked(_ id: PackedTextID) -> TextID? {
        id.isNone ? nil : TextID(replica: replicas[Int(id.replica)], seq: id.seq)
    }

    /// The run holding a scalar, and the scalar's offset in it (nil: not inserted here).
    func locate(_ id: PackedTextID) -> (run: Int32, offset: UInt32)? {
        guard !id.isNone, Int(id.replica) < starts.count else { return nil }
        let list = starts[Int(id.replica)]
        // The last insertion starting at or before the sequence number.
        var low = 0
        var high = list.count
        while low < high {
            let middle = (low + high) / 2
            if list[middle].seq <= id.seq { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        var index = list[low - 1].run
        while index >= 0 {
            let run = runs[Int(index)]
            if id.seq < run.seq { return nil }
            if id.seq - run.seq < run.count { return (index, id.seq - run.seq) }
            index = run.next
        }
        return nil
    }

    /// A run's index in its chunk.
    func slot(of run: Int32) -> Int {
        let chunk = chunks[Int(runs[Int(run)].chunk)]
        return chunk.runs.firstIndex(of: run) ?? 0
    }

    /// A scalar's place in the text, comparable with another's: chunk rank, run slot, offset.
    func place(_ located: (run: Int32, offset: UInt32)) -> (Int32, Int, UInt32) {
        (rank[Int(runs[Int(located.run)].chunk)], slot(of: located.run), located.offset)
    }
}
