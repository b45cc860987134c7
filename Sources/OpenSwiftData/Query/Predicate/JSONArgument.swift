import Foundation
import GRDB

/// Captured collections bound as one JSON array argument, so that `IN` and subqueries over them
/// need one placeholder however many elements there are.
enum JSONArgument {
    /// `value` (a sequence) as JSON array text of its elements' stored forms.
    static func array(_ value: Any, translator: PredicateTranslator) throws -> DatabaseValue {
        guard let sequence = value as? any Sequence else { throw Untranslatable("\(type(of: value)) is not a sequence") }
        var text = "["
        var first = true
        func append<S: Sequence>(_ elements: S) throws {
            for element in elements {
                if !first { text += "," }
                first = false
                text += try scalar(translator.encode(element, as: .jsonElement))
            }
        }
        try append(sequence)
        text += "]"
        return text.databaseValue
    }

    /// The stored elements of a captured sequence, in order.
    static func elements(_ value: Any) throws -> [Any] {
        guard let sequence = value as? any Sequence else { throw Untranslatable("\(type(of: value)) is not a sequence") }
        func collect<S: Sequence>(_ elements: S) -> [Any] { elements.map { $0 as Any } }
        return collect(sequence)
    }

    /// One stored value as a JSON scalar.
    static func scalar(_ value: DatabaseValue) throws -> String {
        switch value.storage {
        case .null:
            return "null"
        case let .int64(integer):
            return String(integer)
        case let .double(double):
            guard double.isFinite else { throw Untranslatable("\(double) has no JSON form") }
            return "\(double)"
        case let .string(string):
            var escaped = "\""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": escaped += "\\\""
                case "\\": escaped += "\\\\"
                case _ where scalar.value < 0x20: escaped += String(format: "\\u%04x", scalar.value)
                default: escaped.unicodeScalars.append(scalar)
                }
            }
            return escaped + "\""
        case .blob:
            throw Untranslatable("binary values have no JSON form")
        }
    }
}
