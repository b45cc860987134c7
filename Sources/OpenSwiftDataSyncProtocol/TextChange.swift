import Foundation

/// What one save did to a merged text (``FieldMerge/text(_:)``): the runs of characters it
/// inserted and the ranges it deleted, named by identity rather than by position, so that the
/// change applies the same on every replica whatever else was edited concurrently.
///
/// Every Unicode scalar ever inserted into the text has an identity, `"<replica>.<seq>"`: the
/// 16 hexadecimal digits of the inserting replica (a random 64-bit number drawn per editing
/// session of a device) and the scalar's sequence number there. An insertion names its first
/// scalar's identity (the others follow by sequence number), the scalar it was typed after
/// (`left`, null at the start) and the one that followed the insertion point then (`right`,
/// null at the end), deleted or not:
///
/// ```json
/// "merge": {"body": {"text": {
///   "ins": [["00000000075bcd15.0", null, null, "Hello"], ["00000000075bcd15.5", "00000000075bcd15.4", null, "!"]],
///   "del": [["00000000075bcd15.1", 2]]
/// }}}
/// ```
///
/// A deletion names the first scalar removed and how many consecutive sequence numbers of that
/// replica go with it.
public struct TextChange: Hashable, Sendable, Codable {
    /// A run of scalars inserted together.
    public struct Insertion: Hashable, Sendable, Codable {
        /// The identity of the first scalar (`"<16 hex digits>.<seq>"`).
        public var id: String
        /// The scalar it was typed after (nil: the start of the text).
        public var left: String?
        /// The scalar that followed the insertion point (nil: the end of the text).
        public var right: String?
        /// The inserted scalars, in order.
        public var content: String

        /// Makes an insertion.
        public init(id: String, left: String?, right: String?, content: String) {
            self.id = id
            self.left = left
            self.right = right
            self.content = content
        }

        /// Reads `[id, left|null, right|null, content]`.
        public init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            id = try container.decode(String.self)
            left = try container.decodeIfPresent(String.self)
            right = try container.decodeIfPresent(String.self)
            content = try container.decode(String.self)
            guard container.isAtEnd else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "an insertion is [id, left, right, content]")
            }
        }

        /// Writes `[id, left|null, right|null, content]`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(id)
            if let left { try container.encode(left) } else { try container.encodeNil() }
            if let right { try container.encode(right) } else { try container.encodeNil() }
            try container.encode(content)
        }
    }

    /// A range of one replica's consecutive sequence numbers, removed.
    public struct Deletion: Hashable, Sendable, Codable {
        /// The identity of the first scalar removed.
        public var start: String
        /// How many consecutive sequence numbers of that replica, from `start`'s.
        public var count: UInt32

        /// Makes a deletion.
        public init(start: String, count: UInt32) {
            self.start = start
            self.count = count
        }

        /// Reads `[start, count]`.
        public init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            start = try container.decode(String.self)
            count = try container.decode(UInt32.self)
            guard container.isAtEnd else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "a deletion is [start, count]")
            }
        }

        /// Writes `[start, count]`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(start)
            try container.encode(count)
        }
    }

    /// The runs inserted, applied in order.
    public var insertions: [Insertion]
    /// The ranges deleted, applied after the insertions.
    public var deletions: [Deletion]

    /// Makes a text's contribution.
    public init(insertions: [Insertion] = [], deletions: [Deletion] = []) {
        self.insertions = insertions
        self.deletions = deletions
    }

    /// Whether it inserts and deletes nothing.
    public var isEmpty: Bool { insertions.isEmpty && deletions.isEmpty }

    private enum CodingKeys: String, CodingKey {
        case insertions = "ins"
        case deletions = "del"
    }

    /// Reads `{"ins": [...], "del": [...]}`; a missing member is empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        insertions = try container.decodeIfPresent([Insertion].self, forKey: .insertions) ?? []
        deletions = try container.decodeIfPresent([Deletion].self, forKey: .deletions) ?? []
    }
}
