// Edits made on this replica, by visible position: each is applied at once and returned as the
// operation that other replicas apply by identity.
extension TextDocument {
    /// Inserts `text` before the visible scalar at `position` (``scalarCount`` appends), as
    /// `replica`; returns the operation to send.
    ///
    /// The new scalars take the next sequence numbers of `replica` (``nextSequence(of:)``).
    /// A position past the end appends.
    @discardableResult
    public mutating func insert(_ text: some StringProtocol, at position: Int, replica: UInt64) -> TextOperation {
        let scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty else { return TextOperation() }
        let (left, right) = origins(at: min(max(position, 0), scalarCount))
        let insertion = TextOperation.Insertion(
            id: TextID(replica: replica, seq: nextSequence(of: replica)), originLeft: left, originRight: right, content: scalars)
        integrate(insertion)
        return TextOperation(insertions: [insertion])
    }

    /// Deletes `count` visible scalars from `position` on (clamped to the text); returns the
    /// operation to send.
    @discardableResult
    public mutating func delete(at position: Int, count: Int) -> TextOperation {
        var operation = TextOperation()
        let position = max(position, 0)
        var remaining = min(count, scalarCount - position)
        while remaining > 0 {
            let (index, offset) = visibleScalar(at: position)
            let run = runs[Int(index)]
            let taken = min(UInt32(remaining), run.count - offset)
            let deletion = TextOperation.Deletion(start: TextID(replica: replicas[Int(run.replica)], seq: run.seq + offset), count: taken)
            delete(deletion)
            operation.append(TextOperation(deletions: [deletion]))
            remaining -= Int(taken)
        }
        return operation
    }

    /// The origins of an insertion before the visible scalar at `position`: the scalar right
    /// before it in the list (a deleted one included), and that scalar.
    mutating func origins(at position: Int) -> (left: TextID?, right: TextID?) {
        if position < scalarCount {
            let (index, offset) = visibleScalar(at: position)
            let run = runs[Int(index)]
            let right = TextID(replica: replicas[Int(run.replica)], seq: run.seq + offset)
            if offset > 0 { return (TextID(replica: right.replica, seq: right.seq - 1), right) }
            let chunk = Int(run.chunk)
            guard let before = self.run(before: chunk, slot: chunks[chunk].runs.firstIndex(of: index) ?? 0) else { return (nil, right) }
            return (lastID(of: before), right)
        }
        // At the end: after the last scalar of the list, deleted or not.
        var chunkRank = order.count - 1
        while chunkRank >= 0 {
            if let last = chunks[Int(order[chunkRank])].runs.last { return (lastID(of: last), nil) }
            chunkRank -= 1
        }
        return (nil, nil)
    }

    func lastID(of index: Int32) -> TextID {
        let run = runs[Int(index)]
        return TextID(replica: replicas[Int(run.replica)], seq: run.seq + run.count - 1)
    }
}
