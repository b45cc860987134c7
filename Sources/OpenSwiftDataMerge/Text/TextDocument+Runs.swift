// The order of runs: chunks of at most `chunkCapacity` runs, in `order`, each with its count of
// visible scalars, so that a position is found by summing chunk counts and a run is placed by
// its chunk's rank and its slot there.
extension TextDocument {
    /// Cuts a run so that a new run begins at `offset` (0 < offset < count); returns the new one,
    /// placed right after it.
    @discardableResult
    mutating func split(_ index: Int32, at offset: UInt32) -> Int32 {
        let old = runs[Int(index)]
        let tail = Int32(runs.count)
        runs.append(
            Run(
                replica: old.replica, seq: old.seq + offset, count: old.count - offset,
                originLeft: PackedTextID(replica: old.replica, seq: old.seq + offset - 1), originRight: old.originRight,
                deleted: old.deleted, chunk: old.chunk, next: old.next))
        runs[Int(index)].count = offset
        runs[Int(index)].next = tail
        let chunk = Int(old.chunk)
        let slot = chunks[chunk].runs.firstIndex(of: index) ?? 0
        chunks[chunk].runs.insert(tail, at: slot + 1)
        splitChunkIfFull(chunk)
        return tail
    }

    /// Makes the run holding `id` end at it; returns that run (nil: not held).
    mutating func endRun(at id: PackedTextID) -> Int32? {
        guard let (run, offset) = locate(id) else { return nil }
        if offset + 1 < runs[Int(run)].count { split(run, at: offset + 1) }
        return run
    }

    /// Makes the run holding `id` begin at it; returns that run (nil: not held).
    mutating func beginRun(at id: PackedTextID) -> Int32? {
        guard let (run, offset) = locate(id) else { return nil }
        return offset == 0 ? run : split(run, at: offset)
    }

    /// Puts a new run into the text at a chunk slot (a chunk's `runs.count` is its end).
    mutating func insert(_ run: Run, chunk: Int, slot: Int) -> Int32 {
        let index = Int32(runs.count)
        var run = run
        run.chunk = Int32(chunk)
        runs.append(run)
        chunks[chunk].runs.insert(index, at: slot)
        if !run.deleted { adjustVisible(chunk: chunk, by: Int(run.count)) }
        splitChunkIfFull(chunk)
        return index
    }

    /// The chunk and slot right after a run (the end of its chunk, when it is the last there).
    func slot(after run: Int32) -> (chunk: Int, slot: Int) {
        let chunk = Int(runs[Int(run)].chunk)
        return (chunk, (chunks[chunk].runs.firstIndex(of: run) ?? 0) + 1)
    }

    /// The first slot of the text, making the first chunk when there is none.
    mutating func firstSlot() -> (chunk: Int, slot: Int) {
        if order.isEmpty { appendChunk() }
        return (Int(order[0]), 0)
    }

    mutating func appendChunk() {
        chunks.append(Chunk(runs: [], visible: 0))
        rank.append(Int32(order.count))
        order.append(Int32(chunks.count - 1))
    }

    mutating func adjustVisible(chunk: Int, by delta: Int) {
        chunks[chunk].visible += delta
        scalarCount += delta
        cachedText = nil
        if let cursor, Int(rank[chunk]) < cursor.rank { self.cursor = (cursor.rank, cursor.before + delta) }
    }

    /// Halves a chunk that holds more than the capacity.
    mutating func splitChunkIfFull(_ chunk: Int) {
        guard chunks[chunk].runs.count > Self.chunkCapacity else { return }
        let half = chunks[chunk].runs.count / 2
        let moved = ContiguousArray(chunks[chunk].runs[half...])
        chunks[chunk].runs.removeSubrange(half...)
        let newChunk = Int32(chunks.count)
        var visible = 0
        for index in moved {
            runs[Int(index)].chunk = newChunk
            if !runs[Int(index)].deleted { visible += Int(runs[Int(index)].count) }
        }
        chunks[chunk].visible -= visible
        chunks.append(Chunk(runs: moved, visible: visible))
        let position = Int(rank[chunk]) + 1
        order.insert(newChunk, at: position)
        rank.append(0)
        for later in position..<order.count { rank[Int(order[later])] = Int32(later) }
        cursor = nil
    }

    /// The run and offset of the scalar at a visible position (`position < scalarCount`).
    mutating func visibleScalar(at position: Int) -> (run: Int32, offset: UInt32) {
        var (chunkRank, before) = cursor ?? (0, 0)
        if chunkRank >= order.count || before > position { (chunkRank, before) = (0, 0) }
        while chunkRank < order.count {
            let visible = chunks[Int(order[chunkRank])].visible
            if position < before + visible { break }
            before += visible
            chunkRank += 1
        }
        cursor = (chunkRank, before)
        var remaining = position - before
        for index in chunks[Int(order[chunkRank])].runs {
            let run = runs[Int(index)]
            guard !run.deleted else { continue }
            if remaining < Int(run.count) { return (index, UInt32(remaining)) }
            remaining -= Int(run.count)
        }
        // Unreachable while the counts are right: the last scalar.
        return (chunks[Int(order[chunkRank])].runs.last ?? 0, 0)
    }

    /// The run before a slot in text order (nil: the slot is the start of the text).
    func run(before chunk: Int, slot: Int) -> Int32? {
        if slot > 0 { return chunks[chunk].runs[slot - 1] }
        var chunkRank = Int(rank[chunk]) - 1
        while chunkRank >= 0 {
            if let last = chunks[Int(order[chunkRank])].runs.last { return last }
            chunkRank -= 1
        }
        return nil
    }

    /// The run at a slot, or the first one after it (nil: the end of the text).
    func run(at chunk: Int, slot: Int) -> Int32? {
        if slot < chunks[chunk].runs.count { return chunks[chunk].runs[slot] }
        var chunkRank = Int(rank[chunk]) + 1
        while chunkRank < order.count {
            if let first = chunks[Int(order[chunkRank])].runs.first { return first }
            chunkRank += 1
        }
        return nil
    }
}
