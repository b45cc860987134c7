import Foundation

/// Folds every value a benchmark reads into one number, so that the reads cannot be optimised
/// away and so that both sides can be checked to have read the same data.
struct Checksum: Equatable, CustomStringConvertible {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(_ integer: Int) {
        value = (value ^ UInt64(truncatingIfNeeded: integer)) &* 0x100_0000_01b3
    }

    mutating func add(_ double: Double) { add(Int(truncatingIfNeeded: double.bitPattern)) }

    mutating func add(_ bool: Bool) { add(bool ? 1 : 0) }

    mutating func add(_ string: String) {
        add(string.utf8.count)
        add(Int(string.utf8.last ?? 0))
    }

    mutating func add(_ string: String?) {
        if let string { add(string) } else { add(-1) }
    }

    mutating func add(_ date: Date) { add(date.timeIntervalSinceReferenceDate) }

    mutating func add(_ uuid: UUID) {
        let bytes = uuid.uuid
        add(Int(bytes.0) << 8 | Int(bytes.15))
    }

    mutating func add(_ status: Status) { add(status.rawValue) }

    /// Folds every field of one record, in declaration order.
    mutating func add(
        serial: Int, title: String, category: String, quantity: Int, price: Double, isActive: Bool, createdAt: Date, token: UUID, note: String?,
        status: Status
    ) {
        add(serial)
        add(title)
        add(category)
        add(quantity)
        add(price)
        add(isActive)
        add(createdAt)
        add(token)
        add(note)
        add(status)
    }

    var description: String { String(value, radix: 16) }
}
