import Foundation
import GRDB
import GRDBSQLite

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
/// - `String`: TEXT (a string with a NUL character is refused: SQLite text ends at NUL);
///   `URL`: TEXT (absolute string); `Decimal`: TEXT (exact description)
/// - `Date`: REAL seconds since 2001-01-01, the value `Date` itself holds, so it round-trips exactly
/// - `Data`: BLOB; `UUID`: 16-byte BLOB
/// - an enum with a raw value of one of these types: the raw value's column
/// - any other `Codable` value (structs, enums with payloads, arrays, dictionaries): JSON TEXT
///   with sorted keys
/// - `Optional` of any of these: the same column, nullable
///
/// A codec works on values in place: ``readIntoSlot`` decodes the current row's column straight
/// into a model's typed value slot, and ``encodeSlot`` encodes a slot, so neither boxes values.
struct ValueCodec: @unchecked Sendable {
    // @unchecked Sendable: immutable; the closures capture only metatypes and immutable values.
    let columnType: ColumnType
    let isOptional: Bool
    /// What the values are (a raw-value enum's are its raw values'): what other layers read to
    /// know a property's kind (sync capture, JSON predicates), never ``storageName``.
    let kind: StoredKind
    /// A readable name of the stored form, for the store's layout record.
    let storageName: String
    /// Whether SQLite's order of the stored form is Swift's order of the values (numbers, dates,
    /// strings); false for JSON, UUID, URL, Decimal, Data and raw-value enums, which sort in memory.
    let sortsLikeSwift: Bool
    /// Whether a value's stored form is also how `JSONEncoder` writes it inside an array or
    /// object (numbers, strings, dates as seconds), so predicates can compare JSON elements with
    /// it; false for `Float`, `Data`, `UUID`, `Decimal` and JSON-coded values.
    let isJSONScalar: Bool
    /// Whether values are stored as JSON text (Codable values other than the scalar types).
    var isJSONCoded: Bool { kind == .json }
    /// How values of the property's type sit in a model's value buffer.
    let slot: SlotWitness
    /// The value a property of this type holds when nothing else is known (a fetched model's
    /// ephemeral property without a default, a model whose row has vanished): nil, zero, empty.
    let emptyValue: Any?
    /// Encodes the initialized value at a slot.
    let encodeSlot: (UnsafeRawPointer) throws -> DatabaseValue
    /// Decodes column `index` of the statement's current row into an uninitialized slot.
    let readIntoSlot: (SQLiteStatement, CInt, UnsafeMutableRawPointer) throws -> Void
    /// The cases of a raw-value enum, which a row reader copies into slots without
    /// `readIntoSlot` (nil for other types).
    let cases: CaseTable?

    init<T>(_ typed: TypedCodec<T>, isOptional: Bool, emptyValue: T?) {
        columnType = typed.columnType
        kind = typed.kind
        self.isOptional = isOptional
        storageName = typed.storageName
        sortsLikeSwift = typed.sortsLikeSwift
        isJSONScalar = typed.isJSONScalar
        slot = SlotWitness.of(T.self)
        self.emptyValue = emptyValue.map { $0 as Any }
        encodeSlot = typed.encodeSlot
        readIntoSlot = typed.readIntoSlot
        cases = typed.cases
    }

    /// The codec for a type, made once per type and shared (predicates bind constants through
    /// it on every fetch).
    static func cached(for type: any Any.Type) -> ValueCodec? {
        let key = ObjectIdentifier(type)
        if let hit = cacheLock.withLock({ cache[key] }) { return hit }
        let codec = make(for: type)
        cacheLock.withLock { cache[key] = codec }
        return codec
    }

    private static let cacheLock = NSLock()
    // Guarded by `cacheLock`.
    nonisolated(unsafe) private static var cache: [ObjectIdentifier: ValueCodec?] = [:]

    /// The codec for a property type, or nil when the type cannot be stored.
    static func make(for type: any Any.Type) -> ValueCodec? {
        if let optional = type as? any OptionalCodecProvider.Type { return optional.makeOptionalCodec() }
        func open<T>(_ type: T.Type) -> ValueCodec? {
            guard SlotWitness.fits(T.self), let typed = TypedCodec<T>.make() else { return nil }
            return ValueCodec(typed, isOptional: false, emptyValue: TypedCodec<T>.empty())
        }
        return open(type)
    }
}

/// Builds the codec of `Optional<Wrapped>` from `Wrapped`'s.
protocol OptionalCodecProvider {
    static func makeOptionalCodec() -> ValueCodec?
}

