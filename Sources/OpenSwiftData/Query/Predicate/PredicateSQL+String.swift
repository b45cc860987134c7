import Foundation
import GRDB

// String search. Plain `contains` and `starts(with:)` are case-sensitive and literal (`%`, `_`,
// `*`, `?` and `[` in the needle match themselves); the localized operations run Foundation's own
// comparison through SQL functions the store registers (see `SQLFunctions`).

extension PredicateExpressions.SequenceStartsWith: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let base = try translator.translate(base)
        let prefix = try translator.translate(prefix)
        if base.isConstant && prefix.isConstant { return try folded() }
        guard Base.Output.self == String.self, Prefix.Output.self == String.self else {
            throw Untranslatable("starts(with:) on \(Base.Output.self) has no SQL form")
        }
        let text = try translator.operand(base)
        if case let .constant(value) = prefix, let string = value as? String {
            if string.utf8.contains(0) { return .constant(false) }
            // GLOB is case-sensitive and lets SQLite use an index on the column.
            return .value("(\(text) GLOB \(SQLText.bound(StringPattern.globPrefix(string).databaseValue)))", .stored)
        }
        let needle = try translator.operand(prefix)
        return .value("(substr(\(text), 1, length(\(needle))) = \(needle))", .stored)
    }
}

extension PredicateExpressions.CollectionContainsCollection: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let base = try translator.translate(base)
        let other = try translator.translate(other)
        if base.isConstant && other.isConstant { return try folded() }
        guard Base.Output.self == String.self, Other.Output.self == String.self else {
            throw Untranslatable("contains(_:) on \(Base.Output.self) has no SQL form")
        }
        if case let .constant(value) = other, let string = value as? String, string.utf8.contains(0) { return .constant(false) }
        return .value("(instr(\(try translator.operand(base)), \(try translator.operand(other))) > 0)", .stored)
    }
}

extension PredicateExpressions.StringHasSuffix: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let base = try translator.translate(root)
        let suffix = try translator.translate(other)
        if base.isConstant && suffix.isConstant { return try folded() }
        guard Root.Output.self == String.self, Other.Output.self == String.self else {
            throw Untranslatable("hasSuffix(_:) on \(Root.Output.self) has no SQL form")
        }
        let text = try translator.operand(base)
        if case let .constant(value) = suffix, let string = value as? String {
            if string.utf8.contains(0) { return .constant(false) }
            return .value("(\(text) GLOB \(SQLText.bound(("*" + StringPattern.globPrefix(string).dropLast()).databaseValue)))", .stored)
        }
        let needle = try translator.operand(suffix)
        return .value("(\(needle) = '' OR substr(\(text), -length(\(needle))) = \(needle))", .stored)
    }
}

/// Patterns for SQLite's `GLOB`, with the needle's own special characters matched literally.
enum StringPattern {
    /// `abc*` for a prefix `abc`; `*`, `?` and `[` are wrapped in brackets.
    static func globPrefix(_ prefix: String) -> String {
        var pattern = ""
        for character in prefix {
            switch character {
            case "*", "?", "[": pattern += "[\(character)]"
            default: pattern.append(character)
            }
        }
        return pattern + "*"
    }
}

#if !canImport(Darwin)
extension PredicateExpressions.StringLocalizedStandardContains: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let base = try translator.translate(root)
        let other = try translator.translate(other)
        if base.isConstant && other.isConstant { return try folded() }
        // Foundation finds nothing when searching for the empty string.
        let haystack: SQLText = "\(raw: SQLFunctions.fold)(\(try translator.operand(base)))"
        if case let .constant(value) = other, let string = value as? String {
            if string.isEmpty || string.utf8.contains(0) { return .constant(false) }
            return .value("(instr(\(haystack), \(SQLText.bound(SQLFunctions.searchFolded(string).databaseValue))) > 0)", .stored)
        }
        let needle = try translator.operand(other)
        return .value("(\(needle) <> '' AND instr(\(haystack), \(raw: SQLFunctions.fold)(\(needle))) > 0)", .stored)
    }
}

extension PredicateExpressions.StringCaseInsensitiveCompare: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        try translator.compare(root, other, node: self, mode: .caseInsensitive)
    }
}

extension PredicateExpressions.StringLocalizedCompare: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        try translator.compare(root, other, node: self, mode: .localized)
    }
}
#endif

extension PredicateTranslator {
    /// `osd_compare(a, b, mode)`: a `ComparisonResult` raw value computed by Foundation.
    func compare(
        _ lhs: any PredicateExpression, _ rhs: any PredicateExpression, node: some SQLTranslatable, mode: SQLFunctions.ComparisonMode
    ) throws -> SQLFragment {
        let left = try translate(lhs)
        let right = try translate(rhs)
        if left.isConstant && right.isConstant { return try node.folded() }
        return .value("\(raw: SQLFunctions.compare)(\(try operand(left)), \(try operand(right)), \(raw: String(mode.rawValue)))", .stored)
    }
}
