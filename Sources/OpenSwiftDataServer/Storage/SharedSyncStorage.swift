/// A storage that several server processes share (PostgreSQL): each tells the others what it
/// committed, so that a live client connected to one server hears of a push through another.
public protocol SharedSyncStorage: SyncStorage {
    /// The events committed through other servers sharing the storage, from now on, until the
    /// storage closes or the iterating task is cancelled. Events committed through this
    /// storage instance are left out (the server publishes those itself).
    func remoteEvents() -> AsyncStream<SyncServiceEvent>
}
