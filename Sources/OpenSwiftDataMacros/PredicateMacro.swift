import SwiftDiagnostics
import SwiftOperators
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `#Predicate<Model> { … }` for model inputs: the same `Foundation.Predicate`, built from the
/// same `PredicateExpressions` builders Foundation's macro calls, accepting in addition what
/// SwiftData code writes and Foundation's macro refuses: implicit members (`== .pending`),
/// static members and enum cases written with their type (`Date.now`, `Status.done`), values
/// computed without the inputs (`Date(timeIntervalSinceNow: -60)`), `hasPrefix`/`hasSuffix`.
public struct PredicateMacro: SwiftSyntaxMacros.ExpressionMacro {
    /// The `Foundation.Predicate` built from the closure.
    public static func expansion(of node: some FreestandingMacroExpansionSyntax, in context: some MacroExpansionContext) throws -> ExprSyntax {
        try PredicateExpansion.expand(node, typeName: "Predicate", in: context)
    }
}

/// `#Expression<Input, Output> { … }` for model inputs, built like ``PredicateMacro``.
public struct PredicateExpressionMacro: SwiftSyntaxMacros.ExpressionMacro {
    /// The `Foundation.Expression` built from the closure.
    public static func expansion(of node: some FreestandingMacroExpansionSyntax, in context: some MacroExpansionContext) throws -> ExprSyntax {
        try PredicateExpansion.expand(node, typeName: "Expression", in: context)
    }
}

/// A predicate body construct the macro cannot translate, reported at the offending node.
struct PredicateDiagnostic: DiagnosticMessage {
    let message: String
    let id: String
    var diagnosticID: MessageID { MessageID(domain: "OpenSwiftDataMacros.Predicate", id: id) }
    var severity: DiagnosticSeverity { .error }

    static func unsupportedFunction(_ name: String) -> PredicateDiagnostic {
        PredicateDiagnostic(message: "The \(name) function is not supported in this predicate", id: "unsupportedFunction")
    }

    static func unsupportedOperator(_ name: String) -> PredicateDiagnostic {
        PredicateDiagnostic(message: "The '\(name)' operator is not supported in this predicate", id: "unsupportedOperator")
    }

    static func unsupportedSyntax(_ what: String) -> PredicateDiagnostic {
        PredicateDiagnostic(message: "\(what) is not supported in this predicate", id: "unsupportedSyntax")
    }
}

/// Thrown to stop an expansion after a diagnostic was emitted.
struct PredicateExpansionError: Error {
    let diagnostic: Diagnostic
}

enum PredicateExpansion {
    static func expand(_ node: some FreestandingMacroExpansionSyntax, typeName: String, in context: some MacroExpansionContext) throws -> ExprSyntax {
        guard let closure = node.trailingClosure ?? node.arguments.first?.expression.as(ClosureExprSyntax.self) else {
            throw diagnose(node, .unsupportedSyntax("A #\(typeName) without a closure"), context)
        }
        var translator = PredicateTranslatorSyntax(variables: Set(parameterNames(of: closure)))
        do {
            let body = try translator.body(of: closure)
            let generics = node.genericArgumentClause.map { "\($0.trimmed)" } ?? ""
            let signature = closure.signature.map { " \($0.trimmed)" } ?? ""
            // `_$Predicate`/`_$Expression`, OpenSwiftData's aliases of Foundation's types: a
            // module name in an expression (`Foundation.Predicate`) is shadowed by any member or
            // local of that name where the predicate is written.
            return "_$\(raw: typeName)\(raw: generics)({\(raw: signature)\n\(body)\n})"
        } catch let error as PredicateExpansionError {
            throw DiagnosticsError(diagnostics: [error.diagnostic])
        }
    }

    static func diagnose(_ node: some SyntaxProtocol, _ message: PredicateDiagnostic, _ context: some MacroExpansionContext) -> Error {
        DiagnosticsError(diagnostics: [Diagnostic(node: Syntax(node), message: message)])
    }

    /// The closure's parameter names, or `$0`, `$1`, … for a closure that uses them.
    static func parameterNames(of closure: ClosureExprSyntax) -> [String] {
        if let clause = closure.signature?.parameterClause {
            switch clause {
            case let .simpleInput(names): return names.map(\.name.text)
            case let .parameterClause(parameters): return parameters.parameters.map { ($0.secondName ?? $0.firstName).text }
            }
        }
        let finder = DollarFinder(viewMode: .sourceAccurate)
        finder.walk(closure.statements)
        return (0...max(finder.highest, 0)).map { "$\($0)" }
    }
}

