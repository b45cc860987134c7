import Foundation

/// A record's identity across every device and the server: stable for the record's life,
/// independent of any local SQLite key. For an entity with a single `.unique` attribute it is
/// that attribute's canonical text; otherwise a UUID string given when the model is first
/// inserted.
public typealias RecordID = String

/// The name an entity or field travels under. It never changes when the model is renamed
/// locally (it is the original name, or one set explicitly).
public typealias SyncName = String

/// A unit of authorization and partial sync, written `kind:id` (`user:alice`,
/// `conversation:c17`). `user:<id>` is that user's private scope; any other scope is owned by
/// the user who first writes into it, who may grant it to others.
public struct ScopeID: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The scope's text, `kind:id`.
    public var rawValue: String

    /// Makes a scope from its text.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Makes a scope from its text.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// The private scope of a user.
    public static func user(_ userID: String) -> ScopeID { ScopeID(rawValue: "user:\(userID)") }

    /// Whether the text is a well-formed scope: `kind:id`, the kind made of ASCII letters,
    /// digits, `-` and `_`, the id non-empty, at most 256 bytes in all, no control characters.
    public var isWellFormed: Bool {
        let utf8 = rawValue.utf8
        guard utf8.count <= 256, let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let kind = utf8[..<colon]
        let id = utf8[utf8.index(after: colon)...]
        guard !kind.isEmpty, !id.isEmpty else { return false }
        let kindOK = kind.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        return kindOK && !id.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// The user whose private scope this is, or nil when it is a shared scope.
    public var privateOwner: String? {
        rawValue.hasPrefix("user:") ? String(rawValue.dropFirst(5)) : nil
    }

    public static func < (lhs: ScopeID, rhs: ScopeID) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// A client installation's identity: one per device (and per signed-in user on it). Its
/// mutation ids grow by exactly one.
public typealias ClientID = String

/// A mutation's number within its client: the first is 1, each next one is one more.
public typealias MutationID = Int64

/// A position in the server's change log: every server-side change has one, and they grow in
/// commit order.
public typealias ServerVersion = Int64
