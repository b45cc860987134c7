/// One link of a record: a many-to-many relationship and the record id it links to.
/// Ordered by relationship, then target.
struct SyncLinkKey: Hashable, Comparable {
    var relationship: String
    var target: String

    static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.relationship, lhs.target) < (rhs.relationship, rhs.target)
    }
}

/// What a shadow (or a pending mutation's mask) is about, within one record: its existence, a
/// field, one link, or a relationship's whole set of links.
///
/// The shadows table stores it as text (``storageKey``), read back by ``init(storageKey:)``:
/// the only two places that know that text.
enum SyncShadowPart: Hashable {
    /// Whether the record exists.
    case record
    /// A field, by its sync name.
    case field(String)
    /// One link.
    case link(SyncLinkKey)
    /// A relationship's whole set of linked record ids (a pulled insert's links).
    case linkSet(relationship: String)

    /// Whether it is one link.
    var isLink: Bool {
        if case .link = self { return true }
        return false
    }

    /// Whether it is one link of `relationship`.
    func isLink(of relationship: String) -> Bool {
        if case let .link(link) = self { return link.relationship == relationship }
        return false
    }

    /// A link of `relationship` to `target`.
    static func link(_ relationship: String, _ target: String) -> Self { .link(SyncLinkKey(relationship: relationship, target: target)) }

    /// The text the shadows table stores: `#record`, `f:<field>`, `l:<relationship>␟<target>`
    /// (U+001F between them) or `s:<relationship>`.
    var storageKey: String {
        switch self {
        case .record: "#record"
        case let .field(name): "f:" + name
        case let .link(link): "l:" + link.relationship + "\u{1F}" + link.target
        case let .linkSet(relationship): "s:" + relationship
        }
    }

    /// The part a stored key names, or nil for text that names none.
    init?(storageKey key: String) {
        if key == "#record" {
            self = .record
        } else if key.hasPrefix("f:") {
            self = .field(String(key.dropFirst(2)))
        } else if key.hasPrefix("s:") {
            self = .linkSet(relationship: String(key.dropFirst(2)))
        } else if key.hasPrefix("l:") {
            let parts = key.dropFirst(2).split(separator: "\u{1F}", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            self = .link(String(parts[0]), String(parts[1]))
        } else {
            return nil
        }
    }
}
