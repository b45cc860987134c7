import SwiftSyntax
import SwiftSyntaxMacros

/// `@_PersistedProperty`: attached by `@Model` to each persisted stored property. Its value moves
/// into the model's backing data: an `init` accessor lets the class's own initializers assign it as
/// usual, `get` and `set` go through the backing data and report to the observation registrar, and
/// a zero-sized peer `_name` satisfies definite initialization.
public struct PersistedPropertyMacro {}

extension PersistedPropertyMacro: AccessorMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self),
            let property = PersistedProperty(variable)
        else { return [] }
        let name = property.name
        let storage = "_" + property.plainName
        let index = schemaIndex(from: node)
        let owner = ownerName(in: context)
        // The key path made once per class (see the peer), not instantiated on every access.
        let keyPath = "\(owner)._$keyPath_\(property.plainName)"
        return [
            """
            @storageRestrictions(accesses: _$backingData, initializes: \(raw: storage))
            init(initialValue) {
                \(raw: owner)._$initializeValue(&_$backingData, at: \(raw: index), forKey: \\.\(raw: name), to: initialValue)
                \(raw: storage) = _SwiftDataNoType()
            }
            """,
            """
            get {
                self.access(keyPath: \(raw: keyPath))
                return self._$getValue(at: \(raw: index), forKey: \(raw: keyPath))
            }
            """,
            """
            set {
                self.withMutation(keyPath: \(raw: keyPath)) {
                    self._$setValue(at: \(raw: index), forKey: \(raw: keyPath), to: newValue)
                }
            }
            """,
        ]
    }
}

extension PersistedPropertyMacro {
    /// The name of the class the property belongs to.
    static func ownerName(in context: some MacroExpansionContext) -> String {
        context.lexicalContext.lazy.compactMap { $0.as(ClassDeclSyntax.self) }.first?.name.trimmedDescription ?? "Self"
    }

    /// The `index:` argument `@Model` passes: the property's position in `schemaMetadata`.
    static func schemaIndex(from node: AttributeSyntax) -> String {
        guard case let .argumentList(arguments)? = node.arguments,
            let index = arguments.first(where: { $0.label?.text == "index" })
        else { return "-1" }
        return index.expression.trimmedDescription
    }
}

extension PersistedPropertyMacro: PeerMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self),
            let property = PersistedProperty(variable)
        else { return [] }
        let owner = ownerName(in: context)
        return [
            "@OpenSwiftData.Transient private var _\(raw: property.plainName): _SwiftDataNoType",
            // A key-path literal is inferred `Sendable`, so a plain static constant is safe.
            "private static let _$keyPath_\(raw: property.plainName) = \\\(raw: owner).\(raw: property.name)",
        ]
    }
}
