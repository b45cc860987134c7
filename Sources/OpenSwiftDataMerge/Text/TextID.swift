/// The identity of one Unicode scalar ever inserted into a merged text: the replica that inserted
/// it and its sequence number there.
///
/// A replica is one editing session of one device (a random 64-bit number drawn when the store
/// opens), so two devices, or a device and its restored backup, never mint the same identity.
/// Sequence numbers count the scalars a replica inserted, from 0, without reuse.
public struct TextID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The replica that inserted the scalar.
    public var replica: UInt64
    /// The scalar's sequence number in its replica.
    public var seq: UInt32

    /// Makes an identity.
    public init(replica: UInt64, seq: UInt32) {
        self.replica = replica
        self.seq = seq
    }

    /// Orders by replica, then sequence number (the tie-break of concurrent insertions).
    public static func < (lhs: TextID, rhs: TextID) -> Bool {
        (lhs.replica, lhs.seq) < (rhs.replica, rhs.seq)
    }

    /// `<16 hex digits of the replica>.<seq>`, as the sync protocol writes it.
    public var description: String {
        let hex = String(replica, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + "." + String(seq)
    }

    /// Reads the form ``description`` writes (nil: not that form).
    public init?(_ text: Substring) {
        guard let dot = text.firstIndex(of: "."), text.distance(from: text.startIndex, to: dot) == 16,
            let replica = UInt64(text[..<dot], radix: 16), let seq = UInt32(text[text.index(after: dot)...])
        else { return nil }
        self.init(replica: replica, seq: seq)
    }
}

/// A ``TextID`` inside one document: the replica's index in the document's table in the high 32
/// bits, the sequence number in the low 32 (`none`: no identity, as for an insertion at an end).
struct PackedTextID: Hashable {
    var raw: UInt64

    static let none = PackedTextID(raw: .max)

    init(raw: UInt64) { self.raw = raw }

    init(replica: UInt32, seq: UInt32) { raw = UInt64(replica) << 32 | UInt64(seq) }

    var isNone: Bool { raw == .max }
    var replica: UInt32 { UInt32(truncatingIfNeeded: raw >> 32) }
    var seq: UInt32 { UInt32(truncatingIfNeeded: raw) }
}
