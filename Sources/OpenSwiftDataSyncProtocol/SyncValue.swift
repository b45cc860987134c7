import Foundation

/// The kind of a field's value, as the schema declares it. The wire carries it with every
/// value so that a value keeps its exact type between devices that never share a schema file,
/// and so that the server can refuse a value of another kind than the one a field holds.
public enum SyncValueKind: String, Codable, Sendable, CaseIterable {
    /// `Bool`.
    case bool
    /// Any integer width, carried as a 64-bit signed integer.
    case int
    /// `Double` and `Float`.
    case double
    /// `String`.
    case string
    /// `Date`, as seconds since 2001-01-01 (the value `Date` holds), so it round-trips bit for bit.
    case date
    /// `Data`, base64 on the wire.
    case data
    /// `UUID`.
    case uuid
    /// `Decimal`, as its text.
    case decimal
    /// `URL`, as its absolute string.
    case url
    /// Any other `Codable` value (structs, arrays, dictionaries), as JSON text.
    case json
    /// A to-one relationship: the record id of the related record.
    case reference
    /// Bytes kept outside the record (an `.externalStorage` value): their ``BlobReference``,
    /// whose bytes travel on the blob endpoints. A field of kind ``data`` may hold one.
    case blob
}

/// One field's value on the wire: `{"t": kind, "v": value}`, or JSON `null` for nil.
///
/// ```json
/// {"t": "string", "v": "Lisbon"}    {"t": "int", "v": 42}    {"t": "date", "v": 786297600.5}
/// {"t": "uuid", "v": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"}  {"t": "reference", "v": "note-17"}
/// {"t": "double", "v": "nan"}       {"t": "data", "v": "AAEC"}
/// ```
public enum SyncValue: Hashable, Sendable, Codable, CustomStringConvertible {
    /// No value (an optional that is nil, or a to-one relationship that is empty).
    case null
    /// A `Bool`.
    case bool(Bool)
    /// An integer of any width.
    case int(Int64)
    /// A floating-point number; `nan` and the infinities travel as `"nan"`, `"inf"`, `"-inf"`.
    case double(Double)
    /// A string.
    case string(String)
    /// A date, as seconds since 2001-01-01 00:00:00 UTC.
    case date(Double)
    /// Bytes.
    case data(Data)
    /// A UUID.
    case uuid(UUID)
    /// A decimal number's exact text (`"12.50"`).
    case decimal(String)
    /// A URL's absolute string.
    case url(String)
    /// A `Codable` value's JSON text.
    case json(String)
    /// A to-one relationship, by the related record's id.
    case reference(RecordID)
    /// Bytes kept outside the record, by digest and size.
    case blob(BlobReference)

    /// The kind of this value, or nil for ``null``.
    public var kind: SyncValueKind? {
        switch self {
        case .null: nil
        case .bool: .bool
        case .int: .int
        case .double: .double
        case .string: .string
        case .date: .date
        case .data: .data
        case .uuid: .uuid
        case .decimal: .decimal
        case .url: .url
        case .json: .json
        case .reference: .reference
        case .blob: .blob
        }
    }

