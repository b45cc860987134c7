/// A counter as one replica holds it: the value the server confirmed, and the contributions of
/// this replica's mutations that the server has not decided yet, each under a key (the local
/// sync log's sequence, or a mutation id).
///
/// The value shown is the confirmed value plus every pending contribution, so a replica sees
/// its own increments at once, and a pulled total never hides them:
///
/// ```swift
/// var counter = CounterState(confirmed: .int(5))
/// try counter.add(.int(1), key: 1)          // shown: 6
/// counter.confirm(.int(8), through: 0)      // another device added 2: shown 9
/// counter.rollBack(key: 1)                  // the server refused it: shown 8
/// ```
public struct CounterState: Hashable, Sendable {
    /// One pending contribution.
    public struct Pending: Hashable, Sendable {
        /// The key of the mutation that made it (ascending).
        public var key: Int64
        /// The contribution.
        public var delta: CounterValue

        /// Makes a pending contribution.
        public init(key: Int64, delta: CounterValue) {
            self.key = key
            self.delta = delta
        }
    }

    /// Why a contribution cannot be taken.
    public enum Failure: Error, Hashable, Sendable {
        /// The contribution's kind (integer or double) is not the counter's.
        case kindMismatch
        /// The sum does not fit a 64-bit integer.
        case overflow
    }

    /// The value the server confirmed last.
    public private(set) var confirmed: CounterValue
    /// The contributions the server has not decided, by ascending key.
    public private(set) var pending: [Pending] = []

    /// A counter whose confirmed value is `confirmed`, with nothing pending.
    public init(confirmed: CounterValue) {
        self.confirmed = confirmed
    }

    /// The value to show: the confirmed value plus every pending contribution. Nil only when the
    /// pending sum overflows (``add(_:key:)`` refuses contributions that would).
    public var value: CounterValue? {
        pending.reduce(Optional(confirmed)) { sum, item in sum?.adding(item.delta) }
    }

    /// Adds a pending contribution under `key`; throws when its kind differs or the shown value
    /// would overflow.
    public mutating func add(_ delta: CounterValue, key: Int64) throws(Failure) {
        guard confirmed.adding(delta.zero) != nil else { throw .kindMismatch }
        guard let shown = value, shown.adding(delta) != nil else { throw .overflow }
        let index = pending.firstIndex { $0.key > key } ?? pending.endIndex
        pending.insert(Pending(key: key, delta: delta), at: index)
    }

    /// Takes the server's total, which includes every contribution with a key up to `key` that
    /// the server applied: those leave the pending list.
    public mutating func confirm(_ total: CounterValue, through key: Int64) {
        confirmed = total
        pending.removeAll { $0.key <= key }
    }

    /// Drops the contribution of a refused mutation, and only it.
    public mutating func rollBack(key: Int64) {
        pending.removeAll { $0.key == key }
    }
}
