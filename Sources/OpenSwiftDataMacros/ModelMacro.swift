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

        var decls: [DeclSyntax] = []
        decls.append(
            """
            @Transient
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
                    _$backingData
                }
                set {
                    _$backingData = newValue
                }
            }
            """
        )
        let metadataEntries = properties.map { property in
            "OpenSwiftData.Schema.PropertyMetadata(name: \"\(property.plainName)\", keypath: \\\(className).\(property.name), defaultValue: \(property.defaultValueExpression), metadata: \(property.metadataExpression))"
        }
        let metadataBody = metadataEntries.isEmpty ? "[]" : "[\n" + metadataEntries.map { "    " + $0 }.joined(separator: ",\n") + "\n]"
        decls.append(
            """
            public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
            \(raw: metadataBody)
            }
            """
        )
        let placeholders = properties.map { "_\($0.plainName) = _SwiftDataNoType()" }
        let initBody = (placeholders + ["_$backingData = backingData"]).map { "    " + $0 }.joined(separator: "\n")
        decls.append(
            """
            public required init(backingData: any OpenSwiftData.BackingData<\(raw: className)>) {
            \(raw: initBody)
            }
            """
        )
        decls.append(
            """
            @Transient
            private let _$observationRegistrar = Observation.ObservationRegistrar()
            """
        )
        decls.append(
            """
            internal nonisolated func access<_M>(keyPath: KeyPath<\(raw: className), _M>) {
                _$observationRegistrar.access(self, keyPath: keyPath)
            }
            """
        )
        decls.append(
            """
            internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<\(raw: className), _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
            }
            """
        )
        decls.append(
            """
            public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                func notify<_M>(_ member: _M.Type) {
                    guard let keyPath = keyPath as? KeyPath<\(raw: className), _M> else { return }
                    _$observationRegistrar.willSet(self, keyPath: keyPath)
                    _$observationRegistrar.didSet(self, keyPath: keyPath)
                }
                _openExistential(type(of: keyPath).valueType, do: notify)
            }
            """
        )
        decls.append("public struct _SwiftDataNoType: Sendable {}")

        decls += keyPathGroups(of: members, macro: "Unique", schemaType: "Unique", member: "_$uniquenessConstraints", className: className)
        decls += keyPathGroups(of: members, macro: "Index", schemaType: "Index", member: "_$indices", className: className)
        return decls
    }

    /// The static member that gathers every `#Unique` (or `#Index`) of the class body, typed
    /// through `Schema.Unique<T>` (or `Schema.Index<T>`) so that bad key paths fail to compile.
    private static func keyPathGroups(of members: [DeclSyntax], macro: String, schemaType: String, member: String, className: String) -> [DeclSyntax] {
        let invocations = members.compactMap { freestanding($0, named: macro) }
        guard !invocations.isEmpty else { return [] }
        let sum = invocations.map { "OpenSwiftData.Schema.\(schemaType)<\(className)>(\($0.trimmedDescription))._keyPathGroups" }
            .joined(separator: " + ")
        return [
            """
            public static var \(raw: member): [[AnyKeyPath]] {
                \(raw: sum)
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
        return ["@_PersistedProperty(index: \(raw: index))"]
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
                InheritedTypeSyntax(type: proto.trimmed)
            }) {}
        }
    }
}
