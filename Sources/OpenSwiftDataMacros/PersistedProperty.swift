import SwiftDiagnostics
import SwiftSyntax

/// A stored property of a `@Model` class as the macros see it.
struct PersistedProperty {
    let declaration: VariableDeclSyntax
    let binding: PatternBindingSyntax
    let name: String
    let type: TypeSyntax?
    let initializer: ExprSyntax?
    /// The argument list of its `@Attribute(...)`, or nil when it has none.
    let attributeArguments: LabeledExprListSyntax?
    let hasAttribute: Bool
    /// The argument list of its `@Relationship(...)`, or nil when it has none.
    let relationshipArguments: LabeledExprListSyntax?
    let hasRelationship: Bool
}

extension VariableDeclSyntax {
    func hasAttribute(named name: String) -> Bool {
        attributes.contains { element in
            guard case let .attribute(attribute) = element else { return false }
            let typeName = attribute.attributeName.trimmedDescription
            return typeName == name || typeName.hasSuffix(".\(name)")
        }
    }

    func attribute(named name: String) -> AttributeSyntax? {
        for element in attributes {
            guard case let .attribute(attribute) = element else { continue }
            let typeName = attribute.attributeName.trimmedDescription
            if typeName == name || typeName.hasSuffix(".\(name)") { return attribute }
        }
        return nil
    }

    var isStatic: Bool {
        modifiers.contains { $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class) }
    }

    var isLazy: Bool { modifiers.contains { $0.name.tokenKind == .keyword(.lazy) } }

    /// Whether a binding has `get`/`set` (a computed property) rather than none or only observers.
    static func isComputed(_ binding: PatternBindingSyntax) -> Bool {
        guard let accessors = binding.accessorBlock?.accessors else { return false }
        switch accessors {
        case .getter:
            return true
        case let .accessors(list):
            return list.contains { accessor in
                let kind = accessor.accessorSpecifier.tokenKind
                return kind != .keyword(.willSet) && kind != .keyword(.didSet)
            }
        }
    }

    static func hasObservers(_ binding: PatternBindingSyntax) -> Bool {
        guard case let .accessors(list)? = binding.accessorBlock?.accessors else { return false }
        return list.contains { accessor in
            let kind = accessor.accessorSpecifier.tokenKind
            return kind == .keyword(.willSet) || kind == .keyword(.didSet)
        }
    }

    /// Whether this declaration is a stored instance property that `@Model` persists.
    var isPersistedCandidate: Bool {
        guard !isStatic, !isLazy else { return false }
        if hasAttribute(named: "Transient") || hasAttribute(named: "ObservationIgnored") { return false }
        guard bindings.count == 1, let binding = bindings.first else { return false }
        guard binding.pattern.is(IdentifierPatternSyntax.self) else { return false }
        return !Self.isComputed(binding)
    }
}

extension PersistedProperty {
    /// The persisted property this declaration declares, if it is one; `let` declarations count, so
    /// that `@Model` can diagnose them.
    init?(_ declaration: VariableDeclSyntax) {
        guard declaration.isPersistedCandidate, let binding = declaration.bindings.first,
            let identifier = binding.pattern.as(IdentifierPatternSyntax.self)
        else { return nil }
        self.declaration = declaration
        self.binding = binding
        self.name = identifier.identifier.trimmedDescription
        // Not `.trimmed`: a trimmed copy is detached from the source tree, and diagnostics anchored
        // on it (unstorable type, implicit-member default) would land at the top of the file.
        self.type = binding.typeAnnotation?.type
        self.initializer = binding.initializer?.value
        let attribute = declaration.attribute(named: "Attribute")
        self.hasAttribute = attribute != nil
        if case let .argumentList(list)? = attribute?.arguments {
            self.attributeArguments = list
        } else {
            self.attributeArguments = nil
        }
        let relationship = declaration.attribute(named: "Relationship")
        self.hasRelationship = relationship != nil
        if case let .argumentList(list)? = relationship?.arguments {
            self.relationshipArguments = list
        } else {
            self.relationshipArguments = nil
        }
    }

    /// The property's name without backticks, as stored in the schema.
    var plainName: String { name.filter { $0 != "`" } }

    var isLet: Bool { declaration.bindingSpecifier.tokenKind == .keyword(.let) }

    /// The `defaultValue:` argument for `Schema.PropertyMetadata`.
    var defaultValueExpression: String {
        guard let initializer else { return "nil" }
        if let iuo = type?.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            // `as T!` is not valid Swift; the stored type of `T!` is `T?`.
            return "(\(initializer.trimmedDescription) as \(iuo.wrappedType.trimmedDescription)?)"
        }
        if let type { return "(\(initializer.trimmedDescription) as \(type.trimmedDescription))" }
        return initializer.trimmedDescription
    }

    /// The `metadata:` argument for `Schema.PropertyMetadata`.
    var metadataExpression: String {
        if hasRelationship {
            return "_$Relationship(\(relationshipArguments?.trimmedDescription ?? ""))"
        }
        guard hasAttribute else { return "nil" }
        let arguments = attributeArguments?.trimmedDescription ?? ""
        return "_$Attribute(\(arguments))"
    }
}

/// Whether a type written on a persisted property can never be stored (closures, tuples,
/// existentials, metatypes); everything else is left to the type checker's `Codable` requirement.
func unstorableTypeNode(in type: TypeSyntax) -> Syntax? {
    if let optional = type.as(OptionalTypeSyntax.self) { return unstorableTypeNode(in: optional.wrappedType) }
    if let optional = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
        return unstorableTypeNode(in: optional.wrappedType)
    }
    if let array = type.as(ArrayTypeSyntax.self) { return unstorableTypeNode(in: array.element) }
    if let dictionary = type.as(DictionaryTypeSyntax.self) {
        return unstorableTypeNode(in: dictionary.key) ?? unstorableTypeNode(in: dictionary.value)
    }
    if let attributed = type.as(AttributedTypeSyntax.self) { return unstorableTypeNode(in: attributed.baseType) }
    if type.is(FunctionTypeSyntax.self) || type.is(MetatypeTypeSyntax.self) { return Syntax(type) }
    if let tuple = type.as(TupleTypeSyntax.self) {
        // `(T)` is just T in parentheses.
        if tuple.elements.count == 1, let only = tuple.elements.first, only.firstName == nil {
            return unstorableTypeNode(in: only.type)
        }
        return Syntax(type)
    }
    if type.is(SomeOrAnyTypeSyntax.self) || type.is(CompositionTypeSyntax.self) { return Syntax(type) }
    return nil
}
