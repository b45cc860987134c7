import OpenSwiftDataSyncProtocol

/// How much of the stored state an overview reads: lists stop at their limit and counts at
/// ``countCap``, so that reading one costs the same on a database of any size.
package struct OverviewLimits: Sendable, Hashable {
    /// The scopes listed (in name order).
    package var scopes: Int
    /// The members listed per scope (in name order).
    package var members: Int
    /// The clients listed (the most recently seen first).
    package var clients: Int
    /// Where the counts of scopes, members and clients stop.
    package var countCap: Int
    /// Where the count of a scope's live records stops.
    package var recordCountCap: Int

    /// Makes limits; the defaults fit a page read every second.
    package init(scopes: Int = 50, members: Int = 20, clients: Int = 50, countCap: Int = 1_000, recordCountCap: Int = 10_000) {
        self.scopes = max(1, scopes)
        self.members = max(1, members)
        self.clients = max(1, clients)
        self.countCap = max(1, countCap)
        self.recordCountCap = max(1, recordCountCap)
    }
}

/// A count that stops at a cap: `value` exactly, or at least `value` when `capped`.
package struct BoundedCount: Sendable, Hashable, Codable {
    /// The rows counted.
    package var value: Int
    /// Whether counting stopped at the cap (there are at least ``value``).
    package var capped: Bool

    /// Makes a count of `counted` rows, counted up to `cap + 1` (`LIMIT cap + 1`): more than
    /// `cap` reads as "at least `cap`".
    package init(counted: Int, cap: Int) {
        value = min(counted, cap)
        capped = counted > cap
    }

    /// Makes a count: `value` exactly, or at least `value` when `capped`.
    package init(value: Int, capped: Bool = false) {
        self.value = value
        self.capped = capped
    }
}

/// One scope as an overview lists it.
package struct ScopeOverview: Sendable, Hashable {
    /// The scope.
    package var scope: ScopeID
    /// Its owner: the user who claimed it, or the user of a private scope (nil: unclaimed).
    package var owner: String?
    /// The first members, in name order.
    package var members: [String]
    /// How many members it has.
    package var memberCount: BoundedCount
    /// How many live records (not tombstones) it holds.
    package var records: BoundedCount

    /// Makes a scope's overview.
    package init(scope: ScopeID, owner: String?, members: [String], memberCount: BoundedCount, records: BoundedCount) {
        self.scope = scope
        self.owner = owner
        self.members = members
        self.memberCount = memberCount
        self.records = records
    }
}

/// One client as an overview lists it.
package struct ClientOverview: Sendable, Hashable {
    /// The client's id.
    package var clientID: ClientID
    /// The user it belongs to.
    package var user: String
    /// The last mutation id the server processed for it.
    package var lastMutationID: MutationID
    /// When its last push was processed, in milliseconds since 1970 (0: before the server
    /// kept it).
    package var lastPushAt: Int64

    /// Makes a client's overview.
    package init(clientID: ClientID, user: String, lastMutationID: MutationID, lastPushAt: Int64) {
        self.clientID = clientID
        self.user = user
        self.lastMutationID = lastMutationID
        self.lastPushAt = lastPushAt
    }
}

/// What a storage holds, in bounds (``OverviewLimits``), read in one consistent snapshot: for
/// the admin console.
package struct StorageOverview: Sendable, Hashable {
    /// The stored epoch (a server reads it when it starts; see ``SyncService/epoch``).
    package var epoch: String
    /// The last sequence number of the log.
    package var head: ServerVersion
    /// Log entries at or below it were compacted away.
    package var horizon: ServerVersion
    /// The first scopes in name order: those holding live records, claimed ones and granted
    /// ones.
    package var scopes: [ScopeOverview]
    /// How many scopes there are in all.
    package var scopeCount: BoundedCount
    /// The most recently seen clients (by their last push).
    package var clients: [ClientOverview]
    /// How many clients there are in all.
    package var clientCount: BoundedCount

    /// Makes an overview.
    package init(
        epoch: String, head: ServerVersion, horizon: ServerVersion, scopes: [ScopeOverview], scopeCount: BoundedCount, clients: [ClientOverview],
        clientCount: BoundedCount
    ) {
        self.epoch = epoch
        self.head = head
        self.horizon = horizon
        self.scopes = scopes
        self.scopeCount = scopeCount
        self.clients = clients
        self.clientCount = clientCount
    }

    /// The first `limit` names of the union of lists of scope names, each the first
    /// `cap + 1` names of its source in name order (`cap` at least `limit`), and how many
    /// names the sources hold in all (at least the union's, when a list reached `cap + 1`).
    package static func mergeScopeNames(_ lists: [[String]], limit: Int, cap: Int) -> (names: [String], count: BoundedCount) {
        let union = Set(lists.joined()).sorted()
        return (Array(union.prefix(limit)), BoundedCount(value: union.count, capped: lists.contains { $0.count > cap }))
    }
}
