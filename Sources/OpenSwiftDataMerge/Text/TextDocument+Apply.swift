// Applying operations by identity (another replica's, or this one's own through the same path).
//
// An insertion is placed with FugueMax's rule in its list form: starting right after its left
// origin, it passes the runs that were inserted concurrently at the same place and belong after
// it, and stops before the first that does not. Runs of one replica typed in one go are kept as
// one run, so typing costs one comparison per save, not per character.
extension TextDocument {
    /// Applies an operation: its insertions, then its deletions. An insertion already applied is
    /// skipped, so an operation applies once however often it arrives; a deletion of scalars not
    /// inserted yet is kept and applied when they arrive.
    ///
    /// - Throws: ``Failure/missingOrigin(_:)`` when an insertion's origin is not in the text,
    ///   ``Failure/conflictingIdentity(_:)`` when it names held scalars with other content or
    ///   only part of a held insertion, ``Failure/sequenceOverflow(_:)`` and
    ///   ``Failure/sequenceGap(_:)`` for sequence numbers out of range (nothing of the operation
    ///   is applied then).
    public mutating func apply(_ operation: TextOperation) throws {
        try check(operation)
        for insertion in operation.insertions { integrate(insertion) }
        for deletion in operation.deletions { delete(deletion) }
    }

    /// Whether applying `operation` would change nothing: every scalar it inserts is held, with
    /// the same content, and every scalar it deletes is held and deleted (an echo of an edit
    /// made here). An insertion of held identities with other content is not held: applying it
    /// refuses it (``Failure/conflictingIdentity(_:)``).
    public func holds(_ operation: TextOperation) -> Bool {
        /// Walks the held runs over `count` scalars from `start`; false when one is not held,
        /// (with `deleted`) not deleted, or (with `content`) holds another scalar.
        func covered(_ start: TextID, count: UInt64, deleted: Bool, content: [Unicode.Scalar]? = nil) -> Bool {
            guard let replica = replicaIndex[start.replica] else { return count == 0 }
            var cursor = UInt64(start.seq)
            let end = cursor + count
            while cursor < end {
                guard cursor <= UInt64(UInt32.max), let (run, offset) = locate(PackedTextID(replica: replica, seq: UInt32(cursor))) else {
                    return false
                }
                let held = runs[Int(run)]
                if deleted, !held.deleted { return false }
                let stop = min(end, cursor + UInt64(held.count - offset))
                if let content {
                    let scalars = self.content[Int(replica)]
                    guard stop <= UInt64(scalars.count) else { return false }
                    for seq in cursor..<stop where scalars[Int(seq)] != content[Int(seq - UInt64(start.seq))] { return false }
                }
                cursor = stop
            }
            return true
        }
        for insertion in operation.insertions
        where !covered(insertion.id, count: UInt64(insertion.count), deleted: false, content: insertion.content) {
            return false
        }
        for deletion in operation.deletions where !covered(deletion.start, count: UInt64(deletion.count), deleted: true) { return false }
        return true
    }

    /// How many sequence numbers past the last one held an insertion may start: a replica's
    /// operations that were never applied (a rejected save) leave a gap, and its scalars are
    /// stored by sequence number, so an unbounded gap would be unbounded memory.
    static let maximumSequenceGap: UInt64 = 1 << 20

    /// Checks that every origin an insertion names is held, or is inserted by an earlier
    /// insertion of the same operation; that its identities are either all new or a replay of
    /// held ones with the same content; and that its sequence numbers are in range, as are the
    /// deletions'.
    func check(_ operation: TextOperation) throws {
        var inserted: [UInt64: [(UInt32, UInt32)]] = [:]
        func held(_ id: TextID) -> Bool {
            if let packed = packed(id), locate(packed) != nil { return true }
            return inserted[id.replica]?.contains { id.seq >= $0.0 && id.seq - $0.0 < $0.1 } ?? false
        }
        for insertion in operation.insertions {
            for origin in [insertion.originLeft, insertion.originRight] {
                if let origin, !held(origin) { throw Failure.missingOrigin(origin) }
            }
            guard UInt64(insertion.id.seq) + UInt64(insertion.count) <= UInt64(UInt32.max) else {
                throw Failure.sequenceOverflow(insertion.id)
            }
            // Measured from what the document holds, not from the operation's earlier
            // insertions: one operation moves a replica at most this far, however many
            // insertions it has.
            guard UInt64(insertion.id.seq) <= UInt64(nextSequence(of: insertion.id.replica)) + Self.maximumSequenceGap else {
                throw Failure.sequenceGap(insertion.id)
            }
            if let replica = replicaIndex[insertion.id.replica] { try checkIdentities(insertion, replica: replica) }
            inserted[insertion.id.replica, default: []].append((insertion.id.seq, UInt32(insertion.count)))
        }
        for deletion in operation.deletions where UInt64(deletion.start.seq) + UInt64(deletion.count) > UInt64(UInt32.max) + 1 {
            throw Failure.sequenceOverflow(deletion.start)
        }
    }

