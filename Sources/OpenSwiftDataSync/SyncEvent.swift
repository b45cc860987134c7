import Foundation
import OpenSwiftDataSyncProtocol

/// Something the engine did or learned, in the order it happened. Read them from
/// ``SyncEngine/events``.
public enum SyncEvent: Sendable, Hashable {
    /// The server accepted (applied or rejected) mutations: how many, and the last id.
    case pushed(count: Int, lastMutationID: MutationID)
    /// A page (or a staged snapshot) of remote changes became visible locally.
    case pulled(changes: Int)
    /// A local save was refused by the server and has been rolled back to the server's state.
    case rejected(SyncRejection)
    /// A local save the server cannot take for one of its limits (not a rule of the app's):
    /// it stays on the device, unsynced and never rolled back, with later saves of the same
    /// records, until a retry finds the limit raised (see ``SyncHeldSave``).
    case held(SyncHeldSave)
    /// A local save lost under `rejectStale`: resolve it with ``SyncEngine/resolve(_:with:)``.
    case conflict(SyncConflict)
    /// The server could not continue the engine's cursor (restored or compacted); the engine
    /// downloaded its scopes again and kept its unpushed changes.
    case reset(ResetReason)
    /// The server was restored from a backup that predates mutations it had acknowledged, and
    /// these (their ids when sent) were older than the engine keeps
    /// (``SyncConfiguration/acknowledgedMutationRetention``): they could not be sent again.
    /// The newer ones the engine still had were sent again, each once.
    case lostInServerRestore([MutationID])
    /// The user lost access to scopes; their records were removed locally.
    case revoked([ScopeID])
    /// Grants changed: a pull found that the scopes this user may read are not the ones the
    /// previous pull found (a scope shared with the user, or claimed by one of the user's
    /// writes, is added; a revoked one is removed), or this engine's own
    /// ``SyncEngine/share(_:with:role:)`` or ``SyncEngine/unshare(_:from:)`` changed a scope's
    /// members.
    case grantsChanged(SyncGrantsChange)
    /// A download's progress (records received of total).
    case progress(PullProgress)
    /// Something failed; transient failures are retried.
    case error(SyncEngineError)
    /// An attachment's transfer starts, or resumes: `completed` is what the server held of an
    /// upload, or what an interrupted download had already written.
    case attachmentStarted(AttachmentProgress)
    /// An attachment's bytes reached the server (its file is no longer kept for the upload), or
    /// arrived on this device (its property reads them from now on).
    case attachmentTransferred(AttachmentTransfer)
    /// An attachment's transfer failed. Transient failures are retried with backoff; an upload
    /// the server refuses (over one of its limits, `blobTooLarge`) is tried again
    /// on the next launch or ``SyncEngine/transferAttachments()``, and its file is kept.
    case attachmentFailed(AttachmentTransfer, SyncEngineError)
}

/// A local save the server refused, after it was rolled back locally.
public struct SyncRejection: Sendable, Hashable {
    /// The mutation's id.
    public var mutationID: MutationID
    /// Why.
    public var reason: RejectionReason
    /// The server's explanation.
    public var message: String?
    /// The records the save changed: entity and record id.
    public var records: [SyncRecordReference]
    /// The server's state of those records when it refused (nil entries: no such record).
    public var serverRecords: [RecordState]
}

/// An entity and record id.
public struct SyncRecordReference: Sendable, Hashable {
    /// The entity's sync name.
    public var entity: SyncName
    /// The record's id.
    public var recordID: RecordID
}

/// A conflict under `rejectStale`: the local values that lost and the server's record.
public struct SyncConflict: Sendable, Hashable {
    /// The rejected mutation.
    public var mutationID: MutationID
    /// The record.
    public var record: SyncRecordReference
    /// The fields the local save set, with the values it set.
    public var localFields: [SyncName: SyncValue]
    /// The server's record when it refused (nil: the server has no such record).
    public var server: RecordState?
}

/// How to settle a ``SyncConflict``.
public enum SyncConflictResolution: Sendable, Hashable {
    /// Keep the server's values (the record already shows them).
    case keepServer
    /// Write the local values again, now based on the server's version.
    case keepLocal
    /// Write these field values, based on the server's version.
    case merged([SyncName: SyncValue])
}

/// What a ``SyncEvent/grantsChanged(_:)`` event says changed.
public struct SyncGrantsChange: Sendable, Hashable {
    /// Scopes this user may read now and could not at the previous pull, sorted (empty after a
    /// share or unshare).
    public var added: [ScopeID]
    /// Scopes this user could read at the previous pull and may not now, sorted (empty after a
    /// share or unshare).
    public var removed: [ScopeID]
    /// After ``SyncEngine/share(_:with:role:)`` or ``SyncEngine/unshare(_:from:)``: the
    /// scope's members as the server answered (nil for a change a pull found).
    public var members: ScopeMembers?

    /// Makes a change.
    public init(added: [ScopeID] = [], removed: [ScopeID] = [], members: ScopeMembers? = nil) {
        self.added = added
        self.removed = removed
        self.members = members
    }
}

/// Who may read and write a scope: what ``SyncEngine/members(of:)``,
/// ``SyncEngine/share(_:with:role:)`` and ``SyncEngine/unshare(_:from:)`` answer.
public struct ScopeMembers: Sendable, Hashable {
    /// The scope.
    public var scope: ScopeID
    /// Its owner: reads and writes it, and alone shares and unshares it.
    public var owner: String
    /// The users granted it as writers (they read and write it), sorted.
    public var writers: [String]
    /// The users granted it as readers (they read it; their saves into it are rejected with
    /// `RejectionReason.readOnly`), sorted.
    public var readers: [String]

    /// Makes a membership list.
    public init(scope: ScopeID, owner: String, writers: [String], readers: [String]) {
        self.scope = scope
        self.owner = owner
        self.writers = writers
        self.readers = readers
    }

    /// The list a server answered.
    init(_ response: ScopeMembersResponse) {
        self.init(scope: response.scope, owner: response.owner, writers: response.members, readers: response.readers)
    }

    /// What `user` was granted: nil for the owner and for a user who was not granted the scope.
    public func role(of user: String) -> ScopeGrantRole? {
        if writers.contains(user) { return .writer }
        if readers.contains(user) { return .reader }
        return nil
    }
}
