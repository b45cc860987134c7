import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model`: turns a class into a persistent model, as SwiftData's macro of the same name does.
///
/// - member role: backing data, `persistentBackingData`, `schemaMetadata`, `init(backingData:)`,
///   the observation registrar and its `access`/`withMutation` pair, and the constraints that
///   `#Unique` and `#Index` declared in the class body.
/// - member-attribute role: `@_PersistedProperty` on every persisted stored property.
/// - extension role: `PersistentModel` and `Observable` conformances.
public struct ModelMacro {}

extension ModelMacro: MemberMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: ModelDiagnostic.notAClass))
            return []
        }
        if let generics = classDecl.genericParameterClause {
            context.diagnose(Diagnostic(node: generics, message: ModelDiagnostic.genericClass))
            return []
        }
        let className = classDecl.name.trimmedDescription
        let members = classDecl.memberBlock.members.map(\.decl)

        var properties: [PersistedProperty] = []
        var valid = true
        for member in members {
            guard let variable = member.as(VariableDeclSyntax.self) else { continue }
            if variable.hasAttribute(named: "Transient") {
                valid = diagnoseTransient(variable, in: context) && valid
                continue
            }
            guard let property = PersistedProperty(variable) else { continue }
            valid = diagnose(property, in: context) && valid
            properties.append(property)
        }
        let hasDesignatedInit = members.contains { member in
            guard let initializer = member.as(InitializerDeclSyntax.self) else { return false }
            return !initializer.modifiers.contains { $0.name.tokenKind == .keyword(.convenience) }
        }
        if !hasDesignatedInit {
            context.diagnose(Diagnostic(node: classDecl.name, message: ModelDiagnostic.missingInitializer))
            valid = false
        }
        guard valid else { return [] }

        // Hygiene: a model may declare members with any name (`type`, `Swift`, `OpenSwiftData`,
        // `value`, …), and a member shadows a module name in an expression (not in a type). So
        // the generated code names library and standard-library declarations in type positions
        // only (`let x: OpenSwiftData.T = .init(…)`, local type aliases), reaches everything else
        // through `_$`-prefixed members, and names the class itself as the base of its statics.
        var decls: [DeclSyntax] = []
        decls.append(
            """
            @OpenSwiftData.Transient
            private var _$backingData: any OpenSwiftData.BackingData<\(raw: className)> = \(raw: className)._$inertBackingData
            """
        )
        decls.append(
            """
            nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<\(raw: className)> = \(raw: className)._$makeInertBackingData()
            """
        )
        decls.append(
            """
            public var persistentBackingData: any OpenSwiftData.BackingData<\(raw: className)> {
                get {
                    self._$backingData
                }
                set {
                    self._$backingData = newValue
                }
            }
            """
        )
        let metadataEntries = properties.map { property in
            "_$PropertyMetadata(name: \"\(property.plainName)\", keypath: \\\(className).\(property.name), defaultValue: \(property.defaultValueExpression), metadata: \(property.metadataExpression))"
        }
        let metadataBody = metadataEntries.isEmpty ? "    return []" : "    return [\n" + metadataEntries.map { "        " + $0 }.joined(separator: ",\n") + "\n    ]"
        decls.append(
            """
            public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                typealias _$Attribute = OpenSwiftData.Schema.Attribute
                typealias _$Relationship = OpenSwiftData.Schema.Relationship
            \(raw: metadataBody)
            }
            """
        )
        let placeholders = properties.map { "self._\($0.plainName) = _SwiftDataNoType()" }
        let initBody = (placeholders + ["self._$backingData = backingData"]).map { "    " + $0 }.joined(separator: "\n")
        decls.append(
            """
            public required init(backingData: any OpenSwiftData.BackingData<\(raw: className)>) {
            \(raw: initBody)
            }
            """
        )
        decls.append(
            """
            @OpenSwiftData.Transient
            private let _$observationRegistrar: Observation.ObservationRegistrar = .init()
            """
        )
        decls.append(
            """
            internal nonisolated func access<_M>(keyPath: Swift.KeyPath<\(raw: className), _M>) {
                self._$observationRegistrar.access(self, keyPath: keyPath)
            }
            """
        )
        decls.append(
            """
            internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<\(raw: className), _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
            }
            """
        )
        decls.append(
            """
            public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
            }
            """
        )
        decls.append("public struct _SwiftDataNoType: Swift.Sendable {}")

        decls += keyPathGroups(of: members, macro: "Unique", schemaType: "Unique", member: "_$uniquenessConstraints", className: className)
        decls += keyPathGroups(of: members, macro: "Index", schemaType: "Index", member: "_$indices", className: className)
        return decls
    }

    /// The static member that gathers every `#Unique` (or `#Index`) of the class body, typed
    /// through `Schema.Unique<T>` (or `Schema.Index<T>`) so that bad key paths fail to compile.
    private static func keyPathGroups(of members: [DeclSyntax], macro: String, schemaType: String, member: String, className: String) -> [DeclSyntax] {
        let invocations = members.compactMap { freestanding($0, named: macro) }
        guard !invocations.isEmpty else { return [] }
        let sum = invocations.map { "_$\(schemaType)(\($0.trimmedDescription))._$keyPathGroups" }
            .joined(separator: " + ")
        return [
            """
            public static var \(raw: member): [[Swift.AnyKeyPath]] {
                typealias _$\(raw: schemaType) = OpenSwiftData.Schema.\(raw: schemaType)<\(raw: className)>
                return \(raw: sum)
            }
            """,
        ]
    }

    /// The argument list of a `#Unique`/`#Index` written in the class body.
    private static func freestanding(_ member: DeclSyntax, named name: String) -> LabeledExprListSyntax? {
        guard let expansion = member.as(MacroExpansionDeclSyntax.self),
              expansion.macroName.trimmedDescription == name
        else { return nil }
        return expansion.arguments
    }

    private static func diagnose(_ property: PersistedProperty, in context: some MacroExpansionContext) -> Bool {
        var valid = true
        if property.isLet {
            let specifier = property.declaration.bindingSpecifier
            context.diagnose(
                Diagnostic(
                    node: specifier,
                    message: ModelDiagnostic.letProperty,
                    fixIt: FixIt(
                        message: ModelFixIt(message: "Replace 'let' with 'var'"),
                        changes: [.replace(oldNode: Syntax(specifier), newNode: Syntax(specifier.with(\.tokenKind, .keyword(.var))))]
                    )
                )
            )
            valid = false
        }
        if VariableDeclSyntax.hasObservers(property.binding) {
            context.diagnose(Diagnostic(node: property.binding, message: ModelDiagnostic.propertyObservers))
            valid = false
        }
        if let type = property.type, let bad = unstorableTypeNode(in: type) {
            context.diagnose(Diagnostic(node: bad, message: ModelDiagnostic.unstorableType))
            valid = false
        }
        if property.type == nil, let initializer = property.initializer, startsWithImplicitMember(initializer) {
            context.diagnose(Diagnostic(node: initializer, message: ModelDiagnostic.implicitMemberDefaultWithoutType))
            valid = false
        }
        return valid
    }

    private static func diagnoseTransient(_ variable: VariableDeclSyntax, in context: some MacroExpansionContext) -> Bool {
        guard !variable.isStatic, !variable.isLazy else { return true }
        for binding in variable.bindings where !VariableDeclSyntax.isComputed(binding) {
            let isOptionalVar = variable.bindingSpecifier.tokenKind == .keyword(.var)
                && (binding.typeAnnotation?.type.is(OptionalTypeSyntax.self) ?? false)
            if binding.initializer == nil && !isOptionalVar {
                context.diagnose(Diagnostic(node: binding, message: ModelDiagnostic.transientWithoutDefault))
                return false
            }
        }
        return true
    }

    private static func startsWithImplicitMember(_ expression: ExprSyntax) -> Bool {
        if let member = expression.as(MemberAccessExprSyntax.self) {
            guard let base = member.base else { return true }
            return startsWithImplicitMember(base)
        }
        if let call = expression.as(FunctionCallExprSyntax.self) { return startsWithImplicitMember(call.calledExpression) }
        return false
    }
}

