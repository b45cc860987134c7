import Foundation
import OpenSwiftDataSyncProtocol

/// The server's persistent state: what a ``SyncService`` runs on.
///
/// The storages are `SQLiteSyncStorage` (product `OpenSwiftDataServerSQLite`) and
/// `PostgresSyncStorage` (product `OpenSwiftDataServerPostgres`); pass one to
/// ``SyncServer/init(configuration:storage:blobs:now:)`` or ``SyncService/init(storage:configuration:now:observer:blobs:)``.
/// The operations the core calls on a storage are internal to this package, so other types
/// cannot serve as a storage (a service refuses them with an error when it opens).
public protocol SyncStorage: Sendable {
    /// Whether the storage can serve (for `/ready`): it can be reached, read and written. It
    /// answers within a few seconds even while the database cannot be reached.
    func isReady() async -> Bool

    /// Closes the storage; later calls fail.
    func close() async throws
}

/// The operations of a storage, as the core drives them.
///
/// Each operation is one transaction shaped as *load → decide → write*: the storage reads what
/// the request needs, calls a pure decision function from the core (which may throw a
/// ``SyncServiceError`` to refuse the request: then nothing is written), and writes the plan it
/// returns before committing. Conflict resolution, authorization and exactly-once live in the
/// decision functions, so a new backend only implements loading and writing.
package protocol SyncStorageBackend: SyncStorage {
    /// The server's identity and signing material, created with the database.
    func metadata() async throws -> StorageMetadata

    /// A server's start: moves the server's clock past every stamp it handed out (to
    /// `wallMilliseconds` at least) in one transaction, and returns the new stamp. Every cursor
    /// issued since carries a later or equal clock; one issued before, in this history or in one
    /// a restore lost, an earlier one.
    func start(wallMilliseconds: UInt64) async throws -> HLCTimestamp

    /// One push in one transaction: loads ``PushSnapshot`` for `load`, calls `decide`, writes
    /// the plan it returns (the plan's log entries take the sequence numbers after the head it
    /// was given, in order; a backend whose transactions commit out of order shifts them by
    /// one offset taken as its last statement before commit), and commits.
    func push(_ load: PushLoad, decide: @escaping @Sendable (PushSnapshot) throws -> PushPlan) async throws -> PushPlan

    /// One pull page in one read transaction (a consistent snapshot): loads ``PullContext``
    /// (with the log marks of `probe` and of the head), calls `plan` to choose what to read,
    /// reads it, and adds the log mark of the page's end to its context.
    func pull(
        clientID: ClientID, user: String, probe: ServerVersion?, plan: @escaping @Sendable (PullContext) throws -> PullRead
    ) async throws -> PullPage

    /// The scopes a user owns or was granted.
    func scopes(of user: String) async throws -> [ScopeAccess]

    /// A scope's owner and members, or nil when nobody has claimed it.
    func scope(_ scope: ScopeID) async throws -> ScopeRecord?

    /// Changes a scope's membership in one transaction: `decide` gets the current record (nil
    /// when unclaimed) and returns the new one (or throws to refuse).
    func updateScope(_ scope: ScopeID, decide: @escaping @Sendable (ScopeRecord?) throws -> ScopeRecord) async throws -> ScopeRecord

    /// Removes log entries and tombstones written before `milliseconds`, and raises the horizon
    /// below which cursors are told to reset. The log entry at the new horizon stays: its mark
    /// checks a cursor at the horizon against a restored copy's log. Push results are not removed by age: they stay
    /// until their client acknowledges them (``PushPlan/resultsAcknowledgedBelow``).
    func compact(before milliseconds: Int64) async throws -> CompactionResult

    /// What the storage holds, within `limits`, read in one read transaction (for the admin
    /// console): the stored epoch, the log's head and horizon, the first scopes by name with
    /// their owner, members and live record count, the most recently seen clients. Every
    /// query is bounded by the limits, whatever the database's size.
    func overview(_ limits: OverviewLimits) async throws -> StorageOverview

    /// Gives the database a new epoch in one writing transaction, serialized with pushes.
    /// With `expected`, only when the stored epoch is that one: otherwise nothing changes and
    /// it throws `409 staleEpoch` (someone rotated it meanwhile). Returns the old epoch and the
    /// new one. A server reads the epoch when it starts: ``SyncService/rotateEpoch(expecting:)``
    /// also updates the server it runs in.
    func rotateEpoch(expecting expected: String?) async throws -> EpochChange

    /// Where this storage keeps blobs' bytes when the server is given no other place (nil:
    /// nowhere).
    var defaultBlobStorage: (any BlobStorage)? { get }

    /// The scopes of the live records whose fields name the blob `digest`, counting only
    /// the references written by a client whose user holds the blob (a user who may read one
    /// of those records may read the blob).
    func blobScopes(of digest: String) async throws -> [ScopeID]

    /// Records that `user` holds the blob (uploaded it, or sent its bytes again), which is
    /// stored: its bytes count in the user's limit, and its age starts again.
    func noteBlob(_ reference: BlobReference, holder user: String, at milliseconds: Int64) async throws

    /// Whether `user` holds the blob `digest`.
    func holds(blob digest: String, user: String) async throws -> Bool

    /// The bytes of the blobs `user` holds.
    func blobBytes(of user: String) async throws -> Int64

    /// At most `limit` blobs stored (or last named by a record) before `milliseconds` that no
    /// live record names now.
    func unreferencedBlobs(before milliseconds: Int64, limit: Int) async throws -> [String]

    /// Forgets the blob `digest` when it is still one of ``unreferencedBlobs(before:limit:)``;
    /// returns whether it did (its bytes are then the caller's to delete).
    func forgetBlob(_ digest: String, before milliseconds: Int64) async throws -> Bool
}

