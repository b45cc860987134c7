import Foundation

// Type checks and casts, which SQL answers when the types decide them statically. (Foundation on
// Linux has no `PredicateEvaluate`/`ExpressionEvaluate` nodes: its `#Predicate` refuses
// `otherPredicate.evaluate($0)` there.)

extension PredicateExpressions.TypeCheck: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let value = try translator.translate(input)
        if value.isConstant { return try folded() }
        if Input.Output.self == Desired.self { return .constant(true) }
        if (Input.Output.self as? any _OptionalType.Type)?._wrappedType == Desired.self {
            return .value("(\(try translator.operand(value)) IS NOT NULL)", .stored)
        }
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
        throw Untranslatable("a cast of \(Input.Output.self) to \(Desired.self)")
    }
}
