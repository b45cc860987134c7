import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

/// What the admin console's tests share: the token, requests with it, and the JSON of
/// `GET /admin/api/state` as a client of it reads it.
enum AdminFixture {
    static let token = "admin-token-for-the-console-tests"

    /// The state endpoint's JSON.
    struct State: Decodable {
        struct Server: Decodable {
            var epoch: String
            var storedEpoch: String
            var sharedStorage: Bool
            var retentionSeconds: Double
        }
        struct Log: Decodable {
            var head: Int64
            var horizon: Int64
        }
        struct Rate: Decodable {
            var total: Int
            var perSecond: Double
        }
        struct Traffic: Decodable {
            var windowSeconds: Int
            var pushes: Rate
            var pulls: Rate
            var mutations: Rate
        }
        struct Count: Decodable {
            var value: Int
            var capped: Bool
        }
        struct Client: Decodable {
            var clientID: String
            var user: String
            var lastMutationID: Int64?
            var lastSeen: Int64
        }
        struct Clients: Decodable {
            var items: [Client]
            var total: Count
        }
        struct Scope: Decodable {
            var scope: String
            var owner: String?
            var members: [String]
            var memberCount: Count
            var records: Count
        }
        struct Scopes: Decodable {
            var items: [Scope]
            var total: Count
        }
        struct Live: Decodable {
            var connections: Int
            var userCount: Int
        }
        struct Rejection: Decodable {
            var at: Int64
            var route: String
            var user: String?
            var clientID: String?
            var mutationID: Int64?
            var reason: String
            var message: String
        }

        var now: Int64
        var server: Server
        var log: Log
        var traffic: Traffic
        var live: Live
        var clients: Clients
        var scopes: Scopes
        var rejections: [Rejection]
        var refusedWithoutToken: Int
    }

    /// The answer to a rotation.
    struct Rotation: Decodable {
        var previous: String
        var current: String
        var restartOtherServers: Bool
    }

    static func state(_ server: LiveServer, sourceLocation: SourceLocation = #_sourceLocation) async throws -> State {
        let answer = try await server.send(.GET, "/admin/api/state", token: token)
        #expect(answer.status == 200, "\(answer.text)", sourceLocation: sourceLocation)
        return try answer.decode(State.self)
    }

    /// The header the console's page sends with every action.
    static let actionHeader = ["X-OSD-Admin": "1"]

    /// Posts an action's JSON body with the admin token, as the page does.
    static func post(_ server: LiveServer, _ action: String, _ body: [String: String]) async throws -> LiveServerClient.Answer {
        try await server.send(.POST, "/admin/api/\(action)", token: token, headers: actionHeader, body: try JSONEncoder().encode(body))
    }

    /// The ids of the records a user's new client pulls, from scratch to the end.
    static func records(_ server: LiveServer, token: String, client: ClientID) async throws -> Set<RecordID> {
        var ids: Set<RecordID> = []
        var cursor: String?
        for _ in 0..<100 {
            let answer = try await server.pull(PullRequest(clientID: client, cursor: cursor), token: token)
            #expect(answer.status == 200, "\(answer.text)")
            let page = try answer.decode(PullResponse.self)
            for change in page.changes {
                if change.op == .delete { ids.remove(change.recordID) } else { ids.insert(change.recordID) }
            }
            cursor = page.cursor
            if !page.hasMore { break }
        }
        return ids
    }
}