/// Finds the highest `$n` a closure body uses (outside nested closures).
private final class DollarFinder: SyntaxVisitor {
    var highest = 0

    override func visit(_ node: DeclReferenceExprSyntax) -> SyntaxVisitorContinueKind {
        if case let .dollarIdentifier(text) = node.baseName.tokenKind, let number = Int(text.dropFirst()) {
            highest = max(highest, number)
        }
        return .skipChildren
    }

    override func visit(_ node: ClosureExprSyntax) -> SyntaxVisitorContinueKind { .skipChildren }
}

/// Whether an expression reads one of the predicate's variables.
private final class VariableFinder: SyntaxVisitor {
    let variables: Set<String>
    var found = false

    init(variables: Set<String>) {
        self.variables = variables
        super.init(viewMode: .sourceAccurate)
    }

    override func visit(_ node: DeclReferenceExprSyntax) -> SyntaxVisitorContinueKind {
        if variables.contains(node.baseName.text) { found = true }
        return .skipChildren
    }

    override func visit(_ node: MemberAccessExprSyntax) -> SyntaxVisitorContinueKind {
        // The member name is not a reference; only the base is.
        if let base = node.base { walk(base) }
        return .skipChildren
    }

    override func visit(_ node: LabeledExprSyntax) -> SyntaxVisitorContinueKind {
        walk(node.expression)
        return .skipChildren
    }
}

/// Rewrites one optional-chaining node into a reference to the unwrapped value.
private final class OptionalChainReplacer: SyntaxRewriter {
    let target: SyntaxIdentifier
    let name: String

    init(target: SyntaxIdentifier, name: String) {
        self.target = target
        self.name = name
        super.init(viewMode: .sourceAccurate)
    }

    override func visit(_ node: OptionalChainingExprSyntax) -> ExprSyntax {
        if node.id == target { return ExprSyntax(DeclReferenceExprSyntax(baseName: .identifier(name))) }
        return super.visit(node)
    }
}

/// The translation of a closure body into `PredicateExpressions` builder calls.
struct PredicateTranslatorSyntax {
    /// The names that stand for predicate variables here: the inputs and the parameters of the
    /// enclosing `contains { }`, `flatMap { }`, … closures.
    var variables: Set<String>
    private var nextName = 0

    init(variables: Set<String>) {
        self.variables = variables
    }

    /// OpenSwiftData's alias of `Foundation.PredicateExpressions` (see `expand`).
    static let builders = "_$PredicateExpressions"

    /// The single expression of a closure body (`return` allowed), translated.
    mutating func body(of closure: ClosureExprSyntax) throws -> ExprSyntax {
        let items = closure.statements
        guard items.count == 1, let item = items.first else {
            throw error(
                closure.statements.isEmpty ? Syntax(closure) : Syntax(closure.statements), .unsupportedSyntax("A body of more than one statement"))
        }
        let expression: ExprSyntax
        switch item.item {
        case let .expr(expr):
            expression = expr
        case let .stmt(statement):
            if let returned = statement.as(ReturnStmtSyntax.self)?.expression {
                expression = returned
            } else if let expr = statement.as(ExpressionStmtSyntax.self)?.expression {
                expression = expr
            } else {
                throw error(Syntax(statement), .unsupportedSyntax("This statement"))
            }
        case .decl:
            throw error(Syntax(item), .unsupportedSyntax("A declaration"))
        }
        let folded = OperatorTable.standardOperators.foldAll(expression) { _ in }
        guard let foldedExpression = folded.as(ExprSyntax.self) else { return try translate(expression) }
        return try translate(foldedExpression)
    }

    func error(_ node: Syntax, _ message: PredicateDiagnostic) -> PredicateExpansionError {
        PredicateExpansionError(diagnostic: Diagnostic(node: node, message: message))
    }

    func readsVariable(_ expression: some SyntaxProtocol) -> Bool {
        let finder = VariableFinder(variables: variables)
        finder.walk(expression)
        return finder.found
    }

