import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@ModelActor`: gives an actor a model container, a serial model executor with a context of
/// its own, `init(modelContainer:)`, and the `ModelActor` conformance.
public struct ModelActorMacro: MemberMacro, ExtensionMacro {
    /// The members: `modelExecutor`, `modelContainer`, `init(modelContainer:)`.
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard declaration.is(ActorDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: Syntax(node), message: ModelActorDiagnostic.notAnActor))
            return []
        }
        // Library names only in type positions: an actor's member named `OpenSwiftData` would
        // shadow the module in an expression.
        return [
            "public nonisolated let modelExecutor: any OpenSwiftData.ModelExecutor",
            "public nonisolated let modelContainer: OpenSwiftData.ModelContainer",
            """
            public init(modelContainer: OpenSwiftData.ModelContainer) {
                let _$modelContext: OpenSwiftData.ModelContext = .init(modelContainer)
                let _$modelExecutor: OpenSwiftData.DefaultSerialModelExecutor = .init(modelContext: _$modelContext)
                self.modelExecutor = _$modelExecutor
                self.modelContainer = modelContainer
            }
            """,
        ]
    }

    /// The `ModelActor` conformance.
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ActorDeclSyntax.self), !protocols.isEmpty else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): OpenSwiftData.ModelActor {}")]
    }
}

enum ModelActorDiagnostic: String, DiagnosticMessage {
    case notAnActor

    var message: String { "@ModelActor can only be applied to an actor" }
    var diagnosticID: MessageID { MessageID(domain: "OpenSwiftDataMacros", id: rawValue) }
    var severity: DiagnosticSeverity { .error }
}
