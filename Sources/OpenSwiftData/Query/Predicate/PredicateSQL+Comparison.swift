import Foundation
import GRDB

// `==`, `!=`, `<`, `<=`, `>`, `>=` and ranges. Values compare by their stored form: enums by raw
// value, dates as seconds, models and identifiers by primary key. Equality is NULL-safe, as
// Swift's `==` on optionals is: `nil == nil` holds.

extension PredicateExpressions.Equal: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        if left.isConstant && right.isConstant { return try folded() }
        try translator.requireComparableForEquality(LHS.Output.self, left, right)
        return .value(try translator.equality(left, right, negated: false), .stored)
    }
}

extension PredicateExpressions.NotEqual: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        if left.isConstant && right.isConstant { return try folded() }
        try translator.requireComparableForEquality(LHS.Output.self, left, right)
        return .value(try translator.equality(left, right, negated: true), .stored)
    }
}

extension PredicateExpressions.Comparison: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        if left.isConstant && right.isConstant { return try folded() }
        try translator.requireSortable(LHS.Output.self, left, right)
        let text: SQLText = "(\(try translator.operand(left, against: right)) \(raw: op.sqlSymbol) \(try translator.operand(right, against: left)))"
        return .value(text, .stored)
    }
}

extension PredicateTranslator {
    /// `a IS b`, `a IS NOT b`: never NULL, so a negation around them means Swift's `!`.
    /// (SQLite's planner uses an index for `IS` as for `=`.)
    ///
    /// An `.externalStorage` column compared with a `Data` constant that would be kept in a file
    /// (larger than the threshold, or starting with the reference's magic) matches the
    /// constant's reference (``AttachmentReference``) as well as the constant itself (the
    /// value of a store in memory, or one written before values moved to files).
    func equality(_ left: SQLFragment, _ right: SQLFragment, negated: Bool) throws -> SQLText {
        let lhs = try operand(left, against: right)
        let rhs = try operand(right, against: left)
        if let reference = try externalReference(left, right) ?? externalReference(right, left) {
            let column = left.isConstant ? rhs : lhs
            let value = left.isConstant ? lhs : rhs
            let either: SQLText = "(\(column) IS \(value) OR \(column) IS \(SQLText.bound(reference.encoded.databaseValue)))"
            return negated ? "(NOT \(either))" : either
        }
        return negated ? "(\(lhs) IS NOT \(rhs))" : "(\(lhs) IS \(rhs))"
    }

    /// The reference of `constant` when `column` reads an `.externalStorage` column and the
    /// constant is a `Data` value that would be kept in a file; nil otherwise.
    private func externalReference(_ column: SQLFragment, _ constant: SQLFragment) throws -> AttachmentReference? {
        guard case let .value(text, .stored) = column, text.arguments.isEmpty, externalColumns.contains(text.sql),
            case let .constant(value) = constant,
            case let .blob(data) = try encode(value, as: .stored).storage,
            data.count > StoreAttachments.threshold || AttachmentReference.startsWithMagic(data)
        else { return nil }
        return AttachmentReference(of: data)
    }
}

extension PredicateExpressions.Range: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let lower = try translator.translate(lower)
        let upper = try translator.translate(upper)
        if lower.isConstant && upper.isConstant { return try folded() }
        return .range(lower: lower, upper: upper, closed: false)
    }
}

extension PredicateExpressions.ClosedRange: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let lower = try translator.translate(lower)
        let upper = try translator.translate(upper)
        if lower.isConstant && upper.isConstant { return try folded() }
        return .range(lower: lower, upper: upper, closed: true)
    }
}

extension PredicateExpressions.RangeExpressionContains: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let range = try translator.translate(range)
        let element = try translator.translate(element)
        if range.isConstant && element.isConstant { return try folded() }
        let lower: SQLFragment, upper: SQLFragment, closed: Bool
        switch range {
        case let .range(rangeLower, rangeUpper, isClosed):
            (lower, upper, closed) = (rangeLower, rangeUpper, isClosed)
        case let .constant(value):
            guard let bounds = value as? any RangeBoundsValue else { throw Untranslatable("\(type(of: value)) is not a range SQL knows") }
            (lower, upper, closed) = (.constant(bounds.lowerBoundValue), .constant(bounds.upperBoundValue), bounds.isClosed)
        case .value, .row, .rows:
            throw Untranslatable("a range computed in the row")
        }
        try translator.requireSortable(Element.Output.self, element, lower, upper)
        let value = try translator.operand(element, against: lower.isConstant ? element : lower)
        let low = try translator.operand(lower, against: element)
        let high = try translator.operand(upper, against: element)
        return .value("(\(value) >= \(low) AND \(value) \(raw: closed ? "<=" : "<") \(high))", .stored)
    }
}

/// A `Range` or `ClosedRange` value, seen without its bound type.
protocol RangeBoundsValue {
    var lowerBoundValue: Any { get }
    var upperBoundValue: Any { get }
    var isClosed: Bool { get }
}

extension Range: RangeBoundsValue {
    var lowerBoundValue: Any { lowerBound }
    var upperBoundValue: Any { upperBound }
    var isClosed: Bool { false }
}

extension ClosedRange: RangeBoundsValue {
    var lowerBoundValue: Any { lowerBound }
    var upperBoundValue: Any { upperBound }
    var isClosed: Bool { true }
}

extension PredicateExpressions.ComparisonOperator {
    /// The SQL operator.
    var sqlSymbol: String {
        switch self {
        case .lessThan: return "<"
        case .lessThanOrEqual: return "<="
        case .greaterThan: return ">"
        case .greaterThanOrEqual: return ">="
        }
    }
}
