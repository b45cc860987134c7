import OpenSwiftDataSyncProtocol

/// A user's access to a scope, decided from the scope's record alone.
enum ScopeAccessLevel: Equatable {
    /// Owns it: reads, writes, grants.
    case owner
    /// Was granted it as a writer: reads and writes.
    case member
    /// Was granted it as a reader: reads only.
    case reader
    /// Nobody claimed it yet and it is not a private scope: the first write claims it.
    case unclaimed
    /// No access.
    case none

    /// Whether the user may read it.
    var canRead: Bool { self == .owner || self == .member || self == .reader }

    /// The access of `user` to `scope`, given its record (nil when unclaimed).
    static func of(_ user: String, to scope: ScopeID, record: ScopeRecord?) -> ScopeAccessLevel {
        if scope.privateOwner == user { return .owner }
        if let record {
            if record.owner == user { return .owner }
            switch record.members[user] {
            case .writer: return .member
            case .reader: return .reader
            case nil: return .none
            }
        }
        return scope.privateOwner == nil ? .unclaimed : .none
    }
}

extension ScopeRecord {
    /// The record of a private scope nobody has granted yet.
    static func implicit(_ scope: ScopeID) -> ScopeRecord? {
        scope.privateOwner.map { ScopeRecord(scope: scope, owner: $0) }
    }
}
