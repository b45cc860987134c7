import Foundation

// Type checks and casts, which SQL answers when the types decide them statically, and nested
// predicates and expressions (OpenSwiftData's nodes on Linux), whose bodies are inlined.

extension PredicateExpressions.TypeCheck: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let value = try translator.translate(input)
        if value.isConstant { return try folded() }
        if Input.Output.self == Desired.self { return .constant(true) }
        if (Input.Output.self as? any _OptionalType.Type)?._wrappedType == Desired.self {
            return .value("(\(try translator.operand(value)) IS NOT NULL)", .stored)
        }
        // A model row of a class hierarchy: each class has its own table, so the table read
        // decides (`$0 is Car` holds for every row of `Car`'s table and its subclasses').
        if case let .row(row) = value { return .constant(row.layout.modelType is Desired.Type) }
        throw Untranslatable("a type check of \(Input.Output.self) as \(Desired.self)")
    }
}

extension PredicateExpressions.ConditionalCast: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let value = try translator.translate(input)
        if value.isConstant { return try folded() }
        // A cast to the value's own type, or unwrapping an optional: the same SQL, NULL for nil.
        if Input.Output.self == Desired.self || (Input.Output.self as? any _OptionalType.Type)?._wrappedType == Desired.self {
            return value
        }
        // A model row of a class hierarchy: the row itself when its table's class is a
        // `Desired` (its layout then has `Desired`'s properties), else nil.
        if case let .row(row) = value {
            return row.layout.modelType is Desired.Type ? value : .constant(Optional<Desired>.none as Any)
        }
        throw Untranslatable("a cast of \(Input.Output.self) to \(Desired.self)")
    }
}

extension PredicateExpressions.NestedPredicateEvaluate: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let argument = try translator.translate(input)
        return try translator.with(predicate.variable.key, boundTo: argument) { try translator.translate(predicate.expression) }
    }
}

extension PredicateExpressions.NestedExpressionEvaluate: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let argument = try translator.translate(input)
        return try translator.with(expression.variable.key, boundTo: argument) { try translator.translate(expression.expression) }
    }
}