    mutating func freshName() -> String {
        defer { nextName += 1 }
        return "_osd_wrapped\(nextName)"
    }

    // MARK: Expressions

    mutating func translate(_ expression: ExprSyntax) throws -> ExprSyntax {
        let b = Self.builders
        if let tuple = expression.as(TupleExprSyntax.self), tuple.elements.count == 1, let only = tuple.elements.first, only.label == nil {
            return try translate(only.expression)
        }
        if expression.is(NilLiteralExprSyntax.self) {
            return "\(raw: b).build_NilLiteral()"
        }
        if let reference = expression.as(DeclReferenceExprSyntax.self) {
            return "\(raw: b).build_Arg(\(reference.trimmed))"
        }
        if let chain = topOptionalChain(in: expression) {
            return try optionalChain(expression, unwrapping: chain)
        }
        if let infix = expression.as(InfixOperatorExprSyntax.self) {
            return try infixOperation(infix)
        }
        if let prefix = expression.as(PrefixOperatorExprSyntax.self) {
            // `-1`, `-limit`: a constant.
            if prefix.operator.text == "-", !readsVariable(prefix) { return "\(raw: b).build_Arg(\(prefix.trimmed))" }
            let operand = try translate(prefix.expression)
            switch prefix.operator.text {
            case "!": return "\(raw: b).build_Negation(\(operand))"
            case "-": return "\(raw: b).build_UnaryMinus(\(operand))"
            default: throw error(Syntax(prefix), .unsupportedOperator(prefix.operator.text))
            }
        }
        if let unwrap = expression.as(ForceUnwrapExprSyntax.self) {
            return "\(raw: b).build_ForcedUnwrap(\(try translate(unwrap.expression)))"
        }
        if let ternary = expression.as(TernaryExprSyntax.self) {
            return
                "\(raw: b).build_Conditional(\(try translate(ternary.condition)), \(try translate(ternary.thenExpression)), \(try translate(ternary.elseExpression)))"
        }
        if let ifExpression = expression.as(IfExprSyntax.self) {
            return try ifExpr(ifExpression)
        }
        if let isExpression = expression.as(IsExprSyntax.self) {
            return "\(raw: b).TypeCheck<_, \(isExpression.type.trimmed)>(\(try translate(isExpression.expression)))"
        }
        if let asExpression = expression.as(AsExprSyntax.self) {
            let operand = try translate(asExpression.expression)
            switch asExpression.questionOrExclamationMark?.tokenKind {
            case .postfixQuestionMark?: return "\(raw: b).ConditionalCast<_, \(asExpression.type.trimmed)>(\(operand))"
            case .exclamationMark?: return "\(raw: b).ForceCast<_, \(asExpression.type.trimmed)>(\(operand))"
            default: throw error(Syntax(asExpression), .unsupportedOperator("as"))
            }
        }
        if let member = expression.as(MemberAccessExprSyntax.self) {
            return try memberAccess(member)
        }
        if let call = expression.as(FunctionCallExprSyntax.self) {
            return try functionCall(call)
        }
        if let subscriptCall = expression.as(SubscriptCallExprSyntax.self) {
            return try subscriptAccess(subscriptCall)
        }
        if expression.is(IntegerLiteralExprSyntax.self) || expression.is(FloatLiteralExprSyntax.self)
            || expression.is(BooleanLiteralExprSyntax.self) || expression.is(StringLiteralExprSyntax.self)
            || expression.is(ArrayExprSyntax.self) || expression.is(DictionaryExprSyntax.self)
        {
            guard !readsVariable(expression) else {
                throw error(Syntax(expression), .unsupportedSyntax("A literal built from the predicate's input"))
            }
            return "\(raw: b).build_Arg(\(expression.trimmed))"
        }
        if expression.is(ClosureExprSyntax.self) {
            throw error(Syntax(expression), .unsupportedSyntax("A closure outside a supported function call"))
        }
        guard !readsVariable(expression) else {
            throw error(Syntax(expression), .unsupportedSyntax("This expression"))
        }
        return "\(raw: b).build_Arg(\(expression.trimmed))"
    }

