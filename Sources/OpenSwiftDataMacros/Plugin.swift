import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that provides OpenSwiftData's macros.
@main
struct OpenSwiftDataMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [
        ModelMacro.self,
        PersistedPropertyMacro.self,
        AttributeMacro.self,
        RelationshipMacro.self,
        TransientMacro.self,
        UniqueMacro.self,
        IndexMacro.self,
        PredicateMacro.self,
        ModelActorMacro.self,
        PredicateExpressionMacro.self,
    ]
}
