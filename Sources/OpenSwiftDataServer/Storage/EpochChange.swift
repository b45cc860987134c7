import Foundation

/// The epochs of a database before and after a restore or an epoch rotation.
public struct EpochChange: Sendable, Equatable {
    /// The epoch the database (or the backup) had.
    public var previous: String
    /// The epoch it has now.
    public var current: String

    /// Makes a change.
    public init(previous: String, current: String) {
        self.previous = previous
        self.current = current
    }
}

extension SyncServiceError {
    /// The refusal of an epoch rotation confirmed for another epoch than the stored one (it
    /// was rotated meanwhile): nothing changed.
    package static func epochMoved(stored: String, expected: String) -> SyncServiceError {
        SyncServiceError(409, .staleEpoch, "the epoch is \(stored) now, not \(expected): it was rotated meanwhile; look again, then confirm again")
    }
}
