import Foundation
import GRDB
import OpenSwiftDataSyncProtocol

extension SyncValueKind {
    /// The kind of a stored property's codec, or nil for properties that do not sync as a value
    /// (relationships without a column of their own). A raw-value enum syncs as its raw value.
    init?(codec: ValueCodec) {
        switch codec.kind {
        case .bool: self = .bool
        case .integer: self = .int
        case .double: self = .double
        case .string: self = .string
        case .date: self = .date
        case .data: self = .data
        case .uuid: self = .uuid
        case .decimal: self = .decimal
        case .url: self = .url
        case .json: self = .json
        case .foreignKey: self = .reference
        case .relationship: return nil
        }
    }
}

/// A value in the form SQLite stores it: what a column holds, bit for bit. The same value the
/// History log records (``HistoryValue``): one type, so the two logs cannot drift apart.
package typealias SyncStoredValue = HistoryValue

/// One field's value as the sync log records it and a remote batch carries it: the stored form
/// and the kind the schema gives it, so the other side writes it into its column unchanged.
package struct SyncFieldValue: Sendable, Hashable, Codable {
    /// The declared kind of the field.
    public var kind: SyncValueKind
    /// The stored form.
    public var stored: SyncStoredValue

    /// A value of a kind in its stored form.
    public init(kind: SyncValueKind, stored: SyncStoredValue) {
        self.kind = kind
        self.stored = stored
    }

    /// A reference to another record by its record id (nil: no related record).
    public static func reference(_ recordID: String?) -> SyncFieldValue {
        SyncFieldValue(kind: .reference, stored: recordID.map { .text($0) } ?? .null)
    }

    /// Whether the stored form is one that a column of this kind can hold (NULL aside).
    var storedFormFitsKind: Bool {
        switch (kind, stored) {
        case (_, .null): return true
        case (.bool, .integer), (.int, .integer): return true
        case (.double, .real), (.date, .real): return true
        // SQLite keeps integral REAL values as integers on disk; a REAL column reads them back.
        case (.double, .integer), (.date, .integer): return true
        case (.string, .text), (.decimal, .text), (.url, .text), (.json, .text), (.reference, .text): return true
        case (.data, .blob): return true
        case let (.uuid, .blob(data)): return data.count == 16
        default: return false
        }
    }
}

/// One named field of a change.
package struct SyncField: Sendable, Hashable, Codable {
    /// The property's name.
    public var name: String
    /// Its value.
    public var value: SyncFieldValue

    /// A named value.
    public init(name: String, value: SyncFieldValue) {
        self.name = name
        self.value = value
    }
}

/// The links a change adds to and removes from one many-to-many relationship, by the related
/// records' ids.
package struct SyncLinkChange: Sendable, Hashable, Codable {
    /// The relationship's name (on the side that owns the join table).
    public var relationship: String
    /// The record ids linked by the change.
    public var added: [String]
    /// The record ids unlinked by the change.
    public var removed: [String]
    /// Nil for a change of some links; else `added` is the relationship's whole set (a pulled
    /// insert's), and every other linked record is unlinked too, except those listed here (the
    /// links local edits still hold).
    public var replacingExcept: [String]?

    /// Additions and removals of one relationship.
    public init(relationship: String, added: [String] = [], removed: [String] = [], replacingExcept: [String]? = nil) {
        self.relationship = relationship
        self.added = added
        self.removed = removed
        self.replacingExcept = replacingExcept
    }
}

extension SyncStoredValue {
    /// The canonical text of a record id taken from a unique attribute's stored value: text as
    /// is, integers in decimal, UUIDs in their usual form, other blobs in lowercase hex, reals in
    /// Swift's shortest round-tripping form. Nil for NULL.
    func canonicalRecordID(kind: SyncValueKind) -> String? {
        switch self {
        case .null: return nil
        case let .integer(integer): return String(integer)
        case let .real(double): return "\(double)"
        case let .text(text): return text
        case let .blob(data):
            if kind == .uuid, data.count == 16 {
                var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                withUnsafeMutableBytes(of: &bytes) { $0.copyBytes(from: data) }
                return RandomRecordID.format(UUID(uuid: bytes))
            }
            return data.map { String(format: "%02x", $0) }.joined()
        }
    }
}
