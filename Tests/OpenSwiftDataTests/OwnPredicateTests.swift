import Foundation
import OpenSwiftData
import Testing

/// A plain value type: `#Predicate` over it is Foundation's.
struct Reading: Sendable {
    var value: Int
}

/// OpenSwiftData's `#Predicate` for model inputs: what SwiftData code writes and Foundation's
/// macro refuses compiles, and means what the Foundation form with captured constants means.
@Suite("#Predicate for models")
struct OwnPredicateTests {
    private func store() throws -> ModelContext {
        let container = try ModelContainer(
            for: Schema(PredicateTranslationTests.models), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        _ = try PredicateFixture.make(in: ModelContext(container))
        return ModelContext(container)
    }

    /// The titles `predicate` fetches, after checking they equal Foundation's `evaluate` over
    /// every post and the fetch of `foundationForm` (the same predicate, Foundation's way).
    private func titles(_ context: ModelContext, _ predicate: Predicate<Post>, sameAs foundationForm: Predicate<Post>) throws -> [String] {
        // Binary order, so that the expected lists read as written.
        let order = [SortDescriptor(\Post.title, comparator: .lexical)]
        let fetched = try context.fetch(FetchDescriptor(predicate: predicate, sortBy: order)).map(\.title)
        let every = try context.fetch(FetchDescriptor<Post>(sortBy: order))
        #expect(fetched == (try every.filter { try predicate.evaluate($0) }.map(\.title)))
        #expect(fetched == (try context.fetch(FetchDescriptor(predicate: foundationForm, sortBy: order)).map(\.title)))
        return fetched
    }

    @Test("implicit members typed by the other operand")
    func implicitMembers() throws {
        let context = try store()
        #expect(try titles(context, #Predicate { $0.status == .published }, sameAs: FoundationForm.status(is: .published)).count == 4)
        #expect(try titles(context, #Predicate { $0.status != .archived }, sameAs: FoundationForm.status(isNot: .archived)).count == 6)
        #expect(try titles(context, #Predicate { $0.priority == .high }, sameAs: FoundationForm.priority(is: .high)) == ["Alpha", "Épsilon"])
        #expect(try titles(context, #Predicate { ($0.priority ?? .low) == .low }, sameAs: FoundationForm.priorityOrLow(is: .low)).count == 4)
    }

    @Test("static members and enum cases written with their type, evaluated once")
    func staticMembers() throws {
        let context = try store()
        let now = Date.now
        #expect(try titles(context, #Predicate { $0.createdAt < Date.now }, sameAs: FoundationForm.createdBefore(now)).count == 8)
        let draft = PostStatus.draft
        #expect(try titles(context, #Predicate { $0.status == PostStatus.draft }, sameAs: FoundationForm.status(is: draft)) == ["beta", "Épsilon"])
        let largest = Int.max
        #expect(
            try titles(context, #Predicate { $0.views < Int.max && $0.views > 40 }, sameAs: FoundationForm.views(below: largest, above: 40)).count
                == 3)
        let day4 = Date(timeIntervalSinceReferenceDate: 4 * 86_400)
        #expect(
            try titles(
                context, #Predicate { $0.createdAt >= Date(timeIntervalSinceReferenceDate: 4 * 86_400) }, sameAs: FoundationForm.createdSince(day4)
            ).count == 5)
    }

    @Test("hasPrefix and hasSuffix, in SQL")
    func prefixAndSuffix() throws {
        let context = try store()
        #expect(try titles(context, #Predicate { $0.title.hasPrefix("Al") }, sameAs: FoundationForm.title(startsWith: "Al")) == ["Alpha"])
        let suffixed = #Predicate<Post> { $0.title.hasSuffix("ha") || $0.body.hasSuffix("'here'") }
        #expect(try titles(context, suffixed, sameAs: FoundationForm.title(isOneOf: "Alpha", "delta_x")) == ["Alpha", "delta_x"])
        #expect(try context.explain(FetchDescriptor(predicate: suffixed)).runsEntirelyInSQL)
        #expect(try context.fetchCount(FetchDescriptor(predicate: #Predicate<Post> { $0.body.hasSuffix("%_off") })) == 1)
    }

    @Test("nested closures, optional chaining, if-let and ternaries")
    func nestedForms() throws {
        let context = try store()
        let published = PostStatus.published
        #expect(
            try titles(
                context,
                #Predicate { post in post.remarks.contains { $0.likes > 2 } && post.status == .published },
                sameAs: FoundationForm.likedRemarks(status: published)
            ) == ["x' OR 1=1 --", "Alpha", "🙂 emoji"].sorted())
        #expect(
            try titles(
                context,
                #Predicate { $0.writer?.name.hasPrefix("A") == true },
                sameAs: FoundationForm.writerName(startsWith: "A")
            ).count == 3)
        #expect(
            try titles(
                context,
                #Predicate { if let score = $0.score { score > 4 } else { $0.status == .archived } },
                sameAs: FoundationForm.scoreAbove4OrArchived(.archived)
            ) == ["", "Gamma 100%", "Épsilon"])
        #expect(
            try titles(
                context,
                #Predicate { ($0.isPinned ? $0.views : -1) > 20 },
                sameAs: FoundationForm.pinnedViewsAbove20()
            ) == ["Gamma 100%", "x' OR 1=1 --"])
        #expect(
            try titles(
                context,
                #Predicate { $0.labels.allSatisfy { $0.name != "news" } && $0.tags.filter { $0.hasSuffix("ft") }.count == 1 },
                sameAs: FoundationForm.noNewsOneSwiftTag()
            ) == ["Gamma 100%", "delta_x"])
    }

    @Test("predicates and expressions composed with evaluate(_:), inlined into SQL")
    func composition() throws {
        let context = try store()
        let popular = #Predicate<Post> { $0.views > 20 }
        let pinnedAndPopular = #Predicate<Post> { $0.isPinned && popular.evaluate($0) }
        #expect(try titles(context, pinnedAndPopular, sameAs: FoundationForm.pinnedViewsAbove20()) == ["Gamma 100%", "x' OR 1=1 --"])
        #expect(try context.explain(FetchDescriptor(predicate: pinnedAndPopular)).runsEntirelyInSQL)
        let doubled = #Expression<Post, Int> { $0.views * 2 }
        let viaExpression = #Predicate<Post> { doubled.evaluate($0) > 80 }
        #expect(try titles(context, viaExpression, sameAs: FoundationForm.views(below: Int.max, above: 40)) == ["", "Gamma 100%", "delta_x"])
        #expect(try context.explain(FetchDescriptor(predicate: viaExpression)).runsEntirelyInSQL)
    }

    @Test("Foundation's #Predicate stays in charge for other types and several inputs compile")
    func otherTypes() throws {
        let plain = #Predicate<Reading> { $0.value > 2 }
        #expect(try plain.evaluate(Reading(value: 3)))
        #expect(try !plain.evaluate(Reading(value: 1)))
        let pair = #Predicate<Post, Post> { lhs, rhs in lhs.views == rhs.views && lhs.status == .draft }
        let post = Post(title: "a")
        #expect(try pair.evaluate(post, post))
    }

    @Test("#Expression over a model")
    func expressions() throws {
        let doubled = #Expression<Post, Int> { $0.views * 2 + Int.zero }
        let post = Post(title: "x")
        post.views = 21
        #expect(try doubled.evaluate(post) == 42)
    }
}