extension Optional: OptionalCodecProvider {
    static func makeOptionalCodec() -> ValueCodec? {
        // `T??` has no column form: NULL could not tell the two nils apart.
        guard !(Wrapped.self is any OptionalCodecProvider.Type), SlotWitness.fits(Wrapped?.self),
            let wrapped = TypedCodec<Wrapped>.make()
        else { return nil }
        return ValueCodec(wrapped.optional(), isOptional: true, emptyValue: .some(nil))
    }
}

/// What a property's values are, as the store keeps them: one of the scalar types, JSON text
/// of any other `Codable` value, or a relationship. Typed, so that no layer (sync capture, the
/// predicate translator) parses a codec's storage name.
enum StoredKind: Sendable, Hashable {
    /// `Bool`, stored as INTEGER 0 or 1.
    case bool
    /// Any fixed-width integer, stored as INTEGER.
    case integer
    /// `Double` or `Float`, stored as REAL.
    case double
    /// `String`, stored as TEXT.
    case string
    /// `Date`, stored as REAL seconds since 2001-01-01.
    case date
    /// `Data`, stored as BLOB.
    case data
    /// `UUID`, stored as a 16-byte BLOB.
    case uuid
    /// `Decimal`, stored as TEXT (its exact description).
    case decimal
    /// `URL`, stored as TEXT (its absolute string).
    case url
    /// Any other `Codable` value, stored as JSON TEXT with sorted keys.
    case json
    /// A to-one relationship's foreign key: INTEGER, the related row's key, or NULL.
    case foreignKey
    /// A relationship without a column of its own.
    case relationship
}

/// A codec for one Swift type, with typed closures.
struct TypedCodec<T> {
    let columnType: ColumnType
    let kind: StoredKind
    let storageName: String
    let sortsLikeSwift: Bool
    let isJSONScalar: Bool
    let encode: (T) throws -> DatabaseValue
    /// Reads a non-NULL column of the current row; NULL or a value of another storage class is
    /// an error.
    let read: (SQLiteStatement, CInt) throws -> T
    /// `read`, initializing a slot in place.
    let readIntoSlot: (SQLiteStatement, CInt, UnsafeMutableRawPointer) throws -> Void
    /// `encode`, of the value at a slot.
    let encodeSlot: (UnsafeRawPointer) throws -> DatabaseValue
    /// The cases of a raw-value enum, which a row reader copies into slots without `read`.
    let cases: CaseTable?

    /// Creates a codec. Always inlined, so that the slot closures are specialized wherever `T`
    /// is a concrete type (the scalar codecs), rather than going through generic value witnesses.
    /// `cases`, when given, must read what `read` reads (see ``CaseTable``).
    @inline(__always)
    init(
        columnType: ColumnType, kind: StoredKind, storageName: String, sortsLikeSwift: Bool = true, isJSONScalar: Bool = true,
        encode: @escaping (T) throws -> DatabaseValue, read: @escaping (SQLiteStatement, CInt) throws -> T, cases: CaseTable? = nil
    ) {
        self.columnType = columnType
        self.kind = kind
        self.storageName = storageName
        self.sortsLikeSwift = sortsLikeSwift
        self.isJSONScalar = isJSONScalar
        self.encode = encode
        self.read = read
        self.cases = cases
        self.readIntoSlot = { statement, index, slot in slot.initializeMemory(as: T.self, to: try read(statement, index)) }
        self.encodeSlot = { slot in try encode(slot.load(as: T.self)) }
    }

    /// The same codec for `T?`: NULL is nil.
    func optional() -> TypedCodec<T?> {
        let encode = self.encode
        let read = self.read
        return TypedCodec<T?>(
            columnType: columnType, kind: kind, storageName: storageName + "?", sortsLikeSwift: sortsLikeSwift, isJSONScalar: isJSONScalar,
            encode: { value in try value.map(encode) ?? .null },
            read: { statement, index in
                sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : try read(statement, index)
            }
        )
    }

    /// The codec for `T`, or nil when `T` cannot be stored.
    static func make() -> TypedCodec<T>? {
        if let scalar = ScalarCodecs.codec(for: T.self) as? TypedCodec<T> { return scalar }
        if let raw = T.self as? any RawRepresentable.Type, let codec = erasedRawValue(raw) as? TypedCodec<T> { return codec }
        if let codable = T.self as? any Codable.Type { return erasedJSON(codable) as? TypedCodec<T> }
        return nil
    }

    /// nil, zero or empty for the types that have such a value.
    static func empty() -> T? {
        let value: Any?
        switch T.self {
        case is Bool.Type: value = false
        case is String.Type: value = ""
        case is Double.Type: value = 0.0 as Double
        case is Float.Type: value = 0.0 as Float
        case is Data.Type: value = Data()
        case is Date.Type: value = Date(timeIntervalSinceReferenceDate: 0)
        case is Decimal.Type: value = Decimal(0)
        case is UUID.Type: value = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        default:
            if let integer = T.self as? any FixedWidthInteger.Type {
                value = integer.zero
            } else if let collection = T.self as? any RangeReplaceableCollection.Type {
                value = collection.init()
            } else {
                value = nil
            }
        }
        return value as? T
    }

