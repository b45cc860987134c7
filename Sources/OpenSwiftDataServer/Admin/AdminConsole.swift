import Foundation
import OpenSwiftDataSyncProtocol

/// The admin console's reads and actions over a server's parts: it gathers the state the page
/// shows (from the storage, the live hub and this server's activity) and carries out the
/// operator's grants, revocations and epoch rotations.
struct AdminConsole: Sendable {
    let service: SyncService
    let hub: LiveHub
    let activity: ServerActivity
    let startedAt: Date
    let now: @Sendable () -> Date
    var limits = OverviewLimits()

    /// Whether other servers may share the storage (and keep the epoch they read at start).
    var sharedStorage: Bool { service.storage is any SharedSyncStorage }

    /// The state the page shows now.
    func state() async throws -> AdminState {
        let overview = try await service.overview(limits)
        let live = await hub.byUser(limit: limits.clients)
        let connections = await hub.count
        let recent = activity.snapshot(clients: limits.clients)
        // The clients: the storage's (by their last push) and those this server saw since it
        // started, each with the latest of the two times.
        var clients: [String: AdminState.Client] = [:]
        for client in overview.clients {
            clients[client.clientID] = AdminState.Client(
                clientID: client.clientID, user: client.user, lastMutationID: client.lastMutationID, lastSeen: client.lastPushAt)
        }
        for seen in recent.clients {
            let at = seen.at.syncMilliseconds
            var client =
                clients[seen.clientID] ?? AdminState.Client(clientID: seen.clientID, user: seen.user, lastMutationID: nil, lastSeen: 0)
            client.lastSeen = max(client.lastSeen, at)
            if let last = seen.lastMutationID { client.lastMutationID = max(client.lastMutationID ?? 0, last) }
            clients[seen.clientID] = client
        }
        let listed = clients.values.sorted { ($0.lastSeen, $0.clientID) > ($1.lastSeen, $1.clientID) }.prefix(limits.clients)
        let clientTotal = BoundedCount(value: max(overview.clientCount.value, clients.count), capped: overview.clientCount.capped)
        func rate(_ rate: ServerActivity.Rate) -> AdminState.Rate { AdminState.Rate(total: rate.total, perSecond: rate.perSecond) }
        return AdminState(
            now: now().syncMilliseconds,
            server: AdminState.Server(
                epoch: service.epoch, storedEpoch: overview.epoch, sharedStorage: sharedStorage,
                retentionSeconds: service.configuration.retention, startedAt: startedAt.syncMilliseconds),
            log: AdminState.Log(head: overview.head, horizon: overview.horizon),
            traffic: AdminState.Traffic(
                windowSeconds: recent.windowSeconds, pushes: rate(recent.pushes), pulls: rate(recent.pulls), mutations: rate(recent.mutations)),
            live: AdminState.Live(
                connections: connections,
                users: live.users.map { AdminState.LiveUser(user: $0.user, connections: $0.connections, since: $0.since.syncMilliseconds) },
                userCount: live.userCount),
            clients: AdminState.Clients(items: Array(listed), total: clientTotal),
            scopes: AdminState.Scopes(
                items: overview.scopes.map {
                    AdminState.Scope(scope: $0.scope.rawValue, owner: $0.owner, members: $0.members, memberCount: $0.memberCount, records: $0.records)
                },
                total: overview.scopeCount),
            rejections: recent.rejections.map {
                AdminState.Rejection(
                    at: $0.at.syncMilliseconds, route: $0.route, user: $0.user, clientID: $0.clientID, mutationID: $0.mutationID,
                    reason: $0.reason, message: $0.message)
            },
            refusedWithoutToken: recent.refusedWithoutToken)
    }

    /// Grants a user a scope (see `SyncService.administerGrant`).
    func grant(_ request: AdminGrantRequest) async throws -> ScopeMembersResponse {
        try await service.administerGrant(
            scope: ScopeID(rawValue: request.scope), member: request.user, owner: request.owner, role: request.role)
    }

    /// Revokes a user's grant of a scope (see `SyncService.administerRevoke`).
    func revoke(_ request: AdminRevokeRequest) async throws -> ScopeMembersResponse {
        try await service.administerRevoke(scope: ScopeID(rawValue: request.scope), member: request.user)
    }

    /// Rotates the epoch, if it still is the one the operator confirmed.
    func rotateEpoch(_ request: AdminRotationRequest) async throws -> AdminRotationAnswer {
        let change = try await service.rotateEpoch(expecting: request.epoch)
        // Live devices pull now: each is answered `reset: epochChanged` and resends what the
        // database lacks.
        await hub.greetAll()
        return AdminRotationAnswer(previous: change.previous, current: change.current, restartOtherServers: sharedStorage)
    }
}
