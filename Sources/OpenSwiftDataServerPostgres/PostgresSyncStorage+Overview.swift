import Foundation
import Logging
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import PostgresNIO

// The admin console's operations on the PostgreSQL storage: a bounded overview of what is
// stored, and the epoch's rotation while the servers run.
extension PostgresSyncStorage {
    package func overview(_ limits: OverviewLimits) async throws -> StorageOverview {
        try await readTransaction { [self] connection in
            var epoch: String?
            for try await value in try await connection.checkedQuery("SELECT value FROM osd_metadata WHERE key = 'epoch'", logger: logger).decode(
                String.self)
            {
                epoch = value
            }
            guard let epoch else { throw SyncServiceError(500, .internalError, "the database has no epoch") }
            let head = try await HeadRow.read(connection, logger)
            let cap = max(limits.countCap, limits.scopes)
            // Every count and list reads one row more than its cap, to tell "exactly" from "at least".
            let listed = Int64(cap + 1)
            // The scopes holding live records and the granted ones: loose index scans (a
            // recursive query, one index seek per name) of the indexes that lead with the scope.
            let recordScopes = try await strings(
                connection,
                """
                WITH RECURSIVE s(scope) AS (
                    (SELECT scope FROM osd_records WHERE NOT deleted ORDER BY scope LIMIT 1)
                    UNION ALL
                    SELECT (SELECT r.scope FROM osd_records r WHERE NOT r.deleted AND r.scope > s.scope ORDER BY r.scope LIMIT 1)
                    FROM s WHERE s.scope IS NOT NULL)
                SELECT scope FROM s WHERE scope IS NOT NULL LIMIT \(listed)
                """)
            let grantedScopes = try await strings(
                connection,
                """
                WITH RECURSIVE s(scope) AS (
                    (SELECT scope FROM osd_grants ORDER BY scope LIMIT 1)
                    UNION ALL
                    SELECT (SELECT g.scope FROM osd_grants g WHERE g.scope > s.scope ORDER BY g.scope LIMIT 1)
                    FROM s WHERE s.scope IS NOT NULL)
                SELECT scope FROM s WHERE scope IS NOT NULL LIMIT \(listed)
                """)
            let claimedScopes = try await strings(connection, "SELECT scope FROM osd_scopes ORDER BY scope LIMIT \(listed)")
            let (names, scopeCount) = StorageOverview.mergeScopeNames(
                [recordScopes, grantedScopes, claimedScopes], limit: limits.scopes, cap: cap)
            var owners: [String: String] = [:]
            var members: [String: [String]] = [:]
            var memberCounts: [String: Int] = [:]
            var recordCounts: [String: Int] = [:]
            if !names.isEmpty {
                for try await (scope, owner) in try await connection.checkedQuery(
                    "SELECT scope, owner FROM osd_scopes WHERE scope = ANY(\(names)::text[])", logger: logger
                ).decode((String, String).self) {
                    owners[scope] = owner
                }
                for try await (scope, user) in try await connection.checkedQuery(
                    """
                    SELECT n.scope, g.user_id FROM unnest(\(names)::text[]) AS n(scope)
                    CROSS JOIN LATERAL (SELECT user_id FROM osd_grants WHERE scope = n.scope ORDER BY user_id LIMIT \(Int64(limits.members))) g
                    ORDER BY n.scope, g.user_id
                    """, logger: logger
                ).decode((String, String).self) {
                    members[scope, default: []].append(user)
                }
                for try await (scope, granted, records) in try await connection.checkedQuery(
                    """
                    SELECT n.scope,
                        (SELECT COUNT(*) FROM (SELECT 1 FROM osd_grants WHERE scope = n.scope LIMIT \(Int64(limits.countCap + 1))) g),
                        (SELECT COUNT(*) FROM (SELECT 1 FROM osd_records WHERE scope = n.scope AND NOT deleted LIMIT \(Int64(limits.recordCountCap + 1))) r)
                    FROM unnest(\(names)::text[]) AS n(scope)
                    """, logger: logger
                ).decode((String, Int64, Int64).self) {
                    memberCounts[scope] = Int(granted)
                    recordCounts[scope] = Int(records)
                }
            }
            let scopes = names.map { name in
                let scope = ScopeID(rawValue: name)
                return ScopeOverview(
                    scope: scope, owner: owners[name] ?? scope.privateOwner, members: members[name] ?? [],
                    memberCount: BoundedCount(counted: memberCounts[name] ?? 0, cap: limits.countCap),
                    records: BoundedCount(counted: recordCounts[name] ?? 0, cap: limits.recordCountCap))
            }
            var clients: [ClientOverview] = []
            for try await (clientID, user, last, seen) in try await connection.checkedQuery(
                """
                SELECT client_id, user_id, last_mutation_id, last_seen_at FROM osd_clients
                ORDER BY last_seen_at DESC, client_id DESC LIMIT \(Int64(limits.clients))
                """, logger: logger
            ).decode((String, String, Int64, Int64).self) {
                clients.append(ClientOverview(clientID: clientID, user: user, lastMutationID: last, lastPushAt: seen))
            }
            let clientCount = try await count(
                connection, "SELECT COUNT(*) FROM (SELECT 1 FROM osd_clients LIMIT \(Int64(limits.countCap + 1))) c")
            return StorageOverview(
                epoch: epoch, head: head.seq, horizon: head.horizon, scopes: scopes, scopeCount: scopeCount, clients: clients,
                clientCount: BoundedCount(counted: clientCount, cap: limits.countCap))
        }
    }

    package func rotateEpoch(expecting expected: String?) async throws -> EpochChange {
        let current = UUID().uuidString
        return try await writeTransaction { [self] connection, _ in
            var previous: String?
            for try await value in try await connection.checkedQuery("SELECT value FROM osd_metadata WHERE key = 'epoch'", logger: logger).decode(
                String.self)
            {
                previous = value
            }
            guard let previous else { throw SyncServiceError(500, .internalError, "the database has no epoch") }
            if let expected, expected != previous { throw SyncServiceError.epochMoved(stored: previous, expected: expected) }
            try await connection.checkedQuery("UPDATE osd_metadata SET value = \(current) WHERE key = 'epoch'", logger: logger)
            return EpochChange(previous: previous, current: current)
        }
    }

    /// The first column of every row of a query, as text.
    private func strings(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> [String] {
        var values: [String] = []
        for try await value in try await connection.checkedQuery(query, logger: logger).decode(String.self) { values.append(value) }
        return values
    }
}
