/// A merged set as the server keeps it: an observed-remove set sequenced by the server.
///
/// Each element holds one tag per client that added it: the server version at which that
/// client last added it (and its place among the adds of that change). A client's remove drops
/// the tags it had observed: those at or below the version its save was based on, and its own
/// (one client's mutations apply in order, so it saw its own earlier adds). Tags it had not
/// observed (a concurrent add by another client) stay, and so does the element: an add wins
/// over a concurrent remove.
///
/// ```swift
/// var readBy = SetState()
/// readBy.apply(adds: ["\"bob\""], removes: [], client: "phone", version: 3, seen: 2)
/// readBy.apply(adds: ["\"carol\""], removes: [], client: "laptop", version: 4, seen: 2)
/// readBy.elements  // ["\"bob\"", "\"carol\""]: both kept, in the order the server took them
/// ```
///
/// The value's order is the same for every replica: ascending by each element's first live tag.
public struct SetState: Hashable, Sendable, Codable {
    /// Where an add took place: the server version of the change, the element's place among
    /// that change's adds, and the id of the client's mutation that made it.
    public struct Tag: Hashable, Sendable, Comparable, Codable {
        /// The server version at which the element was added.
        public var version: Int64
        /// The element's position among the adds of that change.
        public var index: Int64
        /// The id of the adding client's mutation (nil: not recorded, for tags stored before
        /// it was, and for values taken over from before the field merged).
        public var mutation: Int64?

        /// Makes a tag.
        public init(version: Int64, index: Int64, mutation: Int64? = nil) {
            self.version = version
            self.index = index
            self.mutation = mutation
        }

        /// Ascending by version, then by place among the change's adds.
        public static func < (lhs: Tag, rhs: Tag) -> Bool { (lhs.version, lhs.index) < (rhs.version, rhs.index) }

        /// A tag's stored form is `[version, index]` or `[version, index, mutation]`.
        public init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            version = try container.decode(Int64.self)
            index = try container.decode(Int64.self)
            mutation = container.isAtEnd ? nil : try container.decode(Int64.self)
        }

        /// Writes `[version, index]`, or `[version, index, mutation]` when the mutation is known.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(version)
            try container.encode(index)
            if let mutation { try container.encode(mutation) }
        }
    }

    /// Per element (its canonical JSON text), the tag of each client that added it.
    public private(set) var tags: [String: [String: Tag]]

    /// A set with these tags (elements without tags are left out).
    public init(tags: [String: [String: Tag]] = [:]) {
        self.tags = tags.filter { !$0.value.isEmpty }
    }

    /// A set whose elements `elements` were all added by `client` at `version`, in order (a
    /// value written before the field merged, taken over as that client's adds).
    public init(elements: [String], client: String, version: Int64) {
        self.init()
        apply(adds: elements, removes: [], client: client, version: version, seen: nil)
    }

    /// The elements, ascending by their first live tag (ties by their UTF-8 bytes).
    public var elements: [String] {
        var keyed: [(tag: Tag, element: String)] = []
        keyed.reserveCapacity(tags.count)
        for (element, clients) in tags {
            guard let first = clients.values.min() else { continue }
            keyed.append((first, element))
        }
        keyed.sort { $0.tag != $1.tag ? $0.tag < $1.tag : SetElements.precedes($0.element, $1.element) }
        return keyed.map(\.element)
    }

    /// Its stored form is the tags, `{element: {client: [version, index]}}`.
    public init(from decoder: any Decoder) throws {
        self.init(tags: try decoder.singleValueContainer().decode([String: [String: Tag]].self))
    }

    /// Writes the tags, `{element: {client: [version, index]}}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(tags)
    }

    /// How many elements it holds.
    public var count: Int { tags.count }

    /// Applies one change of `client`, given server version `version`, based on the record at
    /// version `seen` (nil: unknown, so that only the client's own tags are observed): removes
    /// first, then adds. Returns whether the tags changed.
    ///
    /// - Parameters:
    ///   - mutation: The id of the client's mutation the change belongs to, recorded in its
    ///     adds' tags.
    ///   - predecessors: The client ids the same installation pushed under before it took
    ///     `client`, each with the last mutation id processed under it. The adds of those
    ///     mutations count as the installation's own, so its removes drop their tags as they
    ///     drop its current id's, whatever version they were based on.
    @discardableResult
    public mutating func apply(
        adds: [String], removes: [String], client: String, version: Int64, seen: Int64?, mutation: Int64? = nil,
        predecessors: [String: Int64] = [:]
    ) -> Bool {
        let before = tags
        for element in removes {
            guard let clients = tags[element] else { continue }
            let kept = clients.filter { tag in
                guard tag.key != client, tag.value.version > (seen ?? Int64.min) else { return false }
                if let through = predecessors[tag.key], let made = tag.value.mutation, made <= through { return false }
                return true
            }
            tags[element] = kept.isEmpty ? nil : kept
        }
        for (index, element) in SetElements.unique(adds).enumerated() {
            tags[element, default: [:]][client] = Tag(version: version, index: Int64(index), mutation: mutation)
        }
        return tags != before
    }
}