/// What a storage keeps about itself.
package struct StorageMetadata: Sendable, Hashable {
    /// Made when the database was created: a cursor from another epoch gets a reset.
    package var epoch: String
    /// The key cursors are signed with.
    package var cursorKey: Data

    /// Makes metadata.
    package init(epoch: String, cursorKey: Data) {
        self.epoch = epoch
        self.cursorKey = cursorKey
    }
}

/// What a push needs loaded.
package struct PushLoad: Sendable {
    /// The pushing client.
    package var clientID: ClientID
    /// The ids of the request's mutations (their recorded results are loaded, if any).
    package var mutationIDs: [MutationID]
    /// The records the mutations touch.
    package var keys: Set<RecordKey>
    /// The scopes the mutations name (the scopes of the loaded records are loaded too).
    package var scopes: Set<ScopeID>
    /// For records under `rejectStale`, the version after which to load which clients changed
    /// them.
    package var historyAfter: [RecordKey: ServerVersion]
    /// What the schema's delete rules need: a storage builds ``DeleteRuleGraph`` from this
    /// load's schema (or else the client's stored one), loads the records of
    /// ``DeleteRuleGraph/targets(of:)`` with `keys`, and adds to the snapshot the live
    /// referrers `DeleteRuleGraph.referrers(of:loaded:fetch:)` finds from `roots` (with
    /// their links and scopes), looked up in its index of reference fields.
    package var deleteRules: DeleteRuleLoad
    /// The position of the push's cursor, if it carries one: the storage loads the log mark
    /// there (``PushSnapshot/marks``), so the core can tell a cursor of another history of a
    /// database restored from a copy that kept its epoch.
    package var markAt: ServerVersion?

    /// Makes a load request.
    package init(
        clientID: ClientID, mutationIDs: [MutationID], keys: Set<RecordKey>, scopes: Set<ScopeID>, historyAfter: [RecordKey: ServerVersion],
        deleteRules: DeleteRuleLoad = DeleteRuleLoad(schema: nil), markAt: ServerVersion? = nil
    ) {
        self.markAt = markAt
        self.clientID = clientID
        self.mutationIDs = mutationIDs
        self.keys = keys
        self.scopes = scopes
        self.historyAfter = historyAfter
        self.deleteRules = deleteRules
    }
}

