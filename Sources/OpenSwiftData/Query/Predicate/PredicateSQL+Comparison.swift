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
    func equality(_ left: SQLFragment, _ right: SQLFragment, negated: Bool) throws -> SQLText {
        let lhs = try operand(left, against: right)
        let rhs = try operand(right, against: left)
        return negated ? "(\(lhs) IS NOT \(rhs))" : "(\(lhs) IS \(rhs))"
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
