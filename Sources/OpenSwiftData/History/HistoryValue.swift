import Foundation
import GRDB

/// A value as the store keeps it, as history records it: the stored form of an attribute (raw
/// values of enums, JSON text of Codable values, seconds since 1970 for dates…), a to-one
/// relationship's related row key, or a many-to-many relationship's related row keys as a JSON
/// array.
public enum HistoryValue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// SQL NULL: a nil optional, no related model.
    case null
    /// An integer.
    case integer(Int64)
    /// A floating-point number.
    case real(Double)
    /// Text.
    case text(String)
    /// Bytes.
    case blob(Data)

    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case let .int64(integer): self = .integer(integer)
        case let .double(double): self = .real(double)
        case let .string(string): self = .text(string)
        case let .blob(data): self = .blob(data)
        }
    }

    /// The SQLite value.
    var databaseValue: DatabaseValue {
        switch self {
        case .null: return .null
        case let .integer(integer): return integer.databaseValue
        case let .real(double): return double.databaseValue
        case let .text(string): return string.databaseValue
        case let .blob(data): return data.databaseValue
        }
    }

    /// Whether this is SQL NULL.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value as SQL would print it (blobs as their size).
    public var description: String {
        switch self {
        case .null: return "NULL"
        case let .integer(integer): return String(integer)
        case let .real(double): return String(double)
        case let .text(string): return String(reflecting: string)
        case let .blob(data): return "<\(data.count) bytes>"
        }
    }
}
