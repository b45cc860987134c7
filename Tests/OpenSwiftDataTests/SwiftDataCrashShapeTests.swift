import Foundation
import OpenSwiftData
import Testing

/// A predicate written once over any model type with a title.
func titled<T: Titled>(_ type: T.Type, containing text: String) -> Predicate<T> {
    #Predicate<T> { $0.title.contains(text) }
}

/// The predicate shapes that compile and then crash at run time in Apple's SwiftData. Each runs
/// here and returns what Foundation's `evaluate` says.
@Suite("Predicate shapes that crash SwiftData")
struct SwiftDataCrashShapeTests {
    private func context() throws -> ModelContext {
        let container = try ModelContainer(
            for: Schema(PredicateTranslationTests.models), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        _ = try PredicateFixture.make(in: ModelContext(container))
        return ModelContext(container)
    }

    private func titles(_ context: ModelContext, _ predicate: Predicate<Post>) throws -> [String] {
        try context.fetch(FetchDescriptor(predicate: predicate, sortBy: [SortDescriptor(\.title, comparator: .lexical)])).map(\.title)
    }

    @Test("comparing an enum-typed property with a captured case")
    func enumComparison() throws {
        let context = try context()
        let draft = PostStatus.draft
        #expect(try titles(context, #Predicate { $0.status == draft }) == ["beta", "Épsilon"])
        let normal: PostPriority? = .normal
        #expect(try titles(context, #Predicate { $0.priority == normal }) == ["delta_x", "🙂 emoji"])
        #expect(try context.explain(FetchDescriptor(predicate: #Predicate<Post> { $0.status == draft })).runsEntirelyInSQL)
    }

    @Test("contains on an array attribute")
    func arrayAttributeContains() throws {
        let context = try context()
        #expect(try titles(context, #Predicate { $0.tags.contains("db") }) == ["delta_x", "Épsilon"])
        #expect(try context.explain(FetchDescriptor(predicate: #Predicate<Post> { $0.tags.contains("db") })).runsEntirelyInSQL)
    }

    @Test("an optional to-one chain compared with nil")
    func optionalChainWithNil() throws {
        let context = try context()
        // No writer, or a writer without a birth date.
        #expect(try titles(context, #Predicate { $0.writer?.born == nil }) == ["", "Gamma 100%", "beta", "Épsilon"])
        #expect(try titles(context, #Predicate { $0.writer?.born != nil }).count == 4)
    }

    @Test("a force-unwrap in a predicate")
    func forceUnwrap() throws {
        let context = try context()
        #expect(try titles(context, #Predicate { $0.writer != nil && $0.writer!.name == "Linus" }) == ["x' OR 1=1 --"])
        #expect(try titles(context, #Predicate { $0.score != nil && $0.score! > 6 }) == ["Gamma 100%", "Épsilon"])
    }

    @Test("an optional to-many relationship")
    func optionalToMany() throws {
        let context = try context()
        let withTwoNotes = #Predicate<Post> { ($0.notes?.count ?? 0) == 2 }
        #expect(try titles(context, withTwoNotes) == ["delta_x"])
        #expect(try titles(context, #Predicate { $0.notes?.contains { $0.text.starts(with: "note 1") } == true }) == ["delta_x"])
        #expect(try context.explain(FetchDescriptor(predicate: withTwoNotes)).runsEntirelyInSQL)
    }

    @Test("a predicate written over a generic model type")
    func genericPredicate() throws {
        let context = try context()
        let predicate = titled(Post.self, containing: "a")
        #expect(try titles(context, predicate) == ["Alpha", "Gamma 100%", "beta", "delta_x"])
        // The key path names the protocol's requirement, not the model's property: the predicate
        // runs in memory, and says so.
        let plan = try context.explain(FetchDescriptor(predicate: predicate))
        #expect(!plan.runsEntirelyInSQL)
        #expect(plan.predicateInMemory.count == 1)
    }
}