/// The state a push is decided on, read inside its transaction.
package struct PushSnapshot: Sendable {
    /// The client, if it pushed before.
    package var client: ClientRecord?
    /// Recorded results of the request's ids processed before.
    package var results: [MutationID: StoredResult]
    /// The touched records the server has (tombstones included), with their links.
    package var records: [RecordKey: StoredRecord]
    /// The claimed scopes among those named and those of the loaded records.
    package var scopes: [ScopeID: ScopeRecord]
    /// Per record, the (version, client) of each logged change after the requested version.
    package var history: [RecordKey: [(version: ServerVersion, client: ClientID?)]]
    /// The last sequence number handed out.
    package var head: ServerVersion
    /// Log entries at or below this version were compacted away.
    package var horizon: ServerVersion
    /// The server's hybrid-logical-clock state.
    package var clock: HLCTimestamp
    /// The log mark (`created_at`) of the change at ``PushLoad/markAt``, keyed by that
    /// sequence (empty if the load named none or the log holds no change there).
    package var marks: [ServerVersion: Int64]

    /// Makes a snapshot.
    package init(
        client: ClientRecord?, results: [MutationID: StoredResult], records: [RecordKey: StoredRecord], scopes: [ScopeID: ScopeRecord],
        history: [RecordKey: [(version: ServerVersion, client: ClientID?)]], head: ServerVersion, horizon: ServerVersion, clock: HLCTimestamp,
        marks: [ServerVersion: Int64] = [:]
    ) {
        self.marks = marks
        self.client = client
        self.results = results
        self.records = records
        self.scopes = scopes
        self.history = history
        self.head = head
        self.horizon = horizon
        self.clock = clock
    }
}

/// What a push writes, decided by the core.
package struct PushPlan: Sendable {
    /// The answer to send.
    package var response: PushResponse
    /// The client row to write (nil: unchanged).
    package var client: ClientRecord?
    /// Results of newly processed mutations.
    package var results: [StoredResult]
    /// The final state of every record changed (links are written whole for each).
    package var records: [StoredRecord]
    /// New log entries, sequence ascending from `head + 1`.
    package var changes: [LogEntry]
    /// Scopes claimed by this push.
    package var newScopes: [ScopeRecord]
    /// The server clock after the push.
    package var clock: HLCTimestamp
    /// The head after the push.
    package var head: ServerVersion
    /// When the push was processed, in milliseconds since 1970.
    package var now: Int64
    /// The users who may read the scopes this push changed (for live notifications).
    package var readers: Set<String>
    /// The scopes this push changed.
    package var changedScopes: Set<ScopeID>
    /// Counts for metrics.
    package var applied = 0, rejected = 0, conflicts = 0
    /// The client has processed its answers below this mutation id (a push starts at its
    /// oldest unanswered mutation): the storage deletes this client's stored results below it
    /// in the push's transaction. Nil: none are acknowledged.
    package var resultsAcknowledgedBelow: MutationID?

    /// Makes a plan.
    package init(
        response: PushResponse, client: ClientRecord?, results: [StoredResult], records: [StoredRecord], changes: [LogEntry],
        newScopes: [ScopeRecord], clock: HLCTimestamp, head: ServerVersion, now: Int64, readers: Set<String>, changedScopes: Set<ScopeID>
    ) {
        self.response = response
        self.client = client
        self.results = results
        self.records = records
        self.changes = changes
        self.newScopes = newScopes
        self.clock = clock
        self.head = head
        self.now = now
        self.readers = readers
        self.changedScopes = changedScopes
    }
}