    private mutating func infixOperation(_ infix: InfixOperatorExprSyntax) throws -> ExprSyntax {
        let b = Self.builders
        guard let symbol = infix.operator.as(BinaryOperatorExprSyntax.self)?.operator.text else {
            throw error(Syntax(infix.operator), .unsupportedSyntax("This operator"))
        }
        let lhs = try translate(infix.leftOperand)
        let rhs = try translate(infix.rightOperand)
        switch symbol {
        case "==": return "\(raw: b).build_Equal(lhs: \(lhs), rhs: \(rhs))"
        case "!=": return "\(raw: b).build_NotEqual(lhs: \(lhs), rhs: \(rhs))"
        case "<": return "\(raw: b).build_Comparison(lhs: \(lhs), rhs: \(rhs), op: .lessThan)"
        case "<=": return "\(raw: b).build_Comparison(lhs: \(lhs), rhs: \(rhs), op: .lessThanOrEqual)"
        case ">": return "\(raw: b).build_Comparison(lhs: \(lhs), rhs: \(rhs), op: .greaterThan)"
        case ">=": return "\(raw: b).build_Comparison(lhs: \(lhs), rhs: \(rhs), op: .greaterThanOrEqual)"
        case "&&": return "\(raw: b).build_Conjunction(lhs: \(lhs), rhs: \(rhs))"
        case "||": return "\(raw: b).build_Disjunction(lhs: \(lhs), rhs: \(rhs))"
        case "+": return "\(raw: b).build_Arithmetic(lhs: \(lhs), rhs: \(rhs), op: .add)"
        case "-": return "\(raw: b).build_Arithmetic(lhs: \(lhs), rhs: \(rhs), op: .subtract)"
        case "*": return "\(raw: b).build_Arithmetic(lhs: \(lhs), rhs: \(rhs), op: .multiply)"
        case "/": return "\(raw: b).build_Division(lhs: \(lhs), rhs: \(rhs))"
        case "%": return "\(raw: b).build_Remainder(lhs: \(lhs), rhs: \(rhs))"
        case "??": return "\(raw: b).build_NilCoalesce(lhs: \(lhs), rhs: \(rhs))"
        case "..<": return "\(raw: b).build_Range(lower: \(lhs), upper: \(rhs))"
        case "...": return "\(raw: b).build_ClosedRange(lower: \(lhs), upper: \(rhs))"
        default: throw error(Syntax(infix.operator), .unsupportedOperator(symbol))
        }
    }

    /// `if let x = optional { a } else { b }` (as Foundation: `flatMap` then `??`), or
    /// `if condition { a } else { b }` (a conditional).
    private mutating func ifExpr(_ node: IfExprSyntax) throws -> ExprSyntax {
        let b = Self.builders
        guard node.conditions.count == 1, let condition = node.conditions.first,
            case let .codeBlock(elseBlock)? = node.elseBody,
            let thenValue = singleExpression(node.body), let elseValue = singleExpression(elseBlock)
        else { throw error(Syntax(node), .unsupportedSyntax("This 'if' form (one condition, one expression per branch, an 'else')")) }
        switch condition.condition {
        case let .expression(test):
            return "\(raw: b).build_Conditional(\(try translate(test)), \(try translate(thenValue)), \(try translate(elseValue)))"
        case let .optionalBinding(binding):
            guard let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text else {
                throw error(Syntax(binding), .unsupportedSyntax("This binding pattern"))
            }
            let wrapped = try translate(binding.initializer?.value ?? ExprSyntax(DeclReferenceExprSyntax(baseName: .identifier(name))))
            let saved = variables
            variables.insert(name)
            let inner = try translate(thenValue)
            variables = saved
            let fallback = try translate(elseValue)
            return "\(raw: b).build_NilCoalesce(lhs: \(raw: b).build_flatMap(\(wrapped)) { \(raw: name) in \(inner) }, rhs: \(fallback))"
        default:
            throw error(Syntax(condition), .unsupportedSyntax("This condition"))
        }
    }

    private func singleExpression(_ block: CodeBlockSyntax) -> ExprSyntax? {
        guard block.statements.count == 1, let item = block.statements.first else { return nil }
        if case let .expr(expr) = item.item {
            return OperatorTable.standardOperators.foldAll(expr) { _ in }.as(ExprSyntax.self) ?? expr
        }
        return nil
    }

    // MARK: Member access, calls, subscripts

