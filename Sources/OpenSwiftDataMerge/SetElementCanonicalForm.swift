import Foundation

extension SetElements {
    /// The canonical text of one JSON value: as `JSONEncoder` writes it with sorted keys and no
    /// whitespace, the form a model's stored JSON gives an element (nil: `element` is not one
    /// JSON value).
    ///
    /// The same element written another way (`"\u0062ob"` for `"bob"`, `1.0` for `1`, other key
    /// order or spacing) is the same element once canonical, so a server that makes elements
    /// canonical before it compares them counts it once.
    ///
    /// ```swift
    /// SetElements.canonical("\"\\u0062ob\"")        // "\"bob\""
    /// SetElements.canonical("{ \"b\": 1, \"a\": 2.0 }") // "{\"a\":2,\"b\":1}"
    /// SetElements.canonical("1,2")                 // nil: two values
    /// ```
    ///
    /// Integers beyond 64 bits are read as `Double`s, so two of them that differ only beyond a
    /// `Double`'s precision are one element.
    public static func canonical(_ element: String) -> String? {
        canonical([element])[0]
    }

    /// The canonical text of each of `elements` (nil for one that is not one JSON value), with
    /// one decoder and encoder for them all.
    public static func canonical(_ elements: [String]) -> [String?] {
        let decoder = JSONDecoder()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return elements.map { element in
            if let plain = plainCanonical(element) { return plain }
            guard let value = try? decoder.decode(JSONElement.self, from: Data(element.utf8)), let data = try? encoder.encode(value) else {
                return nil
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// The canonical text of a string of printable ASCII without quotes or backslashes (its
    /// slashes escaped), or of an integer without a sign or leading zero, taken without
    /// decoding (the common elements: ids and names); nil for anything else.
    private static func plainCanonical(_ element: String) -> String? {
        let bytes = element.utf8
        guard let first = bytes.first, let last = bytes.last else { return nil }
        if first == UInt8(ascii: "\""), last == UInt8(ascii: "\""), bytes.count >= 2 {
            var slashes = false
            for byte in bytes.dropFirst().dropLast() {
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { return nil }
                if byte == UInt8(ascii: "/") { slashes = true }
            }
            return slashes ? element.replacingOccurrences(of: "/", with: "\\/") : element
        }
        guard bytes.count <= 18, bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return first != UInt8(ascii: "0") || bytes.count == 1 ? element : nil
    }
}

/// Any one JSON value, read and written through `Codable`: numbers keep the exact integer
/// when they have one.
private enum JSONElement: Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case number(Double)
    case string(String)
    case array([JSONElement])
    case object([String: JSONElement])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsigned(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONElement].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONElement].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case let .bool(value): try container.encode(value)
        case let .integer(value): try container.encode(value)
        case let .unsigned(value): try container.encode(value)
        case let .number(value): try container.encode(value)
        case let .string(value): try container.encode(value)
        case let .array(value): try container.encode(value)
        case let .object(value): try container.encode(value)
        }
    }
}