    /// Checks that an insertion's identities are a held prefix with the same content (a
    /// replay), followed by identities held nowhere: an insertion that reuses held identities
    /// for other content, or overlaps a held insertion after new ones, would give two scalars
    /// one identity.
    func checkIdentities(_ insertion: TextOperation.Insertion, replica: UInt32) throws {
        var seq = UInt64(insertion.id.seq)
        let end = seq + UInt64(insertion.count)
        var offset = 0
        let scalars = content[Int(replica)]
        while seq < end, locate(PackedTextID(replica: replica, seq: UInt32(seq))) != nil {
            guard Int(seq) < scalars.count, scalars[Int(seq)] == insertion.content[offset] else {
                throw Failure.conflictingIdentity(TextID(replica: insertion.id.replica, seq: UInt32(seq)))
            }
            seq += 1
            offset += 1
        }
        guard seq < end else { return }
        // The first insertion held after `seq` must start at or after the end.
        let list = starts[Int(replica)]
        var low = 0
        var high = list.count
        while low < high {
            let middle = (low + high) / 2
            if UInt64(list[middle].seq) <= seq { low = middle + 1 } else { high = middle }
        }
        if low < list.count, UInt64(list[low].seq) < end {
            throw Failure.conflictingIdentity(TextID(replica: insertion.id.replica, seq: list[low].seq))
        }
    }

    /// Places one insertion (its origins are held).
    mutating func integrate(_ insertion: TextOperation.Insertion) {
        var insertion = insertion
        let replica = index(of: insertion.id.replica)
        // Skip what is held already (a replayed operation, or one that overlaps).
        while !insertion.content.isEmpty, locate(PackedTextID(replica: replica, seq: insertion.id.seq)) != nil {
            insertion.originLeft = insertion.id
            insertion.id.seq += 1
            insertion.content.removeFirst()
        }
        guard !insertion.content.isEmpty, let left = packed(insertion.originLeft), let right = packed(insertion.originRight) else { return }
        let leftRun = left.isNone ? nil : endRun(at: left)
        let rightRun = right.isNone ? nil : beginRun(at: right)
        let leftPlace = leftRun.map { place(($0, runs[Int($0)].count - 1)) }
        let rightPlace = rightRun.map { place(($0, 0)) }

        // Scan from right after the left origin to the right origin.
        var position: (chunk: Int, slot: Int) = leftRun.map { slot(after: $0) } ?? firstSlot()
        var destination = position
        var scanning = false
        while true {
            if !scanning { destination = position }
            guard let other = run(at: position.chunk, slot: position.slot), other != rightRun else { break }
            let otherRun = runs[Int(other)]
            let otherLeft = otherRun.originLeft.isNone ? nil : locate(otherRun.originLeft).map { place($0) }
            let otherRight = otherRun.originRight.isNone ? nil : locate(otherRun.originRight).map { place($0) }
            if Self.precedes(otherLeft, leftPlace) { break }
            if otherLeft.map({ p in leftPlace.map { $0 == p } ?? false }) ?? (leftPlace == nil) {
                if Self.precedesAtEnd(otherRight, rightPlace) {
                    scanning = true
                } else if Self.sameAtEnd(otherRight, rightPlace) {
                    if insertion.id.replica < replicas[Int(otherRun.replica)] { break }
                    scanning = false
                } else {
                    scanning = false
                }
            }
            // The slot after it (`run(at:slot:)` goes on to the next chunk from a chunk's end).
            position = slot(after: other)
        }

        // Content, by sequence number.
        let start = Int(insertion.id.seq)
        var scalars = content[Int(replica)]
        content[Int(replica)] = []
        if scalars.count < start { scalars.append(contentsOf: repeatElement("\u{FFFD}", count: start - scalars.count)) }
        let appended = scalars.count == start
        let end = start + insertion.content.count
        if appended {
            scalars.append(contentsOf: insertion.content)
        } else {
            let overlap = min(end, scalars.count)
            scalars.replaceSubrange(start..<overlap, with: insertion.content.prefix(overlap - start))
            if end > overlap { scalars.append(contentsOf: insertion.content.dropFirst(overlap - start)) }
        }
        content[Int(replica)] = scalars

        let count = UInt32(insertion.content.count)
        if let previous = run(before: destination.chunk, slot: destination.slot), previous == leftRun, appended {
            let run = runs[Int(previous)]
            if run.replica == replica, run.seq + run.count == insertion.id.seq, run.next < 0, !run.deleted, run.originRight == right {
                runs[Int(previous)].count += count
                adjustVisible(chunk: Int(run.chunk), by: Int(count))
                applyPendingDeletions(replica: insertion.id.replica, from: insertion.id.seq, count: count)
                return
            }
        }
        let index = insert(
            Run(replica: replica, seq: insertion.id.seq, count: count, originLeft: left, originRight: right, deleted: false, chunk: 0, next: -1),
            chunk: destination.chunk, slot: destination.slot)
        registerStart(replica: replica, seq: insertion.id.seq, run: index)
        applyPendingDeletions(replica: insertion.id.replica, from: insertion.id.seq, count: count)
    }

