import Foundation
import GRDB

/// The SQLite type of a column.
enum ColumnType: String, Sendable {
    case integer = "INTEGER"
    case real = "REAL"
    case text = "TEXT"
    case blob = "BLOB"
}

/// How values of one Swift type are stored in one SQLite column, and read back.
///
/// The mapping (chosen once per property when the schema is built):
/// - `Bool` and every integer type: INTEGER (`UInt`/`UInt64` above `Int64.max` cannot be stored)
/// - `Double`, `Float`: REAL (SQLite keeps integral REAL values as integers on disk, so `-0.0`
///   reads back as `0.0`)
/// - `String`: TEXT (a string with a NUL character is refused: SQLite text ends at NUL); `URL`: TEXT (absolute string); `Decimal`: TEXT (exact description)
/// - `Date`: REAL seconds since 2001-01-01, the value `Date` itself holds, so it round-trips exactly
/// - `Data`: BLOB; `UUID`: 16-byte BLOB
/// - an enum with a raw value of one of these types: the raw value's column
/// - any other `Codable` value (structs, enums with payloads, arrays, dictionaries): JSON TEXT
///   with sorted keys
/// - `Optional` of any of these: the same column, nullable
struct ValueCodec: @unchecked Sendable {
    // @unchecked Sendable: the two closures capture only metatypes and immutable values.
    let columnType: ColumnType
    let isOptional: Bool
    /// A readable name of the stored form, for the store's layout record.
    let storageName: String
    /// Whether SQLite's order of the stored form is Swift's order of the values (numbers, dates,
    /// strings); false for JSON, UUID, URL, Decimal, Data and raw-value enums, which sort in memory.
    var sortsLikeSwift: Bool = true
    let encode: (Any) throws -> DatabaseValue
    let decode: (DatabaseValue) throws -> Any

    /// The value a property of this type holds when nothing else is known (a fetched model's
    /// ephemeral property without a default, a model whose row has vanished): nil, zero, empty.
    var emptyValue: Any? = nil

    /// The codec for a property type, or nil when the type cannot be stored.
    static func make(for type: any Any.Type) -> ValueCodec? {
        guard var codec = makeCodec(for: type) else { return nil }
        codec.emptyValue = empty(of: type)
        return codec
    }

    private static func empty(of type: any Any.Type) -> Any? {
        if let optional = type as? any _OptionalType.Type { return optional._none }
        switch type {
        case is Bool.Type: return false
        case is String.Type: return ""
        case is Double.Type: return 0.0 as Double
        case is Float.Type: return 0.0 as Float
        case is Data.Type: return Data()
        case is Date.Type: return Date(timeIntervalSinceReferenceDate: 0)
        case is Decimal.Type: return Decimal(0)
        case is UUID.Type: return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        default: break
        }
        if let integer = type as? any FixedWidthInteger.Type { return integer.zero }
        if let collection = type as? any RangeReplaceableCollection.Type { return collection.init() }
        return nil
    }

    private static func makeCodec(for type: any Any.Type) -> ValueCodec? {
        if let optional = type as? any _OptionalType.Type {
            guard let wrapped = makeCodec(for: optional._wrappedType), !wrapped.isOptional else { return nil }
            let none = optional._none
            return ValueCodec(
                columnType: wrapped.columnType, isOptional: true, storageName: wrapped.storageName + "?",
                sortsLikeSwift: wrapped.sortsLikeSwift,
                encode: { value in
                    guard let optional = value as? any _OptionalType else { return try wrapped.encode(value) }
                    guard let unwrapped = optional._wrappedValue else { return .null }
                    return try wrapped.encode(unwrapped)
                },
                decode: { stored in
                    stored.isNull ? none : try wrapped.decode(stored)
                }
            )
        }
        if let scalar = scalarCodec(for: type) { return scalar }
        if let raw = type as? any RawRepresentable.Type, let codec = rawValueCodec(raw) { return codec }
        if let codable = type as? any Codable.Type { return jsonCodec(codable) }
        return nil
    }

