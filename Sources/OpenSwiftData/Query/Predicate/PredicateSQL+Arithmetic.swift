import Foundation

// `+ - *`, unary minus, `/` and `%` on numbers stored as numbers. Where Swift would trap (a
// division by zero), SQL yields NULL and the row does not match.

extension PredicateExpressions.Arithmetic: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        if left.isConstant && right.isConstant { return try folded() }
        try translator.requireNumeric(LHS.Output.self)
        let symbol: String
        switch op {
        case .add: symbol = "+"
        case .subtract: symbol = "-"
        case .multiply: symbol = "*"
        }
        return try translator.binary(left, symbol, right)
    }
}

extension PredicateExpressions.UnaryMinus: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let inner = try translator.translate(wrapped)
        if inner.isConstant { return try folded() }
        try translator.requireNumeric(Wrapped.Output.self)
        return .value("(- \(try translator.operand(inner)))", translator.form(of: inner))
    }
}

extension PredicateExpressions.FloatDivision: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        if left.isConstant && right.isConstant { return try folded() }
        try translator.requireNumeric(LHS.Output.self)
        // Dividing by zero gives an infinity or NaN in Swift and NULL in SQL: only a divisor
        // known not to be zero is translated.
        guard case let .constant(divisor) = right, let number = divisor as? any BinaryFloatingPoint, !number.isZero else {
            throw Untranslatable("a division by a value that may be zero")
        }
        // Multiplying by 1.0 keeps the division in floating point whatever SQLite holds.
        return .value(
            "((\(try translator.operand(left, against: right)) * 1.0) / \(try translator.operand(right, against: left)))",
            translator.form(of: left, right))
    }
}

extension PredicateExpressions.IntDivision: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        if left.isConstant && right.isConstant { return try folded() }
        try translator.requireNumeric(LHS.Output.self)
        // SQLite's integer division truncates toward zero, as Swift's does.
        return try translator.binary(left, "/", right)
    }
}

extension PredicateExpressions.IntRemainder: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        if left.isConstant && right.isConstant { return try folded() }
        try translator.requireNumeric(LHS.Output.self)
        // The remainder takes the dividend's sign in both.
        return try translator.binary(left, "%", right)
    }
}

extension PredicateTranslator {
    /// `(left <symbol> right)`, constants bound in the other operand's form.
    func binary(_ left: SQLFragment, _ symbol: String, _ right: SQLFragment) throws -> SQLFragment {
        .value("(\(try operand(left, against: right)) \(raw: symbol) \(try operand(right, against: left)))", form(of: left, right))
    }
}
