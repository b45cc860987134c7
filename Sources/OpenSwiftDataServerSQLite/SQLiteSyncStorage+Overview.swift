import Foundation
import GRDB
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol

// The admin console's operations on the SQLite storage: a bounded overview of what is stored,
// and the epoch's rotation while the server runs.
extension SQLiteSyncStorage {
    package func overview(_ limits: OverviewLimits) async throws -> StorageOverview {
        try await read { db in
            guard let epoch = try String.fetchOne(db, sql: "SELECT CAST(value AS TEXT) FROM osd_metadata WHERE key = 'epoch'") else {
                throw SyncServiceError(500, .internalError, "the database has no epoch")
            }
            let (head, horizon, _) = try Self.headRow(db)
            let cap = max(limits.countCap, limits.scopes)
            // The scopes holding live records and the granted ones: skip scans of the indexes
            // that lead with the scope, one seek per name.
            let recordScopes = try Self.skipScan(
                db, sql: "SELECT scope FROM osd_records WHERE deleted = 0 AND scope > ? ORDER BY scope LIMIT 1", cap + 1)
            let grantedScopes = try Self.skipScan(db, sql: "SELECT scope FROM osd_grants WHERE scope > ? ORDER BY scope LIMIT 1", cap + 1)
            let claimedScopes = try String.fetchAll(db, sql: "SELECT scope FROM osd_scopes ORDER BY scope LIMIT ?", arguments: [cap + 1])
            let (names, scopeCount) = StorageOverview.mergeScopeNames(
                [recordScopes, grantedScopes, claimedScopes], limit: limits.scopes, cap: cap)
            var scopes: [ScopeOverview] = []
            for name in names {
                let scope = ScopeID(rawValue: name)
                let owner = try String.fetchOne(db, sql: "SELECT owner FROM osd_scopes WHERE scope = ?", arguments: [name]) ?? scope.privateOwner
                let members = try String.fetchAll(
                    db, sql: "SELECT user FROM osd_grants WHERE scope = ? ORDER BY user LIMIT ?", arguments: [name, limits.members])
                var memberCount = BoundedCount(value: members.count)
                if members.count >= limits.members {
                    memberCount = BoundedCount(
                        counted: try Self.count(db, sql: "SELECT 1 FROM osd_grants WHERE scope = ?", [name], cap: limits.countCap),
                        cap: limits.countCap)
                }
                let records = try Self.count(
                    db, sql: "SELECT 1 FROM osd_records WHERE scope = ? AND deleted = 0", [name], cap: limits.recordCountCap)
                scopes.append(
                    ScopeOverview(
                        scope: scope, owner: owner, members: members, memberCount: memberCount,
                        records: BoundedCount(counted: records, cap: limits.recordCountCap)))
            }
            var clients: [ClientOverview] = []
            for row in try Row.fetchAll(
                db, sql: "SELECT client_id, user, last_mutation_id, last_seen_at FROM osd_clients ORDER BY last_seen_at DESC, client_id DESC LIMIT ?",
                arguments: [limits.clients])
            {
                clients.append(
                    ClientOverview(
                        clientID: try row.decode(atIndex: 0), user: try row.decode(atIndex: 1), lastMutationID: try row.decode(atIndex: 2),
                        lastPushAt: try row.decode(atIndex: 3)))
            }
            let clientCount = try Self.count(db, sql: "SELECT 1 FROM osd_clients", [], cap: limits.countCap)
            return StorageOverview(
                epoch: epoch, head: head, horizon: horizon, scopes: scopes, scopeCount: scopeCount, clients: clients,
                clientCount: BoundedCount(counted: clientCount, cap: limits.countCap))
        }
    }

    package func rotateEpoch(expecting expected: String?) async throws -> EpochChange {
        let current = UUID().uuidString
        return try await write { db in
            guard let previous = try String.fetchOne(db, sql: "SELECT CAST(value AS TEXT) FROM osd_metadata WHERE key = 'epoch'") else {
                throw SyncServiceError(500, .internalError, "the database has no epoch")
            }
            if let expected, expected != previous { throw SyncServiceError.epochMoved(stored: previous, expected: expected) }
            try db.execute(sql: "UPDATE osd_metadata SET value = ? WHERE key = 'epoch'", arguments: [current])
            return EpochChange(previous: previous, current: current)
        }
    }

    /// The first `limit` distinct names a statement of the form `… WHERE scope > ? ORDER BY scope
    /// LIMIT 1` walks to, one seek each.
    private static func skipScan(_ db: Database, sql: String, _ limit: Int) throws -> [String] {
        let statement = try db.cachedStatement(sql: sql)
        var names: [String] = []
        var after = ""
        while names.count < limit, let name = try String.fetchOne(statement, arguments: [after]) {
            names.append(name)
            after = name
        }
        return names
    }

    /// The rows of `SELECT 1 …` (`sql`), counted up to `cap + 1` (see `BoundedCount`).
    private static func count(_ db: Database, sql: String, _ arguments: StatementArguments, cap: Int) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(sql) LIMIT ?)", arguments: arguments + [cap + 1]) ?? 0
    }
}
