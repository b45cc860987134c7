import Foundation

// A predicate or expression called inside another (`isPopular.evaluate($0)`): Foundation's
// `#Predicate` refuses the call on Linux, and its nodes there would need the nested predicate
// to be `Codable`, which `Predicate` is not. OpenSwiftData's `#Predicate` builds these nodes,
// which hold the nested value itself; the SQL translator inlines its body.

extension PredicateExpressions {
    /// `predicate.evaluate(input)` inside a predicate.
    public struct NestedPredicateEvaluate<Input: PredicateExpression>: PredicateExpression {
        /// The result type.
        public typealias Output = Bool
        /// The predicate applied.
        public let predicate: Predicate<Input.Output>
        /// The value it is applied to.
        public let input: Input

        /// Creates the expression.
        public init(predicate: Predicate<Input.Output>, input: Input) {
            self.predicate = predicate
            self.input = input
        }

        /// Evaluates the nested predicate on the input.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            try predicate.evaluate(try input.evaluate(bindings))
        }
    }

    /// `expression.evaluate(input)` inside a predicate.
    public struct NestedExpressionEvaluate<Input: PredicateExpression, Output>: PredicateExpression {
        /// The expression applied.
        public let expression: Expression<Input.Output, Output>
        /// The value it is applied to.
        public let input: Input

        /// Creates the expression.
        public init(expression: Expression<Input.Output, Output>, input: Input) {
            self.expression = expression
            self.input = input
        }

        /// Evaluates the nested expression on the input.
        public func evaluate(_ bindings: PredicateBindings) throws -> Output {
            try expression.evaluate(try input.evaluate(bindings))
        }
    }

    /// Builds `predicate.evaluate(input)`; what OpenSwiftData's `#Predicate` expands it to.
    public static func build_evaluate<Input>(_ predicate: Predicate<Input.Output>, _ input: Input) -> NestedPredicateEvaluate<Input> {
        NestedPredicateEvaluate(predicate: predicate, input: input)
    }

    /// Builds `expression.evaluate(input)`; what OpenSwiftData's `#Predicate` expands it to.
    public static func build_evaluate<Input, Output>(
        _ expression: Expression<Input.Output, Output>, _ input: Input
    ) -> NestedExpressionEvaluate<Input, Output> {
        NestedExpressionEvaluate(expression: expression, input: input)
    }
}

extension PredicateExpressions.NestedPredicateEvaluate: Sendable where Input: Sendable {}
extension PredicateExpressions.NestedExpressionEvaluate: Sendable where Input: Sendable {}

extension PredicateExpressions.NestedPredicateEvaluate: Codable where Input: Codable {
    /// Not supported: a nested `Predicate` is not `Codable`.
    public func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(
            self, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "a predicate nested with evaluate(_:) cannot be encoded"))
    }

    /// Not supported: a nested `Predicate` is not `Codable`.
    public init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "a predicate nested with evaluate(_:) cannot be decoded"))
    }
}

extension PredicateExpressions.NestedExpressionEvaluate: Codable where Input: Codable {
    /// Not supported: a nested `Expression` is not `Codable`.
    public func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(
            self, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "an expression nested with evaluate(_:) cannot be encoded"))
    }

    /// Not supported: a nested `Expression` is not `Codable`.
    public init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "an expression nested with evaluate(_:) cannot be decoded"))
    }
}

extension PredicateExpressions.NestedPredicateEvaluate: StandardPredicateExpression where Input: StandardPredicateExpression {}
extension PredicateExpressions.NestedExpressionEvaluate: StandardPredicateExpression where Input: StandardPredicateExpression {}
