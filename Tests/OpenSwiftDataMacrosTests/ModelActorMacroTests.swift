import MacroTesting
import OpenSwiftDataMacros
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import Testing

private let specs: [String: MacroSpec] = [
    "ModelActor": MacroSpec(type: ModelActorMacro.self, conformances: [TypeSyntax(IdentifierTypeSyntax(name: .identifier("ModelActor")))])
]

@Suite(.macros(specs, record: .never))
struct ModelActorMacroExpansionTests {
    @Test func actorGetsContainerExecutorAndInit() {
        assertMacro {
            """
            @ModelActor
            actor Importer {
                func run() {}
            }
            """
        } expansion: {
            """
            actor Importer {
                func run() {}

                public nonisolated let modelExecutor: any OpenSwiftData.ModelExecutor

                public nonisolated let modelContainer: OpenSwiftData.ModelContainer

                public init(modelContainer: OpenSwiftData.ModelContainer) {
                    let _$modelContext: OpenSwiftData.ModelContext = .init(modelContainer)
                    let _$modelExecutor: OpenSwiftData.DefaultSerialModelExecutor = .init(modelContext: _$modelContext)
                    self.modelExecutor = _$modelExecutor
                    self.modelContainer = modelContainer
                }
            }

            extension Importer: OpenSwiftData.ModelActor {
            }
            """
        }
    }

    @Test func notAnActor() {
        assertMacro {
            """
            @ModelActor
            final class Importer {}
            """
        } diagnostics: {
            """
            @ModelActor
            ┬──────────
            ╰─ 🛑 @ModelActor can only be applied to an actor
            final class Importer {}
            """
        }
    }
}
