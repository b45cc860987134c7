import Foundation

/// `GET /v1/pull`: the changes after a cursor in the caller's scopes. Its parameters travel in
/// the query string: `protocolVersion`, `clientID`, `cursor` (absent on first sync), `limit`.
public struct PullRequest: Hashable, Sendable {
    /// The protocol version the client speaks.
    public var protocolVersion: ProtocolVersion
    /// The client's id (the answer carries the last mutation id the server processed for it).
    public var clientID: ClientID
    /// The cursor of the last page applied, or nil for a first sync.
    public var cursor: String?
    /// The most changes wanted in one page (the server may send fewer, and caps it).
    public var limit: Int?

    /// Makes a pull request.
    public init(protocolVersion: ProtocolVersion = .plainFields, clientID: ClientID, cursor: String? = nil, limit: Int? = nil) {
        self.protocolVersion = protocolVersion
        self.clientID = clientID
        self.cursor = cursor
        self.limit = limit
    }

    /// The query string's items, in a fixed order.
    public var queryItems: [URLQueryItem] {
        var items = [URLQueryItem(name: "protocolVersion", value: "\(protocolVersion.rawValue)"), URLQueryItem(name: "clientID", value: clientID)]
        if let cursor { items.append(URLQueryItem(name: "cursor", value: cursor)) }
        if let limit { items.append(URLQueryItem(name: "limit", value: "\(limit)")) }
        return items
    }

    /// Reads a request from query items; throws ``SyncError`` naming the parameter that is
    /// missing or malformed.
    public init(queryItems: [URLQueryItem]) throws {
        func value(_ name: String) -> String? { queryItems.last { $0.name == name }?.value }
        guard let versionText = value("protocolVersion") else {
            throw SyncError(.malformedRequest, "the query parameter protocolVersion is missing")
        }
        guard let version = Int(versionText) else {
            throw SyncError(.malformedRequest, "protocolVersion must be an integer, not \(versionText.debugDescription)")
        }
        guard let clientID = value("clientID"), !clientID.isEmpty else {
            throw SyncError(.malformedRequest, "the query parameter clientID is missing")
        }
        var limit: Int?
        if let limitText = value("limit") {
            guard let parsed = Int(limitText), parsed > 0 else {
                throw SyncError(.malformedRequest, "limit must be a positive integer, not \(limitText.debugDescription)")
            }
            limit = parsed
        }
        self.init(protocolVersion: ProtocolVersion(rawValue: version), clientID: clientID, cursor: value("cursor"), limit: limit)
    }
}

/// One change in a pull page: the server's record after one of its changes.
///
/// An `insert` carries the whole record (every field; `links` hold the whole sets as
/// `added`), so it also serves snapshots; an `update` carries the fields and link changes it
/// made; a `delete` carries neither.
public struct PulledChange: Hashable, Codable, Sendable {
    /// The server version of this change (the record's version after it).
    public var version: ServerVersion
    /// What it did.
    public var op: RecordOperation
    /// The entity's sync name.
    public var entity: SyncName
    /// The record's id.
    public var recordID: RecordID
    /// The record's scope after the change.
    public var scope: ScopeID
    /// Fields set.
    public var fields: [SyncName: SyncValue]
    /// Link changes (for an insert, the whole sets as additions).
    public var links: [SyncName: LinkChange]
    /// The client whose mutation made the change, if a client made it.
    public var clientID: ClientID?
    /// That mutation's id.
    public var mutationID: MutationID?
    /// The edits of merged texts that made this change (``FieldMerge/text(_:)``), for readers of
    /// protocol version 3: applied by identity to the reader's copy of each text, they give the
    /// text's value, which ``fields`` then leaves out. Nil for older readers (who get the value)
    /// and for changes without any.
    public var merge: [SyncName: FieldMerge]?
    /// The whole states of merged texts (base64 of the merge core's `TextDocument.encoded()`),
    /// for readers of protocol version 3, in an insert whose text was edited through merges (a
    /// snapshot, a record moved into a scope): the reader's copy of each text starts from it. A
    /// merged text without a state holds its value as one run inserted by replica 0.
    public var textStates: [SyncName: String]?