    mutating func registerStart(replica: UInt32, seq: UInt32, run: Int32) {
        var list = starts[Int(replica)]
        starts[Int(replica)] = []
        if let last = list.last, last.seq > seq {
            let at = list.firstIndex { $0.seq > seq } ?? list.count
            list.insert((seq, run), at: at)
        } else {
            list.append((seq, run))
        }
        starts[Int(replica)] = list
    }

    /// Whether a left origin's place comes before another's (nil: the start of the text, before
    /// everything).
    static func precedes(_ lhs: (Int32, Int, UInt32)?, _ rhs: (Int32, Int, UInt32)?) -> Bool {
        guard let rhs else { return false }
        guard let lhs else { return true }
        return lhs < rhs
    }

    /// Whether a right origin's place comes before another's (nil: the end, after everything).
    static func precedesAtEnd(_ lhs: (Int32, Int, UInt32)?, _ rhs: (Int32, Int, UInt32)?) -> Bool {
        guard let lhs else { return false }
        guard let rhs else { return true }
        return lhs < rhs
    }

    static func sameAtEnd(_ lhs: (Int32, Int, UInt32)?, _ rhs: (Int32, Int, UInt32)?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case let (lhs?, rhs?): lhs == rhs
        default: false
        }
    }

    // MARK: Deletions

    /// Deletes a range of one replica's scalars: those held now, and the rest when they arrive.
    mutating func delete(_ deletion: TextOperation.Deletion) {
        guard deletion.count > 0 else { return }
        guard let replica = replicaIndex[deletion.start.replica] else {
            pendingDeletions[deletion.start.replica, default: []].append(deletion)
            return
        }
        // Sequence numbers as 64 bits: a range may end at 2^32 (`check` refuses beyond).
        var cursor = UInt64(deletion.start.seq)
        let end = min(UInt64(deletion.start.seq) + UInt64(deletion.count), UInt64(UInt32.max) + 1)
        while cursor < end {
            let seq = UInt32(cursor)
            guard let run = beginRun(at: PackedTextID(replica: replica, seq: seq)) else {
                // Not held: wait for the scalars up to the next insertion held.
                let next = starts[Int(replica)].first { $0.seq > seq }.map { UInt64($0.seq) } ?? end
                let stop = min(next, end)
                pendingDeletions[deletion.start.replica, default: []].append(
                    TextOperation.Deletion(start: TextID(replica: deletion.start.replica, seq: seq), count: UInt32(stop - cursor)))
                cursor = stop
                continue
            }
            let available = UInt64(runs[Int(run)].count)
            if end - cursor < available { split(run, at: UInt32(end - cursor)) }
            let current = runs[Int(run)]
            if !current.deleted {
                runs[Int(run)].deleted = true
                adjustVisible(chunk: Int(current.chunk), by: -Int(current.count))
            }
            cursor += UInt64(current.count)
        }
    }

    mutating func applyPendingDeletions(replica: UInt64, from seq: UInt32, count: UInt32) {
        guard var pending = pendingDeletions[replica] else { return }
        let end = UInt64(seq) + UInt64(count)
        var due: [TextOperation.Deletion] = []
        pending.removeAll { deletion in
            let overlaps = UInt64(deletion.start.seq) < end && UInt64(deletion.start.seq) + UInt64(deletion.count) > UInt64(seq)
            if overlaps { due.append(deletion) }
            return overlaps
        }
        pendingDeletions[replica] = pending.isEmpty ? nil : pending
        for deletion in due { delete(deletion) }
    }
}