    private enum CodingKeys: String, CodingKey { case t, v }

    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), single.decodeNil() {
            self = .null
            return
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kindText = try container.decode(String.self, forKey: .t)
        guard let kind = SyncValueKind(rawValue: kindText) else {
            throw DecodingError.dataCorruptedError(
                forKey: .t, in: container,
                debugDescription:
                    "unknown value kind \(kindText.debugDescription); known kinds: \(SyncValueKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        switch kind {
        case .bool: self = .bool(try container.decode(Bool.self, forKey: .v))
        case .int: self = .int(try container.decode(Int64.self, forKey: .v))
        case .double:
            // A number first: the common case, decoded without a thrown (and caught) error.
            if let number = try? container.decode(Double.self, forKey: .v) {
                self = .double(number)
            } else {
                let text = try container.decode(String.self, forKey: .v)
                switch text {
                case "nan": self = .double(.nan)
                case "inf": self = .double(.infinity)
                case "-inf": self = .double(-.infinity)
                default:
                    throw DecodingError.dataCorruptedError(
                        forKey: .v, in: container,
                        debugDescription: "a double is a number, \"nan\", \"inf\" or \"-inf\", not \(text.debugDescription)")
                }
            }
        case .string: self = .string(try container.decode(String.self, forKey: .v))
        case .date: self = .date(try container.decode(Double.self, forKey: .v))
        case .data:
            let text = try container.decode(String.self, forKey: .v)
            guard let data = Data(base64Encoded: text) else {
                throw DecodingError.dataCorruptedError(forKey: .v, in: container, debugDescription: "data is base64 text")
            }
            self = .data(data)
        case .uuid:
            let text = try container.decode(String.self, forKey: .v)
            guard let uuid = UUID(uuidString: text) else {
                throw DecodingError.dataCorruptedError(forKey: .v, in: container, debugDescription: "\(text.debugDescription) is not a UUID")
            }
            self = .uuid(uuid)
        case .decimal:
            let text = try container.decode(String.self, forKey: .v)
            guard SyncValue.isDecimalText(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .v, in: container, debugDescription: "\(text.debugDescription) is not a decimal number")
            }
            self = .decimal(text)
        case .url: self = .url(try container.decode(String.self, forKey: .v))
        case .json: self = .json(try container.decode(String.self, forKey: .v))
        case .reference: self = .reference(try container.decode(String.self, forKey: .v))
        case .blob: self = .blob(try container.decode(BlobReference.self, forKey: .v))
        }
    }

    /// Whether `text` is a decimal number as `Decimal.description` writes it: an optional
    /// `-`, digits, optionally a `.` and digits, optionally an exponent (`e`/`E`, sign, digits).
    /// `Decimal(string:)` alone accepts a valid prefix (`"1,5"` reads as 1), so it is not a check.
    static func isDecimalText(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        func digits() -> Int {
            let count = bytes.prefix { $0 >= 0x30 && $0 <= 0x39 }.count
            bytes = bytes.dropFirst(count)
            return count
        }
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        var count = digits()
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            count += digits()
        }
        guard count > 0 else { return false }
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }

    public func encode(to encoder: any Encoder) throws {
        guard let kind else {
            var single = encoder.singleValueContainer()
            try single.encodeNil()
            return
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind.rawValue, forKey: .t)
        switch self {
        case .null: break
        case .bool(let value): try container.encode(value, forKey: .v)
        case .int(let value): try container.encode(value, forKey: .v)
        case .double(let value):
            if value.isNaN {
                try container.encode("nan", forKey: .v)
            } else if value.isInfinite {
                try container.encode(value < 0 ? "-inf" : "inf", forKey: .v)
            } else {
                try container.encode(value, forKey: .v)
            }
        case .string(let value), .decimal(let value), .url(let value), .json(let value), .reference(let value):
            try container.encode(value, forKey: .v)
        case .date(let value): try container.encode(value, forKey: .v)
        case .data(let value): try container.encode(value.base64EncodedString(), forKey: .v)
        case .uuid(let value): try container.encode(value.uuidString, forKey: .v)
        case .blob(let value): try container.encode(value, forKey: .v)
        }
    }

    public var description: String {
        switch self {
        case .null: "nil"
        case .bool(let value): "\(value)"
        case .int(let value): "\(value)"
        case .double(let value), .date(let value): "\(value)"
        case .string(let value), .decimal(let value), .url(let value), .json(let value): value.debugDescription
        case .reference(let value): "→\(value)"
        case .data(let value): "\(value.count) bytes"
        case .uuid(let value): value.uuidString
        case .blob(let value): "blob \(value.size) bytes \(value.digest.prefix(12))…"
        }
    }
}
