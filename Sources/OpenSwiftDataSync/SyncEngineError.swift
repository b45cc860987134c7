import Foundation
import OpenSwiftDataSyncProtocol

/// Why the engine could not be set up, or an operation refused. Setup errors are thrown by
/// ``SyncEngine/init(container:transport:user:configuration:)``; the rest travel as
/// ``SyncEvent/error(_:)`` events and ``SyncStatus/lastError``.
public enum SyncEngineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A configured model type is not in the container's schema.
    case modelNotInSchema(String)
    /// A configured model cannot sync (its identity is not stable; see the README).
    case unsupportedModel(entity: String, reason: String)
    /// Another user's saves are still waiting to be pushed in this store: they are never
    /// pushed into this user's account. Sign that user in again, or discard them with
    /// ``SyncEngine/signOut(removingLocalData:)``.
    case pendingChangesOfAnotherUser(String)
    /// The configuration names no model.
    case nothingToSync
    /// The server answered with something the engine cannot use: nothing of it was applied and
    /// the queue is intact.
    case badServerAnswer(String)
    /// The server speaks another protocol version.
    case unsupportedProtocolVersion(server: Int)
    /// An entity this app does not sync was named (a conflict to resolve, for example).
    /// Pulled records of such entities are not an error: they are skipped (a newer version of
    /// the app wrote them).
    case unknownEntity(String)
    /// A request failed; the engine retries transient failures with backoff.
    case transport(SyncTransportError)
    /// The server refused access (revoked or missing grants, or another user's client id);
    /// not retried until the next sync request.
    case accessDenied(String)
    /// The local store failed.
    case store(String)
    /// The engine was signed out.
    case signedOut
    /// An attachment's bytes cannot be had now (``SyncEngine/downloadAttachment(_:of:)``): the
    /// server cannot be reached, or does not have them yet. Says which, and which property.
    case attachmentUnavailable(String)
    /// A field declared to merge cannot merge that way (the kind does not fit its type, or the
    /// property is optional, the record id, not persisted, or its model does not sync).
    case mergeKindMismatch(entity: String, property: String, kind: MergeKind, reason: String)
    /// A field is declared with a merge kind this version does not support. Every kind merges
    /// since texts do: no longer thrown, kept so that code matching it still compiles.
    case mergeNotSupported(entity: String, property: String, kind: MergeKind)
    /// The server does not speak the protocol version this engine needs (version 2, for merged
    /// fields): nothing is pushed or pulled, and the queue is kept until the server is updated.
    case serverTooOld(required: Int, supported: [Int])
    /// ``SyncEngine/share(_:with:role:)`` or ``SyncEngine/unshare(_:from:)`` of a scope the
    /// signed-in user does not own: only its owner shares it.
    case notScopeOwner(ScopeID)
    /// ``SyncEngine/members(of:)`` of a scope the signed-in user may not read.
    case scopeNotGranted(ScopeID)
    /// A sharing call the server refused as malformed: the scope is not of the form `kind:id`,
    /// or the user id is empty or longer than 256 bytes.
    case invalidSharing(scope: ScopeID, reason: String)

    /// A readable explanation.
    public var description: String {
        switch self {
        case let .modelNotInSchema(name): return "\(name) is configured to sync but is not in the container's schema"
        case let .unsupportedModel(entity, reason): return "\(entity) cannot sync: \(reason)"
        case let .pendingChangesOfAnotherUser(user):
            return "unpushed saves of \(user) wait in this store; sign \(user) in again or sign out removing local data"
        case .nothingToSync: return "the sync configuration names no model"
        case let .badServerAnswer(reason): return "bad server answer: \(reason)"
        case let .unsupportedProtocolVersion(server):
            return "the server answered in protocol version \(server), which this engine did not ask for"
        case let .unknownEntity(name): return "\(name) is not an entity this app syncs"
        case let .transport(error): return error.description
        case let .accessDenied(reason): return "access denied: \(reason)"
        case let .store(reason): return "local store error: \(reason)"
        case .signedOut: return "the sync engine is signed out"
        case let .attachmentUnavailable(reason): return reason
        case let .mergeKindMismatch(entity, property, kind, reason): return "\(entity).\(property) cannot merge as a \(kind.rawValue): \(reason)"
        case let .mergeNotSupported(entity, property, kind):
            return
                "\(entity).\(property) is declared to merge as a \(kind.rawValue), which this version does not support yet; .counter and .set merge"
        case let .serverTooOld(required, supported):
            return
                "the server speaks protocol versions \(supported.map(String.init).joined(separator: ", ")); merged fields need version \(required): update the server"
        case let .notScopeOwner(scope): return "only the owner of scope \(scope) may share it or unshare it"
        case let .scopeNotGranted(scope): return "scope \(scope) is not granted to this user"
        case let .invalidSharing(scope, reason): return "cannot share scope \(scope): \(reason)"
        }
    }
}