    // Erased to `Any?` so that Swift opens the existential metatypes passed in.
    private static func erasedRawValue<R: RawRepresentable>(_ type: R.Type) -> Any? { rawValue(type) }
    private static func erasedJSON<C: Codable>(_ type: C.Type) -> Any? { json(type) }

    private static func rawValue<R: RawRepresentable>(_ type: R.Type) -> TypedCodec<R>? {
        guard let raw = ScalarCodecs.codec(for: R.RawValue.self) as? TypedCodec<R.RawValue> else { return nil }
        // The closures capture only the raw codec's closures they call, not the whole codec.
        let encodeRaw = raw.encode
        let readRaw = raw.read
        let read: (SQLiteStatement, CInt) throws -> R = { statement, index in
            let rawValue = try readRaw(statement, index)
            guard let value = R(rawValue: rawValue) else { throw ValueCodecError("stored raw value \(rawValue) is not a case of \(R.self)") }
            return value
        }
        // A stored value of a known case is copied in as bytes by the row reader: `read`, generic
        // code that is not specialized, looks `Optional<R>`'s metadata up for every row.
        return TypedCodec<R>(
            columnType: raw.columnType, kind: raw.kind, storageName: "\(R.self)(raw: \(raw.storageName))", sortsLikeSwift: false,
            isJSONScalar: raw.isJSONScalar,
            encode: { value in try encodeRaw(value.rawValue) }, read: read, cases: CaseTable.make(R.self, encode: encodeRaw)
        )
    }

    private static func json<C: Codable>(_ type: C.Type) -> TypedCodec<C> {
        TypedCodec<C>(
            columnType: .text, kind: .json, storageName: "JSON(\(C.self))", sortsLikeSwift: false, isJSONScalar: false,
            encode: { value in
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                let data = try encoder.encode(value)
                return (String(data: data, encoding: .utf8) ?? "").databaseValue
            },
            read: { statement, index in
                try JSONDecoder().decode(C.self, from: Data(try SQLiteColumn.text(statement, index).utf8))
            })
    }
}

/// The codecs of the scalar types, built where each type is concrete so that their closures are
/// fully specialized (no generic value witnesses on the per-row path).
enum ScalarCodecs {
    /// The codec of a scalar type, erased, or nil for other types.
    static func codec(for type: Any.Type) -> Any? {
        let codec: Any?
        switch type {
        case is Bool.Type:
            codec = TypedCodec<Bool>(
                columnType: .integer, kind: .bool, storageName: "Bool", encode: { $0.databaseValue },
                read: { statement, index in
                    try SQLiteColumn.int64(statement, index) != 0
                })
        case is Int.Type: codec = integer(Int.self)
        case is Int8.Type: codec = integer(Int8.self)
        case is Int16.Type: codec = integer(Int16.self)
        case is Int32.Type: codec = integer(Int32.self)
        case is Int64.Type: codec = integer(Int64.self)
        case is UInt.Type: codec = integer(UInt.self)
        case is UInt8.Type: codec = integer(UInt8.self)
        case is UInt16.Type: codec = integer(UInt16.self)
        case is UInt32.Type: codec = integer(UInt32.self)
        case is UInt64.Type: codec = integer(UInt64.self)
        case is Double.Type:
            codec = TypedCodec<Double>(
                columnType: .real, kind: .double, storageName: "Double", encode: { $0.databaseValue }, read: SQLiteColumn.double)
        case is Float.Type:
            codec = TypedCodec<Float>(
                columnType: .real, kind: .double, storageName: "Float", isJSONScalar: false, encode: { Double($0).databaseValue },
                read: { statement, index in
                    Float(try SQLiteColumn.double(statement, index))
                })
        case is String.Type:
            codec = TypedCodec<String>(
                columnType: .text, kind: .string, storageName: "String",
                encode: { string in
                    // SQLite's C API ends text at a NUL byte: refuse rather than truncate.
                    if string.utf8.contains(0) { throw ValueCodecError("the string contains a NUL character, which SQLite text cannot hold") }
                    return string.databaseValue
                }, read: SQLiteColumn.text)
        case is Data.Type:
            codec = TypedCodec<Data>(
                columnType: .blob, kind: .data, storageName: "Data", sortsLikeSwift: false, isJSONScalar: false, encode: { $0.databaseValue },
                read: SQLiteColumn.blob)
        case is Date.Type:
            codec = TypedCodec<Date>(
                columnType: .real, kind: .date, storageName: "Date", encode: { $0.timeIntervalSinceReferenceDate.databaseValue },
                read: { statement, index in
                    Date(timeIntervalSinceReferenceDate: try SQLiteColumn.double(statement, index))
                })
        case is UUID.Type:
            codec = TypedCodec<UUID>(
                columnType: .blob, kind: .uuid, storageName: "UUID", sortsLikeSwift: false, isJSONScalar: false,
                encode: { uuid in
                    withUnsafeBytes(of: uuid.uuid) { Data($0) }.databaseValue
                }, read: SQLiteColumn.uuid)
        case is URL.Type:
            codec = TypedCodec<URL>(
                columnType: .text, kind: .url, storageName: "URL", sortsLikeSwift: false, encode: { $0.absoluteString.databaseValue },
                read: { statement, index in
                    let text = try SQLiteColumn.text(statement, index)
                    guard let url = URL(string: text) else { throw ValueCodecError("stored text \"\(text.prefix(80))\" is not a URL") }
                    return url
                })
        case is Decimal.Type:
            codec = TypedCodec<Decimal>(
                columnType: .text, kind: .decimal, storageName: "Decimal", sortsLikeSwift: false, isJSONScalar: false,
                encode: { $0.description.databaseValue },
                read: { statement, index in
                    let text = try SQLiteColumn.text(statement, index)
                    guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
                        throw ValueCodecError("stored text \"\(text.prefix(80))\" is not a decimal number")
                    }
                    return decimal
                })
        default:
            codec = nil
        }
        return codec
    }

    static func integer<I: FixedWidthInteger>(_ type: I.Type) -> TypedCodec<I> {
        TypedCodec<I>(
            columnType: .integer, kind: .integer, storageName: "\(I.self)",
            encode: { value in
                guard let signed = Int64(exactly: value) else {
                    throw ValueCodecError("\(value) is larger than the largest storable integer (\(Int64.max))")
                }
                return signed.databaseValue
            },
            read: { statement, index in
                let stored = try SQLiteColumn.int64(statement, index)
                guard let value = I(exactly: stored) else { throw ValueCodecError("stored integer \(stored) does not fit in \(I.self)") }
                return value
            })
    }

}

