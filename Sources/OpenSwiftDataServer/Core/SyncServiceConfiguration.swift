import Foundation
import OpenSwiftDataSyncProtocol

/// The settings of the sync semantics, independent of any transport or storage.
public struct SyncServiceConfiguration: Sendable {
    /// The most mutations one push may carry (more is `SyncErrorCode.batchTooLarge`).
    public var maxMutationsPerPush: Int
    /// The most record changes one push may carry in all its mutations.
    public var maxChangesPerPush: Int
    /// The page size of a pull that names none.
    public var defaultPullLimit: Int
    /// The largest page a pull may ask for (larger limits are capped).
    public var maxPullLimit: Int
    /// How long tombstones, the change log and recorded push results are kept, in seconds.
    /// A client whose cursor is older than what was compacted is told to reset.
    public var retention: TimeInterval
    /// Conflict policies by entity sync name; they override what clients' schema descriptors say.
    public var policies: [SyncName: ConflictPolicy]
    /// Resolvers by entity sync name, for a server embedded as a library (they take precedence
    /// over every policy).
    public var resolvers: [SyncName: ConflictResolver]
    /// How far ahead of the server's wall clock a client's stamp may be before it is clamped.
    public var maximumClockDrift: UInt64
    /// The largest blob the server stores, in bytes (larger is `413 blobTooLarge`).
    public var maxBlobBytes: Int64
    /// The most bytes of blobs one user may upload, their unfinished uploads included (more is
    /// `413 blobTooLarge`). A blob another user uploaded first counts in that user's limit.
    public var maxUserBlobBytes: Int64

    /// Makes a configuration; every parameter has a default fit for development.
    public init(
        maxMutationsPerPush: Int = 1_000,
        maxChangesPerPush: Int = 10_000,
        defaultPullLimit: Int = 1_000,
        maxPullLimit: Int = 10_000,
        retention: TimeInterval = 30 * 24 * 3600,
        policies: [SyncName: ConflictPolicy] = [:],
        resolvers: [SyncName: ConflictResolver] = [:],
        maximumClockDrift: UInt64 = 60_000,
        maxBlobBytes: Int64 = 1 << 30,
        maxUserBlobBytes: Int64 = 10 << 30
    ) {
        self.maxBlobBytes = maxBlobBytes
        self.maxUserBlobBytes = maxUserBlobBytes
        self.maxMutationsPerPush = maxMutationsPerPush
        self.maxChangesPerPush = maxChangesPerPush
        self.defaultPullLimit = defaultPullLimit
        self.maxPullLimit = maxPullLimit
        self.retention = retention
        self.policies = policies
        self.resolvers = resolvers
        self.maximumClockDrift = maximumClockDrift
    }
}

extension Date {
    /// Milliseconds since 1970, clamped at zero.
    var syncMilliseconds: Int64 { Int64(max(0, (timeIntervalSince1970 * 1000).rounded(.down))) }
}
