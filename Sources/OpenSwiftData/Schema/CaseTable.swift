import Foundation
import GRDB
import GRDBSQLite

/// The cases of a `CaseIterable` raw-value type whose values are plain bytes (an enum without
/// payloads), by their stored raw value: a row reader that finds a column holding one of them
/// copies the case's bytes into the slot, with no generic code and no `String` on the per-row
/// path.
final class CaseTable: Sendable {
    /// The cases stored as TEXT: the raw value's UTF-8 bytes, and where the case's bytes start.
    private let texts: [(text: [UInt8], start: Int)]
    /// The cases stored as INTEGER.
    private let integers: [(value: Int64, start: Int)]
    /// Each case's value, `size` bytes after its start.
    private let bytes: [UInt8]
    private let size: Int

    private init(texts: [(text: [UInt8], start: Int)], integers: [(value: Int64, start: Int)], bytes: [UInt8], size: Int) {
        self.texts = texts
        self.integers = integers
        self.bytes = bytes
        self.size = size
    }

    /// The table of `R`'s cases, or nil when `R` is not `CaseIterable`, its values are not plain
    /// bytes, or no raw value is stored as TEXT or INTEGER. Each case's entry holds what
    /// `R(rawValue:)` makes of its raw value, found by that raw value as `encode` stores it, so
    /// a copy gives what decoding the column would.
    static func make<R: RawRepresentable>(_ type: R.Type, encode: (R.RawValue) throws -> DatabaseValue) -> CaseTable? {
        guard _isPOD(R.self), let iterable = R.self as? any CaseIterable.Type else { return nil }
        func cases<C: CaseIterable>(_ type: C.Type) -> [Any] { Array(type.allCases) }
        var texts: [(text: [UInt8], start: Int)] = []
        var integers: [(value: Int64, start: Int)] = []
        var bytes: [UInt8] = []
        for case let value as R in cases(iterable) {
            guard let decoded = R(rawValue: value.rawValue), let stored = try? encode(value.rawValue) else { continue }
            let start = bytes.count
            switch stored.storage {
            case let .string(text) where !texts.contains(where: { $0.text.elementsEqual(text.utf8) }):
                texts.append((Array(text.utf8), start))
            case let .int64(integer) where !integers.contains(where: { $0.value == integer }):
                integers.append((integer, start))
            default:
                continue
            }
            withUnsafeBytes(of: decoded) { bytes.append(contentsOf: $0) }
        }
        guard !texts.isEmpty || !integers.isEmpty else { return nil }
        return CaseTable(texts: texts, integers: integers, bytes: bytes, size: MemoryLayout<R>.size)
    }

    /// Initializes `slot` with the case that column `index` of the current row holds; false (and
    /// the slot is left uninitialized) when it holds no known case.
    func read(_ statement: SQLiteStatement, _ index: CInt, into slot: UnsafeMutableRawPointer) -> Bool {
        let start: Int?
        switch sqlite3_column_type(statement, index) {
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, index) else { return false }
            let count = Int(sqlite3_column_bytes(statement, index))
            start =
                texts.first { entry in
                    entry.text.count == count
                        && entry.text.withUnsafeBufferPointer { stored in
                            stored.baseAddress.map { memcmp($0, text, count) == 0 } ?? (count == 0)
                        }
                }?.start
        case SQLITE_INTEGER:
            let value = sqlite3_column_int64(statement, index)
            start = integers.first { $0.value == value }?.start
        default:
            start = nil
        }
        guard let start else { return false }
        bytes.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            slot.copyMemory(from: base + start, byteCount: size)
        }
        return true
    }
}
