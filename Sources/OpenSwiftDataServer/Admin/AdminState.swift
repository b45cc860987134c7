import Foundation
import OpenSwiftDataSyncProtocol

/// What the admin console shows, as `GET /admin/api/state` answers it (JSON) and the page
/// renders it. Times are milliseconds since 1970; `now` is the server's, so that ages are
/// measured on one clock.
struct AdminState: Codable, Sendable {
    /// The server's identity and settings.
    struct Server: Codable, Sendable {
        /// The epoch this server serves.
        var epoch: String
        /// The epoch stored in the database (another server may have rotated it).
        var storedEpoch: String
        /// Whether several servers may share the storage (PostgreSQL).
        var sharedStorage: Bool
        /// How long the log and tombstones are kept, in seconds.
        var retentionSeconds: Double
        /// When this server started.
        var startedAt: Int64
    }

    /// The change log's extent.
    struct Log: Codable, Sendable {
        /// The last sequence number handed out.
        var head: Int64
        /// Entries at or below it were compacted away: older cursors reset.
        var horizon: Int64
    }

    /// Events per second over the window, and in all.
    struct Rate: Codable, Sendable {
        /// Every event since this server started.
        var total: Int
        /// Events per second over the window.
        var perSecond: Double
    }

    /// This server's traffic.
    struct Traffic: Codable, Sendable {
        /// The seconds the rates are averaged over.
        var windowSeconds: Int
        /// Pushes answered.
        var pushes: Rate
        /// Pulls answered.
        var pulls: Rate
        /// Mutations processed.
        var mutations: Rate
    }

    /// A user's open live channels.
    struct LiveUser: Codable, Sendable {
        /// The user.
        var user: String
        /// Their open channels.
        var connections: Int
        /// When the oldest opened.
        var since: Int64
    }

    /// This server's live channels.
    struct Live: Codable, Sendable {
        /// Open channels.
        var connections: Int
        /// The users with the most channels.
        var users: [LiveUser]
        /// How many users have one.
        var userCount: Int
    }

    /// A client.
    struct Client: Codable, Sendable {
        /// Its id.
        var clientID: String
        /// Its user.
        var user: String
        /// The last mutation id processed for it (nil: it never pushed).
        var lastMutationID: Int64?
        /// When it was last seen: its last push stored, or its last request to this server
        /// (0: unknown).
        var lastSeen: Int64
    }

    /// The clients listed, and how many there are.
    struct Clients: Codable, Sendable {
        /// The most recently seen.
        var items: [Client]
        /// How many there are in all.
        var total: BoundedCount
    }

    /// A scope.
    struct Scope: Codable, Sendable {
        /// The scope.
        var scope: String
        /// Its owner (nil: unclaimed).
        var owner: String?
        /// Its first members by name.
        var members: [String]
        /// How many members it has.
        var memberCount: BoundedCount
        /// How many live records it holds.
        var records: BoundedCount
    }

    /// The scopes listed, and how many there are.
    struct Scopes: Codable, Sendable {
        /// The first by name.
        var items: [Scope]
        /// How many there are in all.
        var total: BoundedCount
    }

    /// A refusal.
    struct Rejection: Codable, Sendable {
        /// When.
        var at: Int64
        /// `push` or `pull`.
        var route: String
        /// The user, when known.
        var user: String?
        /// The client, when known.
        var clientID: String?
        /// The refused mutation, for a mutation.
        var mutationID: Int64?
        /// The reason's code.
        var reason: String
        /// The explanation.
        var message: String
    }

    /// The server's time.
    var now: Int64
    /// The server.
    var server: Server
    /// The log.
    var log: Log
    /// The traffic.
    var traffic: Traffic
    /// The live channels.
    var live: Live
    /// The clients.
    var clients: Clients
    /// The scopes.
    var scopes: Scopes
    /// The latest refusals, newest first.
    var rejections: [Rejection]
    /// Pushes and pulls refused for a missing or refused token since the server started
    /// (counted, not listed).
    var refusedWithoutToken: Int
}
