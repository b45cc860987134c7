import Foundation
import GRDB
import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol

/// A property type that can merge as a set: an array or a `Set` of `Codable & Hashable`
/// elements, stored as a JSON array.
protocol SetMergeable {
    /// The value of this type that a JSON array holds.
    static func decodeSet(_ json: String) throws -> Any
}

extension Array: SetMergeable where Element: Codable & Hashable {
    static func decodeSet(_ json: String) throws -> Any { try JSONDecoder().decode(Self.self, from: Data(json.utf8)) }
}

extension Set: SetMergeable where Element: Codable {
    static func decodeSet(_ json: String) throws -> Any { try JSONDecoder().decode(Self.self, from: Data(json.utf8)) }
}

/// Between a merged set's stored form (a JSON TEXT column, as the property's codec writes it),
/// its elements (``SetElements``: each element's JSON text, which the codec writes with sorted
/// keys and no whitespace, so that it is the element's canonical text) and the Swift value of
/// its property.
enum SetBridge {
    /// Whether a property of this type can be a set.
    static func isSetType(_ type: Any.Type) -> Bool { type is any SetMergeable.Type }

    /// The elements of a stored value, without repeats (nil: NULL, or not a JSON array).
    static func elements(_ value: DatabaseValue) -> [String]? {
        guard case let .string(text) = value.storage, let elements = SetElements.split(text) else { return nil }
        return SetElements.unique(elements)
    }

    /// The stored form of elements.
    static func stored(_ elements: [String]) -> DatabaseValue {
        SetElements.json(elements).databaseValue
    }

    /// The value of a property of `type` holding `elements` (nil: they do not decode as it).
    static func swiftValue(_ elements: [String], as type: Any.Type) -> Any? {
        guard let mergeable = type as? any SetMergeable.Type else { return nil }
        return try? mergeable.decodeSet(SetElements.json(elements))
    }

    /// A save's contribution in the log's stored form: `{"add": [...], "remove": [...]}`.
    static func storedChange(_ change: SetChange) -> DatabaseValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(change)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self).databaseValue
    }
}

/// A set's save's contribution in the property's terms, which undoing the save takes back from
/// whatever the set then holds: the elements it added go, those it removed come back.
struct SetDifference {
    /// The elements added, as JSON texts.
    let adds: [String]
    /// The elements removed, as JSON texts.
    let removes: [String]
    /// The property's type.
    let type: Any.Type
}
