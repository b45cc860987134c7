import Foundation

// `&&`, `||` and `!`. Constant operands are folded the way Swift short-circuits.

extension PredicateExpressions.Conjunction: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        if case let .constant(value) = left, let bool = value as? Bool {
            return bool ? try translator.translate(rhs) : .constant(false)
        }
        let right = try translator.translate(rhs)
        if case let .constant(value) = right, let bool = value as? Bool {
            return bool ? left : .value("(\(try translator.condition(left)) AND 0)", .stored)
        }
        return .value("(\(try translator.condition(left)) AND \(try translator.condition(right)))", .stored)
    }
}

extension PredicateExpressions.Disjunction: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        if case let .constant(value) = left, let bool = value as? Bool {
            return bool ? .constant(true) : try translator.translate(rhs)
        }
        let right = try translator.translate(rhs)
        if case let .constant(value) = right, let bool = value as? Bool {
            return bool ? .value("(\(try translator.condition(left)) OR 1)", .stored) : left
        }
        return .value("(\(try translator.condition(left)) OR \(try translator.condition(right)))", .stored)
    }
}

extension PredicateExpressions.Negation: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let inner = try translator.translate(wrapped)
        if inner.isConstant { return try folded() }
        return .value("(NOT \(try translator.condition(inner)))", .stored)
    }
}
