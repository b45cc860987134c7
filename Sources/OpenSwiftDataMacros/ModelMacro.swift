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
        let firstInherited = classDecl.inheritanceClause?.inheritedTypes.first?.type
        // The compiler asks for the conformances the class lacks: a class that already is a
        // `PersistentModel` inherits it from its superclass, a model.
        let needsConformance = protocols.contains { $0.trimmedDescription.hasSuffix("PersistentModel") }
        let declaresConformance =
            firstInherited.map { ["PersistentModel", "OpenSwiftData.PersistentModel", "SwiftData.PersistentModel"].contains($0.trimmedDescription) }
            ?? false
        let superclass = needsConformance || declaresConformance ? nil : firstInherited?.trimmedDescription
        // A class that lacks the conformance has no model superclass; its first inherited type
        // is then a protocol or a class that is not a model, which syntax alone cannot tell apart
        // (the type may be declared in another file). It is provably a class when it is a known
        // one, or when the class's own members use `super` or `override` (a class without a
        // superclass cannot): then the error is placed here, at the user's inheritance clause.
        if needsConformance, let firstInherited, !declaresConformance,
            knownNonModelClasses.contains(firstInherited.trimmedDescription) || Self.provesSuperclass(classDecl.memberBlock)
        {
            context.diagnose(Diagnostic(node: firstInherited, message: ModelDiagnostic.nonModelSuperclass))
            return []
        }
        let isFinal = classDecl.modifiers.contains { $0.name.tokenKind == .keyword(.final) }

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
        if let superclass {
            return subclassMembers(className: className, superclass: superclass, properties: properties, members: members, isFinal: isFinal)
        }
        var decls: [DeclSyntax] = []
        // `nonisolated(unsafe)`: the nonisolated witnesses (`persistentBackingData`,
        // `init(backingData:)`) must reach the storage even in a main-actor class (a module whose
        // default isolation is the main actor). Safe under the rule every model lives by, here
        // and in SwiftData: a model is used only where its context is (`ExclusiveUse` stops a
        // context used from two threads at once), and actors exchange `PersistentIdentifier`s,
        // not models. A main-actor model's accessors run on the main actor, with
        // `mainContext`; a main-actor class is `Sendable` by its isolation, so the compiler
        // cannot stop one fetched by another actor's context from being sent to the main
        // actor: that breaks the rule, as it does with SwiftData. In a nonisolated class the
        // modifier changes nothing. (The subclass members below do the same.)
        decls.append(
            """
            @OpenSwiftData.Transient
            nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<\(raw: className)> = \(raw: className)._$inertBackingData
            """
        )
        decls.append(
            """
            nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<\(raw: className)> = \(raw: className)._$makeInertBackingData()
            """
        )
        decls.append(
            """
            public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<\(raw: className)> {
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
        let metadataBody =
            metadataEntries.isEmpty
            ? "    return []" : "    return [\n" + metadataEntries.map { "        " + $0 }.joined(separator: ",\n") + "\n    ]"
        // A class that is not final may have subclasses: its statics are class members they
        // override, and it tells them its root and its properties' key paths rooted at them.
        let staticKeyword = isFinal ? "static" : "class"
        decls.append(
            """
            public nonisolated \(raw: staticKeyword) var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                typealias _$Attribute = OpenSwiftData.Schema.Attribute
                typealias _$Relationship = OpenSwiftData.Schema.Relationship
            \(raw: metadataBody)
            }
            """
        )
        let placeholders = properties.filter { !$0.isLet }.map { "self._\($0.plainName) = _SwiftDataNoType()" }
        let constants = constantInitializers(className: className, properties: properties)
        let initBody = (placeholders + constants + ["self._$backingData = backingData"]).map { "    " + $0 }.joined(separator: "\n")
        decls.append(
            """
            public required nonisolated init(backingData: any OpenSwiftData.BackingData<\(raw: className)>) {
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
        decls.append("nonisolated public struct _SwiftDataNoType: Swift.Sendable {}")
        // A root model inherits from no class: if the first inherited type is one (a class that
        // is not a model), `any` of it fails to compile here, naming the rule.
        if let firstInherited, !firstInherited.is(AttributedTypeSyntax.self), !declaresConformance {
            decls.append("private typealias _$SuperclassMustBeAModel = any \(firstInherited.trimmed)")
        }
        if !isFinal {
            decls.append("public typealias _$Root = \(raw: className)")
            decls.append("public nonisolated class var _$inheritedKeyPaths: [Swift.AnyKeyPath] { [] }")
            decls.append(keyPathsRooted(className: className, superclass: nil, properties: properties))
        }

        decls += keyPathGroups(
            of: members, macro: "Unique", schemaType: "Unique", member: "_$uniquenessConstraints", className: className,
            modifiers: isFinal ? "static" : "class", always: !isFinal)
        decls += keyPathGroups(
            of: members, macro: "Index", schemaType: "Index", member: "_$indices", className: className, modifiers: isFinal ? "static" : "class",
            always: !isFinal)
        return decls
    }

    /// The statements of `init(backingData:)` that give each `let` property its stored value.
    ///
    /// Swift does not let a macro turn a `let` into a computed property (an accessor macro on a
    /// `let` is an error in the Swift 6 language mode), so a persisted `let` stays a stored
    /// property of the class: the class's own initializers set it as usual, the context copies
    /// it into the backing data when the model is inserted, and a fetched model takes it from
    /// the row here. Reading it costs nothing, and nothing can write it after initialization.
    private static func constantInitializers(className: String, properties: [PersistedProperty]) -> [String] {
        properties.enumerated().compactMap { index, property in
            guard property.isLet else { return nil }
            return "self.\(property.name) = \(className)._$constantValue(backingData, at: \(index), forKey: \\\(className).\(property.name))"
        }
    }

    /// Whether the class's own members (not those of nested types) say it has a superclass: a
    /// member declared `override`, or `super` used in a member's body.
    static func provesSuperclass(_ members: MemberBlockSyntax) -> Bool {
        for member in members.members {
            let decl = member.decl
            if decl.is(ClassDeclSyntax.self) || decl.is(StructDeclSyntax.self) || decl.is(EnumDeclSyntax.self)
                || decl.is(ActorDeclSyntax.self) || decl.is(ProtocolDeclSyntax.self) || decl.is(ExtensionDeclSyntax.self)
            {
                continue
            }
            if let modifiers = decl.asProtocol(WithModifiersSyntax.self)?.modifiers,
                modifiers.contains(where: { $0.name.tokenKind == .keyword(.override) })
            {
                return true
            }
            if decl.tokens(viewMode: .sourceAccurate).contains(where: { $0.tokenKind == .keyword(.super) }) {
                return true
            }
        }
        return false
    }

    /// Classes that are not models and that a model class cannot inherit from.
    static let knownNonModelClasses: Set<String> = [
        "NSObject", "NSManagedObject", "ObservableObject", "NSCoder", "NSView", "UIView", "NSViewController", "UIViewController",
    ]

    /// `_$keyPaths(rootedAt:)`: the class's persisted properties (and its superclass's) as key
    /// paths rooted at a subclass, which a fetch, sort or predicate of the subclass names.
    private static func keyPathsRooted(className: String, superclass: String?, properties: [PersistedProperty]) -> DeclSyntax {
        let own = "[" + properties.map { "\\_S.\($0.name)" }.joined(separator: ", ") + "]"
        let body = superclass.map { "\($0)._$keyPaths(rootedAt: _S.self) + \(own)" } ?? own
        return """
            public nonisolated static func _$keyPaths<_S: \(raw: className)>(rootedAt _: _S.Type) -> [Swift.AnyKeyPath] {
                \(raw: body)
            }
            """
    }

    /// The members of a model class whose superclass is a model: its own persisted properties
    /// only (SwiftData's rule for `schemaMetadata`), with the backing data, observation and
    /// `init(backingData:)` overriding the superclass's. Values its initializer sets before
    /// `super.init` land in backing data of its own, moved into the instance's storage when it
    /// is first used.
    private static func subclassMembers(
        className: String, superclass: String, properties: [PersistedProperty], members: [DeclSyntax], isFinal: Bool
    ) -> [DeclSyntax] {
        var decls: [DeclSyntax] = []
        decls.append(
            """
            @OpenSwiftData.Transient
            nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<\(raw: className)> = \(raw: className)._$inertBackingData
            """
        )
        decls.append(
            """
            nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<\(raw: className)> = \(raw: className)._$makeInertBackingData()
            """
        )
        decls.append(
            """
            public override nonisolated var persistentBackingData: any OpenSwiftData.BackingData<\(raw: superclass)._$Root> {
                get {
                    \(raw: className)._$adoptInitializedValues(\(raw: className)._$takeInitializedValues(&self._$backingData), of: self)
                    return super.persistentBackingData
                }
                set {
                    super.persistentBackingData = newValue
                }
            }
            """
        )
        let metadataEntries = properties.map { property in
            "_$PropertyMetadata(name: \"\(property.plainName)\", keypath: \\\(className).\(property.name), defaultValue: \(property.defaultValueExpression), metadata: \(property.metadataExpression))"
        }
        let metadataBody =
            metadataEntries.isEmpty
            ? "    return []" : "    return [\n" + metadataEntries.map { "        " + $0 }.joined(separator: ",\n") + "\n    ]"
        decls.append(
            """
            public override nonisolated class var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                typealias _$Attribute = OpenSwiftData.Schema.Attribute
                typealias _$Relationship = OpenSwiftData.Schema.Relationship
            \(raw: metadataBody)
            }
            """
        )
        let placeholders = properties.filter { !$0.isLet }.map { "self._\($0.plainName) = _SwiftDataNoType()" }
        let constants = constantInitializers(className: className, properties: properties)
        let initBody = (placeholders + constants + ["super.init(backingData: backingData)"]).map { "    " + $0 }.joined(separator: "\n")
        decls.append(
            """
            public required nonisolated init(backingData: any OpenSwiftData.BackingData<\(raw: superclass)._$Root>) {
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
            public override nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                super._$notifyObservers(ofChangeTo: keyPath)
            }
            """
        )
        decls.append(
            "public override nonisolated class var _$inheritedKeyPaths: [Swift.AnyKeyPath] { \(raw: superclass)._$keyPaths(rootedAt: \(raw: className).self) }"
        )
        if !isFinal {
            decls.append(keyPathsRooted(className: className, superclass: superclass, properties: properties))
        }
        decls += keyPathGroups(
            of: members, macro: "Unique", schemaType: "Unique", member: "_$uniquenessConstraints", className: className, modifiers: "override class",
            always: false)
        decls += keyPathGroups(
            of: members, macro: "Index", schemaType: "Index", member: "_$indices", className: className, modifiers: "override class", always: false)
        return decls
    }

    /// The static member that gathers every `#Unique` (or `#Index`) of the class body, typed
    /// through `Schema.Unique<T>` (or `Schema.Index<T>`) so that bad key paths fail to compile.
    ///
    /// `modifiers` is `static`, `class` (a class that may have subclasses: `always` then emits
    /// it even when empty, so that they can override it) or `override class`.
    private static func keyPathGroups(
        of members: [DeclSyntax], macro: String, schemaType: String, member: String, className: String, modifiers: String, always: Bool
    ) -> [DeclSyntax] {
        let invocations = members.compactMap { freestanding($0, named: macro) }
        guard !invocations.isEmpty || always else { return [] }
        var terms = invocations.map { "_$\(schemaType)(\($0.trimmedDescription))._$keyPathGroups" }
        // A subclass keeps its superclass's constraints.
        if modifiers.hasPrefix("override") { terms.insert("super.\(member)", at: 0) }
        let sum = terms.isEmpty ? "[]" : terms.joined(separator: " + ")
        return [
            """
            public nonisolated \(raw: modifiers) var \(raw: member): [[Swift.AnyKeyPath]] {
                typealias _$\(raw: schemaType) = OpenSwiftData.Schema.\(raw: schemaType)<\(raw: className)>
                return \(raw: sum)
            }
            """
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
        // A `let` is persisted as a stored property of the class itself (see `constantInitializers`);
        // one with an initial value cannot be given the stored value when a row is fetched, since
        // Swift assigns the initial value in every initializer, `init(backingData:)` included.
        if property.isLet, property.initializer != nil {
            let specifier = property.declaration.bindingSpecifier
            context.diagnose(
                Diagnostic(
                    node: specifier,
                    message: ModelDiagnostic.letWithInitialValue,
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
            let isOptionalVar =
                variable.bindingSpecifier.tokenKind == .keyword(.var)
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
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else { return [] }
        if let first = classDecl.inheritanceClause?.inheritedTypes.first?.type.trimmedDescription, knownNonModelClasses.contains(first) {
            return []
        }
        // The member role reported a superclass that is not a model (see there).
        let needsConformance = protocols.contains { $0.trimmedDescription.hasSuffix("PersistentModel") }
        if needsConformance, classDecl.inheritanceClause != nil, provesSuperclass(classDecl.memberBlock) {
            return []
        }
        // `nonisolated`: in a module whose default isolation is the main actor (Xcode 26's app
        // templates), an extension is main-actor isolated and its conformances would be too,
        // which `PersistentModel` (a `SendableMetatype`) cannot take. The witnesses the member
        // role generates are nonisolated for the same reason.
        return protocols.map { proto in
            ExtensionDeclSyntax(
                modifiers: [DeclModifierSyntax(name: .keyword(.nonisolated))],
                extendedType: type.trimmed,
                inheritanceClause: InheritanceClauseSyntax {
                    InheritedTypeSyntax(type: qualified(proto.trimmed))
                }
            ) {}
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