    private mutating func memberAccess(_ member: MemberAccessExprSyntax) throws -> ExprSyntax {
        let b = Self.builders
        guard let base = member.base else {
            // `.pending`: an implicit member, typed by the other operand.
            return "\(raw: b).build_Arg(\(member.trimmed))"
        }
        if !readsVariable(base), namesType(base) {
            // `Date.now`, `Status.done`, `Int.max`: evaluated once, like a captured constant.
            return "\(raw: b).build_Arg(\(member.trimmed))"
        }
        return "\(raw: b).build_KeyPath(root: \(try translate(base)), keyPath: \\.\(member.declName.trimmed))"
    }

    /// Whether an expression names a type (`Date`, `Foundation.Date`, `Status`), by Swift's
    /// naming convention: its first component starts with an uppercase letter.
    private func namesType(_ expression: ExprSyntax) -> Bool {
        if let reference = expression.as(DeclReferenceExprSyntax.self) {
            return reference.baseName.text.first?.isUppercase == true
        }
        if let member = expression.as(MemberAccessExprSyntax.self), let base = member.base {
            return namesType(base)
        }
        return expression.is(TypeExprSyntax.self) || expression.is(GenericSpecializationExprSyntax.self)
    }

    private mutating func functionCall(_ call: FunctionCallExprSyntax) throws -> ExprSyntax {
        let b = Self.builders
        guard let callee = call.calledExpression.as(MemberAccessExprSyntax.self), let base = callee.base else {
            // `Date(timeIntervalSinceNow: -60)`, `makeCutoff()`: computed once, if it does not
            // read the inputs.
            guard !readsVariable(call) else {
                throw error(Syntax(call.calledExpression), .unsupportedFunction("\(call.calledExpression.trimmed)"))
            }
            return "\(raw: b).build_Arg(\(call.trimmed))"
        }
        let name = callee.declName.baseName.text
        let arguments = Array(call.arguments)
        let labels = arguments.map { $0.label?.text }
        let closure = call.trailingClosure ?? arguments.last?.expression.as(ClosureExprSyntax.self)
        if !readsVariable(call), namesType(base) {
            return "\(raw: b).build_Arg(\(call.trimmed))"
        }
        let receiver = try translate(base)
        switch (name, labels, closure) {
        case ("contains", [nil], nil):
            return "\(raw: b).build_contains(\(receiver), \(try translate(arguments[0].expression)))"
        case ("contains", [], let closure?), ("contains", ["where"], let closure?):
            return "\(raw: b).build_contains(\(receiver)) \(try nestedClosure(closure))"
        case ("allSatisfy", _, let closure?):
            return "\(raw: b).build_allSatisfy(\(receiver)) \(try nestedClosure(closure))"
        case ("filter", _, let closure?):
            return "\(raw: b).build_filter(\(receiver)) \(try nestedClosure(closure))"
        case ("flatMap", _, let closure?):
            return "\(raw: b).build_flatMap(\(receiver)) \(try nestedClosure(closure))"
        case ("starts", ["with"], nil), ("hasPrefix", [nil], nil):
            return "\(raw: b).build_starts(\(receiver), with: \(try translate(arguments[0].expression)))"
        case ("hasSuffix", [nil], nil):
            return "\(raw: b).build_hasSuffix(\(receiver), \(try translate(arguments[0].expression)))"
        case ("min", [], nil):
            return "\(raw: b).build_min(\(receiver))"
        case ("max", [], nil):
            return "\(raw: b).build_max(\(receiver))"
        case ("localizedStandardContains", [nil], nil):
            return "\(raw: b).build_localizedStandardContains(\(receiver), \(try translate(arguments[0].expression)))"
        case ("localizedCompare", [nil], nil):
            return "\(raw: b).build_localizedCompare(\(receiver), \(try translate(arguments[0].expression)))"
        case ("evaluate", [nil], nil) where !readsVariable(base):
            // A captured predicate or expression applied to a value: the value itself is passed.
            return "\(raw: b).build_evaluate(\(base.trimmed), \(try translate(arguments[0].expression)))"
        case ("caseInsensitiveCompare", [nil], nil):
            return "\(raw: b).build_caseInsensitiveCompare(\(receiver), \(try translate(arguments[0].expression)))"
        default:
            if !readsVariable(call) {
                // A value computed without the inputs (`cutoff.addingTimeInterval(60)`): once.
                return "\(raw: b).build_Arg(\(call.trimmed))"
            }
            var diagnostic = Diagnostic(
                node: Syntax(callee.declName), message: PredicateDiagnostic.unsupportedFunction("\(name)(\(labels.map { "\($0 ?? "_"):" }.joined()))")
            )
            if name == "localizedCaseInsensitiveContains" || name == "lowercased" || name == "uppercased" {
                diagnostic = Diagnostic(
                    node: Syntax(callee.declName),
                    message: PredicateDiagnostic.unsupportedFunction("\(name)(\(labels.map { "\($0 ?? "_"):" }.joined()))"),
                    fixIts: name == "localizedCaseInsensitiveContains"
                        ? [
                            FixIt(
                                message: PredicateFixIt(message: "use localizedStandardContains(_:), which ignores case and diacritics"),
                                changes: [
                                    .replace(
                                        oldNode: Syntax(callee.declName),
                                        newNode: Syntax(DeclReferenceExprSyntax(baseName: .identifier("localizedStandardContains"))))
                                ]
                            )
                        ] : []
                )
            }
            throw PredicateExpansionError(diagnostic: diagnostic)
        }
    }