    /// Makes a pulled change.
    public init(
        version: ServerVersion, op: RecordOperation, entity: SyncName, recordID: RecordID, scope: ScopeID, fields: [SyncName: SyncValue] = [:],
        links: [SyncName: LinkChange] = [:], clientID: ClientID? = nil, mutationID: MutationID? = nil, merge: [SyncName: FieldMerge]? = nil,
        textStates: [SyncName: String]? = nil
    ) {
        self.version = version
        self.op = op
        self.entity = entity
        self.recordID = recordID
        self.scope = scope
        self.fields = fields
        self.links = links
        self.clientID = clientID
        self.mutationID = mutationID
        self.merge = merge
        self.textStates = textStates
    }
}

/// Why a client must start over from a snapshot.
public enum ResetReason: String, Codable, Sendable {
    /// The cursor was handed out by another epoch of the server (it was restored from a backup).
    case epochChanged
    /// The changes after the cursor were compacted away (the client was offline past the
    /// retention window).
    case historyCompacted
}

/// Progress of a long download (a first sync, or a newly granted scope).
public struct PullProgress: Hashable, Codable, Sendable {
    /// Records received so far in this download.
    public var received: Int
    /// Records the download holds in all (an estimate taken when it began).
    public var total: Int

    /// Makes a progress value.
    public init(received: Int, total: Int) {
        self.received = received
        self.total = total
    }
}

/// The answer to a pull: one page of changes.
public struct PullResponse: Hashable, Codable, Sendable {
    /// The protocol version of the answer.
    public var protocolVersion: ProtocolVersion
    /// The changes, in server-version order.
    public var changes: [PulledChange]
    /// The cursor to send next time (opaque; signed by the server, which refuses a forged one).
    public var cursor: String
    /// Whether more changes are waiting: pull again at once.
    public var hasMore: Bool
    /// Whether applying every page received since the last consistent one gives a state the
    /// server had: pages of the log always are (they break between mutations); the pages of a
    /// snapshot are not until its last. A client stages pages until a consistent one, then
    /// makes them visible in one transaction.
    public var consistent: Bool
    /// The last mutation id the server has processed for the calling client, as of this page.
    public var lastMutationID: MutationID
    /// Set when the cursor cannot be continued: the client downloads its scopes again (this
    /// page is the start of that snapshot) and keeps its unpushed changes.
    public var reset: ResetReason?
    /// Scopes the caller is no longer granted: the client removes their records.
    public var revokedScopes: [ScopeID]
    /// Progress of a snapshot in progress.
    public var progress: PullProgress?
    /// The server's clock; the client's clock observes it.
    public var serverStamp: HLCTimestamp
    /// Scopes a snapshot in this page downloads whole (the pages of a newly granted scope's
    /// download, up to the one that completes it; nil: none): once applied, a record of these
    /// scopes the client holds that the download does not hold and no pending change masks is
    /// not on the server (created by this client, then deleted before the snapshot was read).
    public var snapshotScopes: [ScopeID]?
    /// The scopes the returned cursor is caught up on (consistent pages; nil: not said, as by
    /// servers before this field). On the last page of a pull they are the caller's grants:
    /// a record this client wrote into another scope (granted when pushed, revoked before this
    /// client downloaded the scope, so never named in `revokedScopes`) is not the caller's to
    /// hold.
    public var cursorScopes: [ScopeID]?

    /// Makes a pull response.
    public init(
        protocolVersion: ProtocolVersion = .plainFields, changes: [PulledChange], cursor: String, hasMore: Bool, consistent: Bool = true,
        lastMutationID: MutationID, reset: ResetReason? = nil, revokedScopes: [ScopeID] = [], progress: PullProgress? = nil,
        serverStamp: HLCTimestamp, snapshotScopes: [ScopeID]? = nil, cursorScopes: [ScopeID]? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
        self.consistent = consistent
        self.lastMutationID = lastMutationID
        self.reset = reset
        self.revokedScopes = revokedScopes
        self.progress = progress
        self.serverStamp = serverStamp
        self.snapshotScopes = snapshotScopes
        self.cursorScopes = cursorScopes
    }
}