/// What a pull's transaction sees before it chooses what to read.
package struct PullContext: Sendable {
    /// The last sequence number handed out.
    package var head: ServerVersion
    /// Log entries at or below it were compacted away.
    package var horizon: ServerVersion
    /// The scopes the user may read, with their role.
    package var grants: [ScopeID: ScopeRole]
    /// The user the client belongs to, if the client pushed before.
    package var clientOwner: String?
    /// The last mutation id processed for the client.
    package var lastMutationID: MutationID
    /// The server's clock.
    package var clock: HLCTimestamp
    /// Log marks by sequence: the `created_at` of the change the log holds at that sequence
    /// (absent: no change there). A cursor keeps the mark of its position, so a database
    /// restored from a copy that kept its epoch, whose log has since been written again past
    /// that position, is told apart from the one that issued the cursor.
    package var marks: [ServerVersion: Int64]

    /// Makes a context.
    package init(
        head: ServerVersion, horizon: ServerVersion, grants: [ScopeID: ScopeRole], clientOwner: String?, lastMutationID: MutationID,
        clock: HLCTimestamp, marks: [ServerVersion: Int64] = [:]
    ) {
        self.marks = marks
        self.head = head
        self.horizon = horizon
        self.grants = grants
        self.clientOwner = clientOwner
        self.lastMutationID = lastMutationID
        self.clock = clock
    }
}

/// A position in a snapshot's keyset order: (scope, entity, record id).
package struct SnapshotKey: Hashable, Sendable, Codable {
    /// The scope.
    package var scope: ScopeID
    /// The entity.
    package var entity: SyncName
    /// The record id.
    package var recordID: RecordID

    /// Makes a key.
    package init(scope: ScopeID, entity: SyncName, recordID: RecordID) {
        self.scope = scope
        self.entity = entity
        self.recordID = recordID
    }

    private enum CodingKeys: String, CodingKey { case scope = "s", entity = "e", recordID = "r" }
}

/// What a pull page reads.
package enum PullRead: Sendable {
    /// Live records of `scopes` (sorted) after `after` in keyset order, at most `limit`;
    /// `count` also counts all live records of the scopes.
    case snapshot(scopes: [ScopeID], after: SnapshotKey?, limit: Int, count: Bool)
    /// Log entries after `after` in `scopes`, and in `tailScopes` above `tailFrom`; at least
    /// `limit` unless fewer exist, completed to the end of the last entry's mutation.
    case log(after: ServerVersion, scopes: [ScopeID], tailScopes: [ScopeID], tailFrom: ServerVersion, limit: Int)
}

/// What a pull page read.
package struct PullPage: Sendable {
    /// The context it was read in.
    package var context: PullContext
    /// What was read.
    package var read: PullRead
    /// For a snapshot: the records, keyset order.
    package var records: [StoredRecord]
    /// For a snapshot with `count`: the number of live records of its scopes.
    package var total: Int?
    /// For the log: the changes, sequence order.
    package var changes: [PulledChange]
    /// For the log: the sequence the page ends at (the head when nothing more is waiting).
    package var end: ServerVersion
    /// Whether more is waiting.
    package var hasMore: Bool

    /// Makes a page.
    package init(
        context: PullContext, read: PullRead, records: [StoredRecord] = [], total: Int? = nil, changes: [PulledChange] = [], end: ServerVersion,
        hasMore: Bool
    ) {
        self.context = context
        self.read = read
        self.records = records
        self.total = total
        self.changes = changes
        self.end = end
        self.hasMore = hasMore
    }
}

/// What a compaction removed.
public struct CompactionResult: Sendable, Hashable {
    /// The new horizon.
    public var horizon: ServerVersion
    /// Log entries removed.
    public var changesRemoved: Int
    /// Tombstones removed.
    public var tombstonesRemoved: Int
    /// Blobs deleted: stored before the window and named by no live record.
    public var blobsRemoved: Int

    /// Makes a result.
    public init(horizon: ServerVersion, changesRemoved: Int, tombstonesRemoved: Int, blobsRemoved: Int = 0) {
        self.horizon = horizon
        self.changesRemoved = changesRemoved
        self.tombstonesRemoved = tombstonesRemoved
        self.blobsRemoved = blobsRemoved
    }
}
