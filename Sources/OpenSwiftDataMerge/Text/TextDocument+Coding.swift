// A document's state as bytes, to keep beside the field it merges (on a device and on the
// server): the replicas, each replica's scalars, the runs in text order and the deletions still
// waiting for their scalars. Integers are LEB128 varints; replicas are 8 bytes little-endian.
//
//     1                                   format
//     R, R × replica(8)                   replicas
//     R × (n, n bytes of UTF-8)           each replica's scalars by sequence number
//     N, N × run                          runs in text order
//     P, P × (replica(8), seq, count)     deletions waiting for their scalars
//
// run: replica index, seq, count, flags (1 deleted, 2 has left origin, 4 has right origin),
// then each origin present as (replica index, seq).
extension TextDocument {
    /// The format this version writes.
    static let codingFormat: UInt8 = 1

    /// The document's state as bytes (``init(encoded:)`` reads them back).
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = [Self.codingFormat]
        bytes.reserveCapacity(runs.count * 8 + content.reduce(0) { $0 + $1.count })
        Self.appendVarint(UInt64(replicas.count), to: &bytes)
        for replica in replicas { Self.appendFixed(replica, to: &bytes) }
        for scalars in content {
            var utf8: [UInt8] = []
            utf8.reserveCapacity(scalars.count)
            for scalar in scalars { Self.appendUTF8(scalar, to: &utf8) }
            Self.appendVarint(UInt64(utf8.count), to: &bytes)
            bytes.append(contentsOf: utf8)
        }
        var ordered: [Int32] = []
        for chunk in order { ordered.append(contentsOf: chunks[Int(chunk)].runs) }
        Self.appendVarint(UInt64(ordered.count), to: &bytes)
        for index in ordered {
            let run = runs[Int(index)]
            Self.appendVarint(UInt64(run.replica), to: &bytes)
            Self.appendVarint(UInt64(run.seq), to: &bytes)
            Self.appendVarint(UInt64(run.count), to: &bytes)
            let flags: UInt8 = (run.deleted ? 1 : 0) | (run.originLeft.isNone ? 0 : 2) | (run.originRight.isNone ? 0 : 4)
            bytes.append(flags)
            for origin in [run.originLeft, run.originRight] where !origin.isNone {
                Self.appendVarint(UInt64(origin.replica), to: &bytes)
                Self.appendVarint(UInt64(origin.seq), to: &bytes)
            }
        }
        let pending = pendingDeletions.sorted { $0.key < $1.key }.flatMap(\.value)
        Self.appendVarint(UInt64(pending.count), to: &bytes)
        for deletion in pending {
            Self.appendFixed(deletion.start.replica, to: &bytes)
            Self.appendVarint(UInt64(deletion.start.seq), to: &bytes)
            Self.appendVarint(UInt64(deletion.count), to: &bytes)
        }
        return bytes
    }

    /// Reads a state ``encoded()`` wrote.
    ///
    /// - Throws: ``Failure/malformedState(_:)`` naming what does not fit (a truncated or altered
    ///   state, or a format this version does not know).
    public init(encoded bytes: some Collection<UInt8>) throws {
        self.init()
        var reader = ByteReader(bytes: Array(bytes))
        guard let format = reader.byte(), format == Self.codingFormat else {
            throw Failure.malformedState("format \(bytes.first.map(String.init) ?? "missing") is not \(Self.codingFormat)")
        }
        let replicaCount = try reader.count("replicas", limit: 1 << 24)
        for _ in 0..<replicaCount {
            let replica = try reader.fixed("a replica")
            guard replicaIndex[replica] == nil else { throw Failure.malformedState("replica \(replica) twice") }
            _ = index(of: replica)
        }
        for replica in 0..<replicaCount {
            let length = try reader.count("scalars", limit: reader.remaining)
            let utf8 = try reader.take(length, "scalars")
            var scalars = ContiguousArray<Unicode.Scalar>()
            var decoder = UTF8()
            var iterator = utf8.makeIterator()
            decoding: while true {
                switch decoder.decode(&iterator) {
                case let .scalarValue(scalar): scalars.append(scalar)
                case .emptyInput: break decoding
                case .error: throw Failure.malformedState("the scalars of replica \(replica) are not UTF-8")
                }
            }
            content[replica] = scalars
        }
        let runCount = try reader.count("runs", limit: reader.remaining)
        var chunk = -1
        for _ in 0..<runCount {
            let replica = try reader.count("a run's replica", limit: replicaCount - 1)
            let seq = try reader.count("a run's sequence number", limit: Int(UInt32.max))
            let count = try reader.count("a run's length", limit: content[replica].count - seq)
            guard count > 0 else { throw Failure.malformedState("an empty run") }
            guard let flags = reader.byte(), flags < 8 else { throw Failure.malformedState("a run's flags") }
            var origins: [PackedTextID] = []
            for bit: UInt8 in [2, 4] {
                if flags & bit == 0 {
                    origins.append(.none)
                } else {
                    let originReplica = try reader.count("an origin's replica", limit: replicaCount - 1)
                    let originSeq = try reader.count("an origin's sequence number", limit: Int(UInt32.max))
                    origins.append(PackedTextID(replica: UInt32(originReplica), seq: UInt32(originSeq)))
                }
            }
            if chunk < 0 || chunks[chunk].runs.count >= Self.chunkCapacity / 2 {
                appendChunk()
                chunk = chunks.count - 1
            }
            let run = Run(
                replica: UInt32(replica), seq: UInt32(seq), count: UInt32(count), originLeft: origins[0], originRight: origins[1],
                deleted: flags & 1 != 0, chunk: 0, next: -1)
            let index = insert(run, chunk: chunk, slot: chunks[chunk].runs.count)
            starts[replica].append((UInt32(seq), index))
        }
        // Each run is found by its own start; every sequence number is held once.
        for replica in starts.indices { starts[replica].sort { $0.seq < $1.seq } }
        for list in starts {
            for (earlier, later) in zip(list, list.dropFirst()) where earlier.seq + runs[Int(earlier.run)].count > later.seq {
                throw Failure.malformedState("a sequence number held twice")
            }
        }
        let pendingCount = try reader.count("pending deletions", limit: reader.remaining)
        for _ in 0..<pendingCount {
            let replica = try reader.fixed("a deletion's replica")
            let seq = try reader.count("a deletion's sequence number", limit: Int(UInt32.max))
            let count = try reader.count("a deletion's length", limit: Int(UInt32.max) - seq)
            pendingDeletions[replica, default: []].append(
                TextOperation.Deletion(start: TextID(replica: replica, seq: UInt32(seq)), count: UInt32(count)))
        }
        guard reader.remaining == 0 else { throw Failure.malformedState("\(reader.remaining) bytes after the state") }
        cursor = nil
    }

    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    static func appendFixed(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

/// Reads a state's bytes in order; every read checks what is left.
struct ByteReader {
    let bytes: [UInt8]
    var offset = 0

    var remaining: Int { bytes.count - offset }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func take(_ count: Int, _ what: String) throws -> ArraySlice<UInt8> {
        guard count <= remaining else { throw TextDocument.Failure.malformedState("\(what): truncated") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func fixed(_ what: String) throws -> UInt64 {
        let slice = try take(8, what)
        return slice.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A varint no larger than `limit`.
    mutating func count(_ what: String, limit: Int) throws -> Int {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard let byte = byte(), shift < 64 else { throw TextDocument.Failure.malformedState("\(what): truncated") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        guard limit >= 0, value <= UInt64(limit) else { throw TextDocument.Failure.malformedState("\(what): \(value) is out of range") }
        return Int(value)
    }
}