extension ModelMacro: MemberAttributeMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard declaration.is(ClassDeclSyntax.self),
              let variable = member.as(VariableDeclSyntax.self),
              let property = PersistedProperty(variable),
              !property.isLet,
              !VariableDeclSyntax.hasObservers(property.binding)
        else { return [] }
        // The property's position in `schemaMetadata`, counted over the same members the member
        // role lists there.
        let persisted = declaration.memberBlock.members.compactMap { item in
            item.decl.as(VariableDeclSyntax.self).flatMap(PersistedProperty.init)
        }
        guard let index = persisted.firstIndex(where: { $0.name == property.name }) else { return [] }
        return ["@OpenSwiftData._PersistedProperty(index: \(raw: index))"]
    }
}

extension ModelMacro: ExtensionMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ClassDeclSyntax.self) else { return [] }
        return protocols.map { proto in
            ExtensionDeclSyntax(extendedType: type.trimmed, inheritanceClause: InheritanceClauseSyntax {
                InheritedTypeSyntax(type: qualified(proto.trimmed))
            }) {}
        }
    }

    /// The conformance the compiler asks for, named through its module (as the macro's
    /// declaration spells it, unqualified, a type of the user's could be found instead).
    private static func qualified(_ proto: TypeSyntax) -> TypeSyntax {
        switch proto.trimmedDescription {
        case "PersistentModel": return "OpenSwiftData.PersistentModel"
        case "Observable": return "Observation.Observable"
        default: return proto
        }
    }
}