/// Reads one column of a statement's current row through SQLite's C API, checking its storage
/// class (a STRICT table guarantees it, a damaged file may not).
enum SQLiteColumn {
    static func int64(_ statement: SQLiteStatement, _ index: CInt) throws -> Int64 {
        try expect(SQLITE_INTEGER, statement, index)
        return sqlite3_column_int64(statement, index)
    }

    static func double(_ statement: SQLiteStatement, _ index: CInt) throws -> Double {
        let type = sqlite3_column_type(statement, index)
        guard type == SQLITE_FLOAT || type == SQLITE_INTEGER else { throw unexpected(type, "REAL") }
        return sqlite3_column_double(statement, index)
    }

    static func text(_ statement: SQLiteStatement, _ index: CInt) throws -> String {
        try expect(SQLITE_TEXT, statement, index)
        guard let bytes = sqlite3_column_text(statement, index) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    static func blob(_ statement: SQLiteStatement, _ index: CInt) throws -> Data {
        try expect(SQLITE_BLOB, statement, index)
        let count = Int(sqlite3_column_bytes(statement, index))
        guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    static func uuid(_ statement: SQLiteStatement, _ index: CInt) throws -> UUID {
        try expect(SQLITE_BLOB, statement, index)
        guard sqlite3_column_bytes(statement, index) == 16, let bytes = sqlite3_column_blob(statement, index) else {
            throw ValueCodecError("stored blob of \(sqlite3_column_bytes(statement, index)) bytes is not a UUID")
        }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: 16)) }
        return UUID(uuid: value)
    }

    private static func expect(_ type: CInt, _ statement: SQLiteStatement, _ index: CInt) throws {
        let actual = sqlite3_column_type(statement, index)
        guard actual == type else { throw unexpected(actual, name(of: type)) }
    }

    private static func unexpected(_ actual: CInt, _ expected: String) -> ValueCodecError {
        actual == SQLITE_NULL
            ? ValueCodecError("stored NULL in a column that must hold \(expected)")
            : ValueCodecError("stored \(name(of: actual)) where \(expected) was expected")
    }

    private static func name(of type: CInt) -> String {
        switch type {
        case SQLITE_INTEGER: return "INTEGER"
        case SQLITE_FLOAT: return "REAL"
        case SQLITE_TEXT: return "TEXT"
        case SQLITE_BLOB: return "BLOB"
        default: return "NULL"
        }
    }
}

/// Why a value could not be encoded or decoded; wrapped into a ``SwiftDataError`` naming the
/// entity and property by the caller.
struct ValueCodecError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
