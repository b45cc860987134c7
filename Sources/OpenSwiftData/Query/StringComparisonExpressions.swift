import Foundation

#if !canImport(Darwin)
// Foundation's `#Predicate` turns `localizedStandardContains`, `localizedCompare` and
// `caseInsensitiveCompare` into these builders, which Foundation provides only on Apple
// platforms. Declaring them here lets predicates written for SwiftData compile on Linux; they
// evaluate with Foundation's `String` methods and translate to SQL.

extension PredicateExpressions {
    /// `root.localizedStandardContains(other)`: case- and diacritic-insensitive containment.
    public struct StringLocalizedStandardContains<Root: PredicateExpression, Other: PredicateExpression>: PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// The result type.
        public typealias Output = Bool
        /// The string searched.
        public let root: Root
        /// The string searched for.
        public let other: Other

        /// Creates the expression.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// Evaluates with Foundation's `localizedStandardContains`.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            try root.evaluate(bindings).localizedStandardContains(try other.evaluate(bindings))
        }
    }

    /// `root.caseInsensitiveCompare(other)`.
    public struct StringCaseInsensitiveCompare<Root: PredicateExpression, Other: PredicateExpression>: PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// The result type.
        public typealias Output = ComparisonResult
        /// The left string.
        public let root: Root
        /// The right string.
        public let other: Other

        /// Creates the expression.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// Evaluates with Foundation's `caseInsensitiveCompare`.
        public func evaluate(_ bindings: PredicateBindings) throws -> ComparisonResult {
            try root.evaluate(bindings).caseInsensitiveCompare(try other.evaluate(bindings))
        }
    }

    /// `root.localizedCompare(other)`.
    public struct StringLocalizedCompare<Root: PredicateExpression, Other: PredicateExpression>: PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// The result type.
        public typealias Output = ComparisonResult
        /// The left string.
        public let root: Root
        /// The right string.
        public let other: Other

        /// Creates the expression.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// Evaluates with Foundation's `localizedCompare`.
        public func evaluate(_ bindings: PredicateBindings) throws -> ComparisonResult {
            try root.evaluate(bindings).localizedCompare(try other.evaluate(bindings))
        }
    }

    /// Builds `root.localizedStandardContains(other)`; what `#Predicate` expands it to.
    public static func build_localizedStandardContains<Root, Other>(_ root: Root, _ other: Other) -> StringLocalizedStandardContains<Root, Other> {
        StringLocalizedStandardContains(root: root, other: other)
    }

    /// Builds `root.caseInsensitiveCompare(other)`; what `#Predicate` expands it to.
    public static func build_caseInsensitiveCompare<Root, Other>(_ root: Root, _ other: Other) -> StringCaseInsensitiveCompare<Root, Other> {
        StringCaseInsensitiveCompare(root: root, other: other)
    }

    /// Builds `root.localizedCompare(other)`; what `#Predicate` expands it to.
    public static func build_localizedCompare<Root, Other>(_ root: Root, _ other: Other) -> StringLocalizedCompare<Root, Other> {
        StringLocalizedCompare(root: root, other: other)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StringCaseInsensitiveCompare: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StringLocalizedCompare: Sendable where Root: Sendable, Other: Sendable {}

extension PredicateExpressions.StringLocalizedStandardContains: Codable where Root: Codable, Other: Codable {}
extension PredicateExpressions.StringCaseInsensitiveCompare: Codable where Root: Codable, Other: Codable {}
extension PredicateExpressions.StringLocalizedCompare: Codable where Root: Codable, Other: Codable {}

extension PredicateExpressions.StringLocalizedStandardContains: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}
extension PredicateExpressions.StringCaseInsensitiveCompare: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}
extension PredicateExpressions.StringLocalizedCompare: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}
#endif

extension PredicateExpressions {
    /// `root.hasSuffix(other)`, which OpenSwiftData's `#Predicate` accepts.
    public struct StringHasSuffix<Root: PredicateExpression, Other: PredicateExpression>: PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// The result type.
        public typealias Output = Bool
        /// The string tested.
        public let root: Root
        /// The suffix.
        public let other: Other

        /// Creates the expression.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// Evaluates with `hasSuffix`.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            try root.evaluate(bindings).hasSuffix(try other.evaluate(bindings))
        }
    }

    /// Builds `root.hasSuffix(other)`; what OpenSwiftData's `#Predicate` expands it to.
    public static func build_hasSuffix<Root, Other>(_ root: Root, _ other: Other) -> StringHasSuffix<Root, Other> {
        StringHasSuffix(root: root, other: other)
    }
}

extension PredicateExpressions.StringHasSuffix: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StringHasSuffix: Codable where Root: Codable, Other: Codable {}
extension PredicateExpressions.StringHasSuffix: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}
