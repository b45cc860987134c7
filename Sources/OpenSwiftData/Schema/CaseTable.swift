import GRDB

/// The cases of a `CaseIterable` raw-value type whose values are plain bytes (an enum without
/// payloads), by their stored raw value: reading a column of such a type copies the case's bytes
/// into the slot, with no generic code on the per-row path.
final class CaseTable: Sendable {
    /// The position of each case's bytes in `bytes`, by the case's stored raw value.
    private let positions: [DatabaseValue: Int]
    private let bytes: [UInt8]
    private let size: Int

    private init(positions: [DatabaseValue: Int], bytes: [UInt8], size: Int) {
        self.positions = positions
        self.bytes = bytes
        self.size = size
    }

    /// The table of `R`'s cases, or nil when `R` is not `CaseIterable` or its values are not
    /// plain bytes. Each case's entry holds what `R(rawValue:)` makes of its raw value, keyed by
    /// that raw value as `encode` stores it, so a copy gives what decoding would.
    static func make<R: RawRepresentable>(_ type: R.Type, encode: (R.RawValue) throws -> DatabaseValue) -> CaseTable? {
        guard _isPOD(R.self), let iterable = R.self as? any CaseIterable.Type else { return nil }
        func cases<C: CaseIterable>(_ type: C.Type) -> [Any] { Array(type.allCases) }
        var positions: [DatabaseValue: Int] = [:]
        var bytes: [UInt8] = []
        for case let value as R in cases(iterable) {
            guard let decoded = R(rawValue: value.rawValue), let stored = try? encode(value.rawValue), positions[stored] == nil else { continue }
            positions[stored] = bytes.count
            withUnsafeBytes(of: decoded) { bytes.append(contentsOf: $0) }
        }
        return CaseTable(positions: positions, bytes: bytes, size: MemoryLayout<R>.size)
    }

    /// Initializes `slot` with the case stored as `value`; false (and the slot is left as it was)
    /// when no case is stored that way.
    func copy(_ value: DatabaseValue, into slot: UnsafeMutableRawPointer) -> Bool {
        guard let position = positions[value] else { return false }
        bytes.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            slot.copyMemory(from: base + position, byteCount: size)
        }
        return true
    }
}
