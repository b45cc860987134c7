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
    /// A download's progress (records received of total).
    case progress(PullProgress)
    /// Something failed; transient failures are retried.
    case error(SyncEngineError)
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
