import Foundation

/// Values the engine last decoded from rows of its own tables, each with the stored bytes it
/// was decoded from. A read reuses a decoded value only when its row holds exactly those
/// bytes, so the memo can never return anything but what decoding the row would, and needs no
/// invalidation when rows are renumbered, rewritten or deleted. The engine reads its whole
/// queue of unsettled mutations and every shadow on each pulled page: decoding them all again
/// each time made a pull under a long queue quadratic.
///
/// A read that visits every row and then calls `keepOnly` with them leaves the memo holding
/// exactly the rows it saw, so it never outgrows the table.
///
/// `@unchecked Sendable`: `entries` is only read and written while holding `lock`.
final class DecodeMemo<Key: Hashable, Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [Key: (bytes: Data, value: Value)] = [:]

    /// The value decoded from `bytes` for `key`: the memo's when it was decoded from the same
    /// bytes, else `decode(bytes)`.
    func value(_ key: Key, bytes: Data, decode: (Data) throws -> Value) rethrows -> Value {
        if let known = lock.withLock({ entries[key] }), known.bytes == bytes { return known.value }
        return try decode(bytes)
    }

    /// Replaces the memo's contents with these rows (a read of every row of the table).
    func keepOnly(_ rows: [(key: Key, bytes: Data, value: Value)]) {
        var next: [Key: (bytes: Data, value: Value)] = [:]
        next.reserveCapacity(rows.count)
        for row in rows { next[row.key] = (row.bytes, row.value) }
        lock.withLock { entries = next }
    }
}
