import GRDB

/// A piece of SQL and the values bound to its `?` placeholders, in order.
///
/// Built by interpolation, so that SQL and arguments can never drift apart:
/// `"(\(lhs) = \(rhs))"` appends each operand's SQL and arguments in place.
struct SQLText: ExpressibleByStringInterpolation {
    var sql: String
    var arguments: [DatabaseValue]

    init(sql: String, arguments: [DatabaseValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    /// One `?` bound to `value`.
    static func bound(_ value: DatabaseValue) -> SQLText {
        SQLText(sql: "?", arguments: [value])
    }

    init(stringLiteral value: String) {
        self.init(sql: value)
    }

    init(stringInterpolation: Interpolation) {
        self = stringInterpolation.text
    }

    /// Appends literal SQL and other texts with their arguments.
    struct Interpolation: StringInterpolationProtocol {
        var text = SQLText(sql: "")

        init(literalCapacity: Int, interpolationCount: Int) {
            text.sql.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        mutating func appendLiteral(_ literal: String) {
            text.sql += literal
        }

        mutating func appendInterpolation(_ other: SQLText) {
            text.sql += other.sql
            text.arguments += other.arguments
        }

        /// Raw SQL (an identifier already quoted, an alias, a keyword).
        mutating func appendInterpolation(raw: String) {
            text.sql += raw
        }
    }

    /// The texts joined by `separator`.
    static func joined(_ parts: [SQLText], separator: String) -> SQLText {
        var result = SQLText(sql: "")
        for (index, part) in parts.enumerated() {
            if index > 0 { result.sql += separator }
            result.sql += part.sql
            result.arguments += part.arguments
        }
        return result
    }
}