    private mutating func subscriptAccess(_ node: SubscriptCallExprSyntax) throws -> ExprSyntax {
        let b = Self.builders
        let receiver = try translate(node.calledExpression)
        let arguments = Array(node.arguments)
        switch arguments.map({ $0.label?.text }) {
        case [nil]:
            return "\(raw: b).build_subscript(\(receiver), \(try translate(arguments[0].expression)))"
        case [nil, "default"]:
            return
                "\(raw: b).build_subscript(\(receiver), \(try translate(arguments[0].expression)), default: \(try translate(arguments[1].expression)))"
        default:
            throw error(Syntax(node), .unsupportedSyntax("This subscript"))
        }
    }

    /// A closure argument (`contains { }`, `flatMap { }`, …) with its parameters as variables.
    private mutating func nestedClosure(_ closure: ClosureExprSyntax) throws -> ExprSyntax {
        let saved = variables
        variables.formUnion(PredicateExpansion.parameterNames(of: closure))
        defer { variables = saved }
        let body = try body(of: closure)
        let signature = closure.signature.map { " \($0.trimmed)" } ?? ""
        return "{\(raw: signature)\n\(body)\n}"
    }

    // MARK: Optional chaining

    /// The outermost `?` of a postfix chain (`a?.b?.c` → the one after `b`), if any.
    private func topOptionalChain(in expression: ExprSyntax) -> OptionalChainingExprSyntax? {
        var current: ExprSyntax? = expression
        while let node = current {
            if let chain = node.as(OptionalChainingExprSyntax.self) { return chain }
            if let member = node.as(MemberAccessExprSyntax.self) {
                current = member.base
            } else if let call = node.as(FunctionCallExprSyntax.self) {
                current = call.calledExpression
            } else if let subscriptCall = node.as(SubscriptCallExprSyntax.self) {
                current = subscriptCall.calledExpression
            } else if let unwrap = node.as(ForceUnwrapExprSyntax.self) {
                current = unwrap.expression
            } else {
                return nil
            }
            // Only a chain continued after the `?` is optional chaining; `x?` alone is not valid.
        }
        return nil
    }

    /// `wrapped?.rest` → `build_flatMap(wrapped) { w in rest(w) }`.
    private mutating func optionalChain(_ expression: ExprSyntax, unwrapping chain: OptionalChainingExprSyntax) throws -> ExprSyntax {
        let name = freshName()
        let wrapped = try translate(chain.expression)
        let rest = OptionalChainReplacer(target: chain.id, name: name).rewrite(expression)
        guard let restExpression = rest.as(ExprSyntax.self) else {
            throw error(Syntax(chain), .unsupportedSyntax("This optional chain"))
        }
        let saved = variables
        variables.insert(name)
        defer { variables = saved }
        let transformed = try translate(restExpression)
        return "\(raw: Self.builders).build_flatMap(\(wrapped)) { \(raw: name) in \(transformed) }"
    }
}

/// A fix-it message.
struct PredicateFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "OpenSwiftDataMacros.Predicate", id: message) }
}
