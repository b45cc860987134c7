import OpenSwiftDataSyncProtocol

/// What a resolver sees: the server's record (nil when it has none, or a tombstone), the
/// change, and who sent it. A pure function of these keeps results deterministic.
public struct ResolverInput: Sendable {
    /// The server's current record, or nil when the server has none.
    public var serverRecord: RecordState?
    /// The change the mutation makes.
    public var change: RecordChange
    /// The mutation's stamp (already limited by the server's clock).
    public var stamp: HLCTimestamp
    /// The client that sent it.
    public var clientID: ClientID
}

/// A resolver's decision for one change.
public enum ResolverDecision: Sendable {
    /// Apply the change as the entity's policy would.
    case usePolicy
    /// Apply these fields and links instead of the change's, unconditionally (they win over
    /// every stamp). Fields that merge (counters and sets) are left out: they take the change's
    /// contributions whatever the resolver decides.
    case apply(fields: [SyncName: SyncValue], links: [SyncName: LinkChange])
    /// Refuse the mutation (`RejectionReason.resolverRefused`) with a message.
    case refuse(String)
}

/// A conflict resolver for an entity, installed when the server is embedded as a library.
/// It must be a pure function of its input.
public typealias ConflictResolver = @Sendable (ResolverInput) -> ResolverDecision
