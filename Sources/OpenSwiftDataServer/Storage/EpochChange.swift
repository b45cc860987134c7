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