    private static func scalarCodec(for type: any Any.Type) -> ValueCodec? {
        switch type {
        case is Bool.Type: return scalar(Bool.self, .integer)
        case is Int.Type: return scalar(Int.self, .integer)
        case is Int8.Type: return scalar(Int8.self, .integer)
        case is Int16.Type: return scalar(Int16.self, .integer)
        case is Int32.Type: return scalar(Int32.self, .integer)
        case is Int64.Type: return scalar(Int64.self, .integer)
        case is UInt8.Type: return scalar(UInt8.self, .integer)
        case is UInt16.Type: return scalar(UInt16.self, .integer)
        case is UInt32.Type: return scalar(UInt32.self, .integer)
        case is UInt.Type: return unsignedCodec(UInt.self)
        case is UInt64.Type: return unsignedCodec(UInt64.self)
        case is Double.Type: return scalar(Double.self, .real)
        case is Float.Type: return scalar(Float.self, .real)
        case is String.Type:
            return ValueCodec(
                columnType: .text, isOptional: false, storageName: "String",
                encode: { value in
                    guard let string = value as? String else { throw mismatch(value, String.self) }
                    // SQLite's C API ends text at a NUL byte: refuse rather than truncate.
                    if string.utf8.contains(0) { throw ValueCodecError("the string contains a NUL character, which SQLite text cannot hold") }
                    return string.databaseValue
                },
                decode: { stored in
                    guard let string = String.fromDatabaseValue(stored) else { throw undecodable(stored, String.self) }
                    return string
                }
            )
        case is Data.Type:
            var codec = scalar(Data.self, .blob)
            codec.sortsLikeSwift = false
            return codec
        case is Date.Type:
            return ValueCodec(
                columnType: .real, isOptional: false, storageName: "Date",
                encode: { value in
                    guard let date = value as? Date else { throw mismatch(value, Date.self) }
                    return date.timeIntervalSinceReferenceDate.databaseValue
                },
                decode: { stored in
                    guard let seconds = Double.fromDatabaseValue(stored) else { throw undecodable(stored, Date.self) }
                    return Date(timeIntervalSinceReferenceDate: seconds)
                }
            )
        case is UUID.Type:
            return ValueCodec(
                columnType: .blob, isOptional: false, storageName: "UUID", sortsLikeSwift: false,
                encode: { value in
                    guard let uuid = value as? UUID else { throw mismatch(value, UUID.self) }
                    return withUnsafeBytes(of: uuid.uuid) { Data($0) }.databaseValue
                },
                decode: { stored in
                    guard case let .blob(data) = stored.storage, data.count == 16 else { throw undecodable(stored, UUID.self) }
                    var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                    withUnsafeMutableBytes(of: &bytes) { $0.copyBytes(from: data) }
                    return UUID(uuid: bytes)
                }
            )
        case is URL.Type:
            return ValueCodec(
                columnType: .text, isOptional: false, storageName: "URL", sortsLikeSwift: false,
                encode: { value in
                    guard let url = value as? URL else { throw mismatch(value, URL.self) }
                    return url.absoluteString.databaseValue
                },
                decode: { stored in
                    guard let text = String.fromDatabaseValue(stored), let url = URL(string: text) else { throw undecodable(stored, URL.self) }
                    return url
                }
            )
        case is Decimal.Type:
            return ValueCodec(
                columnType: .text, isOptional: false, storageName: "Decimal", sortsLikeSwift: false,
                encode: { value in
                    guard let decimal = value as? Decimal else { throw mismatch(value, Decimal.self) }
                    return decimal.description.databaseValue
                },
                decode: { stored in
                    guard let text = String.fromDatabaseValue(stored), let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
                        throw undecodable(stored, Decimal.self)
                    }
                    return decimal
                }
            )
        default:
            return nil
        }
    }

    private static func scalar<T: DatabaseValueConvertible>(_ type: T.Type, _ column: ColumnType) -> ValueCodec {
        ValueCodec(
            columnType: column, isOptional: false, storageName: "\(T.self)",
            encode: { value in
                guard let typed = value as? T else { throw mismatch(value, T.self) }
                return typed.databaseValue
            },
            decode: { stored in
                guard let typed = T.fromDatabaseValue(stored) else { throw undecodable(stored, T.self) }
                return typed
            }
        )
    }

    private static func unsignedCodec<T: FixedWidthInteger & UnsignedInteger>(_ type: T.Type) -> ValueCodec {
        ValueCodec(
            columnType: .integer, isOptional: false, storageName: "\(T.self)",
            encode: { value in
                guard let typed = value as? T else { throw mismatch(value, T.self) }
                guard let signed = Int64(exactly: typed) else {
                    throw ValueCodecError("\(typed) is larger than the largest storable integer (\(Int64.max))")
                }
                return signed.databaseValue
            },
            decode: { stored in
                guard let signed = Int64.fromDatabaseValue(stored), let typed = T(exactly: signed) else { throw undecodable(stored, T.self) }
                return typed
            }
        )
    }

    private static func rawValueCodec<R: RawRepresentable>(_ type: R.Type) -> ValueCodec? {
        guard let raw = scalarCodec(for: R.RawValue.self) else { return nil }
        return ValueCodec(
            columnType: raw.columnType, isOptional: false, storageName: "\(R.self)(raw: \(raw.storageName))", sortsLikeSwift: false,
            encode: { value in
                guard let typed = value as? R else { throw mismatch(value, R.self) }
                return try raw.encode(typed.rawValue)
            },
            decode: { stored in
                guard let rawValue = try raw.decode(stored) as? R.RawValue, let typed = R(rawValue: rawValue) else {
                    throw undecodable(stored, R.self)
                }
                return typed
            }
        )
    }

    private static func jsonCodec<T: Codable>(_ type: T.Type) -> ValueCodec {
        ValueCodec(
            columnType: .text, isOptional: false, storageName: "JSON(\(T.self))", sortsLikeSwift: false,
            encode: { value in
                guard let typed = value as? T else { throw mismatch(value, T.self) }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                let data = try encoder.encode(typed)
                return (String(data: data, encoding: .utf8) ?? "").databaseValue
            },
            decode: { stored in
                guard let text = String.fromDatabaseValue(stored) else { throw undecodable(stored, T.self) }
                return try JSONDecoder().decode(T.self, from: Data(text.utf8))
            }
        )
    }

    private static func mismatch(_ value: Any, _ expected: Any.Type) -> ValueCodecError {
        ValueCodecError("a value of type \(type(of: value)) where \(expected) was expected")
    }

    private static func undecodable(_ stored: DatabaseValue, _ expected: Any.Type) -> ValueCodecError {
        ValueCodecError("stored value \(stored) cannot be read as \(expected)")
    }
}

/// Why a value could not be encoded or decoded; wrapped into a ``SwiftDataError`` naming the
/// entity and property by the caller.
struct ValueCodecError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
