import OpenSwiftDataSyncProtocol

/// Something that happened in the core, for live notifications and metrics.
public enum SyncServiceEvent: Sendable, Hashable {
    /// A push committed changes in `scopes` (up to `version`); `readers` may read them.
    case changed(scopes: [ScopeID], version: ServerVersion, readers: Set<String>)
    /// The grants of `users` changed.
    case grantsChanged(users: Set<String>)
}

/// Counts of one push, for metrics.
public struct PushSummary: Sendable, Hashable {
    /// Mutations applied now.
    public var applied: Int
    /// Mutations rejected now.
    public var rejected: Int
    /// Field or link writes that lost to a later one, and stale or resolver refusals.
    public var conflicts: Int
}

/// Where the core reports what happened; every closure defaults to doing nothing.
public struct SyncObserver: Sendable {
    /// Called after each commit that changes state or grants.
    public var event: @Sendable (SyncServiceEvent) -> Void
    /// Called after each push that processed mutations.
    public var pushed: @Sendable (PushSummary) -> Void

    /// Makes an observer.
    public init(event: @escaping @Sendable (SyncServiceEvent) -> Void = { _ in }, pushed: @escaping @Sendable (PushSummary) -> Void = { _ in }) {
        self.event = event
        self.pushed = pushed
    }
}
