/// What one save did to a merged text: the runs it inserted and the ranges it deleted, by
/// identity rather than by position, so that it applies the same on every replica whatever
/// else was edited concurrently.
///
/// ```swift
/// var device = TextDocument()
/// let typed = device.insert("Hello", at: 0, replica: 7)
/// var server = TextDocument()
/// try server.apply(typed)
/// // server.text == "Hello"
/// ```
public struct TextOperation: Hashable, Sendable {
    /// A run of scalars inserted together: scalar `k` has identity `(id.replica, id.seq + k)`,
    /// and is inserted after scalar `k - 1` (the first, after `originLeft`).
    public struct Insertion: Hashable, Sendable {
        /// The identity of the first scalar.
        public var id: TextID
        /// The scalar the run was typed after, as its replica saw the text (nil: the start).
        public var originLeft: TextID?
        /// The scalar that followed the insertion point then, deleted or not (nil: the end).
        public var originRight: TextID?
        /// The inserted scalars.
        public var content: [Unicode.Scalar]

        /// Makes an insertion.
        public init(id: TextID, originLeft: TextID?, originRight: TextID?, content: [Unicode.Scalar]) {
            self.id = id
            self.originLeft = originLeft
            self.originRight = originRight
            self.content = content
        }

        /// The number of scalars inserted.
        public var count: Int { content.count }
    }

    /// A range of scalars one replica inserted, removed: `(start.replica, start.seq + k)` for
    /// `k < count`.
    public struct Deletion: Hashable, Sendable {
        /// The first deleted scalar.
        public var start: TextID
        /// How many consecutive sequence numbers of that replica.
        public var count: UInt32

        /// Makes a deletion.
        public init(start: TextID, count: UInt32) {
            self.start = start
            self.count = count
        }
    }

    /// The runs inserted, in the order they are applied.
    public var insertions: [Insertion]
    /// The ranges deleted (applied after the insertions).
    public var deletions: [Deletion]

    /// Makes an operation.
    public init(insertions: [Insertion] = [], deletions: [Deletion] = []) {
        self.insertions = insertions
        self.deletions = deletions
    }

    /// Whether it changes nothing.
    public var isEmpty: Bool { insertions.isEmpty && deletions.isEmpty }

    /// Appends another operation's effects after this one's (the insertions and the deletions
    /// of a later edit of the same save).
    public mutating func append(_ other: TextOperation) {
        for insertion in other.insertions {
            // Typing at the end of the previous run: one run.
            if var last = insertions.last, last.id.replica == insertion.id.replica,
                UInt64(last.id.seq) + UInt64(last.count) == UInt64(insertion.id.seq),
                insertion.originLeft == TextID(replica: last.id.replica, seq: last.id.seq &+ UInt32(last.count) &- 1),
                insertion.originRight == last.originRight
            {
                last.content.append(contentsOf: insertion.content)
                insertions[insertions.count - 1] = last
            } else {
                insertions.append(insertion)
            }
        }
        for deletion in other.deletions {
            if var last = deletions.last, last.start.replica == deletion.start.replica,
                UInt64(last.start.seq) + UInt64(last.count) == UInt64(deletion.start.seq)
            {
                last.count += deletion.count
                deletions[deletions.count - 1] = last
            } else if var last = deletions.last, last.start.replica == deletion.start.replica,
                UInt64(deletion.start.seq) + UInt64(deletion.count) == UInt64(last.start.seq)
            {
                // Backspacing: each deletion ends where the previous one began.
                last.start = deletion.start
                last.count += deletion.count
                deletions[deletions.count - 1] = last
            } else {
                deletions.append(deletion)
            }
        }
    }
}
