import Foundation
import GRDB
import Testing

@testable import OpenSwiftData

/// Every predicate is run twice: through SQL by `fetch`, and by Foundation's `evaluate` on
/// every model. The results must be the same models in the same order, and the predicate must
/// have run in SQL (or, for the partial cases, not entirely).
@Suite("Predicates in SQL")
struct PredicateTranslationTests {
    static let models: [any PersistentModel.Type] = [Writer.self, Post.self, Remark.self, Label.self, PostNote.self]

    private func store() throws -> (ModelContainer, PredicateFixture) {
        let container = try ModelContainer(for: Schema(Self.models), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let fixture = try PredicateFixture.make(in: ModelContext(container))
        return (container, fixture)
    }

    @Test("SQL and Foundation agree", arguments: PredicateCases.all)
    func sqlMatchesEvaluation(_ testCase: PredicateCase) throws {
        let (container, fixture) = try store()
        let predicate = testCase.make(fixture)
        let context = ModelContext(container)
        let byTitle = [SortDescriptor(\Post.title), SortDescriptor(\Post.views)]
        let fetched = try context.fetch(FetchDescriptor(predicate: predicate, sortBy: byTitle))
        let every = try context.fetch(FetchDescriptor<Post>(sortBy: byTitle))
        let evaluated = try every.filter { try predicate.evaluate($0) }
        #expect(fetched.map(\.title) == evaluated.map(\.title))
        #expect(try context.fetchCount(FetchDescriptor(predicate: predicate)) == evaluated.count)
        #expect(try context.fetchIdentifiers(FetchDescriptor(predicate: predicate, sortBy: byTitle)) == evaluated.map(\.persistentModelID))

        let layout = try EntityLayout.of(Post.self)
        let translation = PredicateTranslator.translate(predicate, layout: layout)
        #expect(translation.isComplete == testCase.inSQL, "untranslated: \(translation.untranslated)")
        if !testCase.inSQL {
            // Partial cases still filter part of the predicate in SQL.
            #expect(translation.condition != nil, "untranslated: \(translation.untranslated)")
        }
    }

    @Test("the fixture makes every case meaningful: most predicates match some posts and not all")
    func casesDiscriminate() throws {
        let (container, fixture) = try store()
        let context = ModelContext(container)
        let every = try context.fetch(FetchDescriptor<Post>())
        var trivial: [String] = []
        for testCase in PredicateCases.all {
            let predicate = testCase.make(fixture)
            let matches = try every.filter { try predicate.evaluate($0) }.count
            if matches == 0 || matches == every.count { trivial.append(testCase.name) }
        }
        // The cases that match nothing or everything on purpose.
        #expect(
            Set(trivial) == [
                "always true", "contains NUL", "contains the empty string", "identifier of another entity matches nothing",
                "contains a very long string", "starts(with:) empty", "starts(with:) %",
            ])
    }

    @Test("bound values, never spliced: hostile strings are single arguments")
    func valuesAreBound() throws {
        let layout = try EntityLayout.of(Post.self)
        let hostile = "x' OR 1=1 --"
        let translation = PredicateTranslator.translate(#Predicate<Post> { $0.title == hostile || $0.body.contains("%_") }, layout: layout)
        let condition = try #require(translation.condition)
        #expect(!condition.sql.contains("OR 1=1"))
        #expect(!condition.sql.contains("%_"))
        #expect(condition.arguments.count == 2)
    }

    @Test("unsaved changes take part: inserted, changed and deleted models are judged by their current values")
    func pendingChanges() throws {
        let (container, _) = try store()
        let context = ModelContext(container)
        let popular = #Predicate<Post> { $0.views > 50 }
        #expect(try context.fetch(FetchDescriptor(predicate: popular)).map(\.title).sorted() == ["", "Gamma 100%"])

        let fresh = Post(title: "fresh")
        fresh.views = 500
        context.insert(fresh)
        let alpha = try #require(try context.fetch(FetchDescriptor(predicate: #Predicate<Post> { $0.title == "Alpha" })).first)
        alpha.views = 60
        let gamma = try #require(try context.fetch(FetchDescriptor(predicate: #Predicate<Post> { $0.title == "Gamma 100%" })).first)
        gamma.views = 1
        let empty = try #require(try context.fetch(FetchDescriptor(predicate: #Predicate<Post> { $0.title == "" })).first)
        context.delete(empty)

        var descriptor = FetchDescriptor(predicate: popular, sortBy: [SortDescriptor(\Post.views, order: .reverse)])
        #expect(try context.fetch(descriptor).map(\.title) == ["fresh", "Alpha"])
        #expect(try context.fetchCount(descriptor) == 2)
        descriptor.fetchLimit = 1
        #expect(try context.fetch(descriptor).map(\.title) == ["fresh"])

        descriptor.fetchLimit = nil
        descriptor.includePendingChanges = false
        // Without pending changes, rows are judged as stored (the registered instances come back).
        #expect(try context.fetch(descriptor).map(\.title).sorted() == ["", "Gamma 100%"])
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor(predicate: popular)).map(\.title).sorted() == ["Alpha", "fresh"])
    }

    @Test("limit and offset apply after the SQL filter and sort")
    func windowAfterFilter() throws {
        let (container, _) = try store()
        let context = ModelContext(container)
        var descriptor = FetchDescriptor(predicate: #Predicate<Post> { $0.views >= 10 }, sortBy: [SortDescriptor(\Post.views)])
        descriptor.fetchOffset = 1
        descriptor.fetchLimit = 2
        #expect(try context.fetch(descriptor).map(\.views) == [21, 33])
        #expect(try context.fetchCount(descriptor) == 2)
    }

    @Test("batch delete with a predicate deletes the matches and applies their delete rules")
    func batchDelete() throws {
        let (container, _) = try store()
        let context = ModelContext(container)
        try context.delete(model: Post.self, where: #Predicate { $0.writer?.name == "Ada" })
        try context.save()
        let check = ModelContext(container)
        #expect(try check.fetchCount(FetchDescriptor(predicate: #Predicate<Post> { $0.writer?.name == "Ada" })) == 0)
        #expect(try check.fetchCount(FetchDescriptor<Post>()) == 5)
        // Remarks cascade with their posts: of 8, Alpha's 2, delta_x's 3 and the emoji post's 1.
        #expect(try check.fetchCount(FetchDescriptor<Remark>()) == 2)
    }

    @Test("the planner uses the declared #Index for equality and for range + sort + limit")
    func queryPlanUsesIndex() throws {
        let (container, _) = try store()
        let layout = try EntityLayout.of(Post.self)
        func plan(_ predicate: Predicate<Post>, sort: [SortDescriptor<Post>] = [], limit: Int? = nil) throws -> String {
            let translation = PredicateTranslator.translate(predicate, layout: layout)
            let query = SelectBuilder.rows(layout.table, filter: translation, order: layout.orderTerms(for: sort) ?? [], limit: limit, offset: nil)
            return try container.store.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql, arguments: query.arguments).map { $0["detail"] as String? ?? "" }.joined(
                    separator: "\n")
            }
        }
        let equality = try plan(#Predicate { $0.views == 42 })
        #expect(equality.contains("USING INDEX osd_Post_index_views"), "\(equality)")
        let since = PredicateFixture.date(2)
        let range = try plan(#Predicate { $0.createdAt > since }, sort: [SortDescriptor(\.createdAt, order: .reverse)], limit: 20)
        #expect(range.contains("USING INDEX osd_Post_index_createdAt"), "\(range)")
        #expect(!range.contains("TEMP B-TREE"), "\(range)")
        let prefix = try plan(#Predicate { $0.title.starts(with: "Al") })
        #expect(prefix.contains("USING INDEX osd_Post_index_title"), "\(prefix)")
    }
}

@Suite("Enumerating in batches")
struct EnumerateTests {
    @Test("enumerate visits what fetch returns, in order, holding one batch at a time, and keeps changed models")
    func batches() throws {
        let container = try ModelContainer(
            for: Schema(PredicateTranslationTests.models), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let setup = ModelContext(container)
        for number in 0..<23 {
            let post = Post(title: "post \(number)")
            post.views = number % 7
            setup.insert(post)
        }
        try setup.save()

        let context = ModelContext(container)
        let descriptor = FetchDescriptor(
            predicate: #Predicate<Post> { $0.views > 1 }, sortBy: [SortDescriptor(\Post.views), SortDescriptor(\Post.title)])
        let expected = try ModelContext(container).fetch(descriptor).map(\.title)
        var visited: [String] = []
        var largestRegistered = 0
        try context.enumerate(descriptor, batchSize: 4) { post in
            visited.append(post.title)
            if post.views == 6 { post.title += " (read)" }
            largestRegistered = max(largestRegistered, context.identityMap["Post"]?.count ?? 0)
        }
        #expect(visited == expected)
        // One batch of 4, plus the changed models kept for the save.
        let changed = expected.count { $0.hasPrefix("post 6") || $0.hasPrefix("post 13") || $0.hasPrefix("post 20") }
        #expect(largestRegistered <= 4 + changed)
        try context.save()
        let saved = try ModelContext(container).fetch(FetchDescriptor(predicate: #Predicate<Post> { $0.title.contains("(read)") }))
        #expect(saved.count == 3)

        var windowed: [String] = []
        var window = descriptor
        window.fetchOffset = 2
        window.fetchLimit = 7
        try ModelContext(container).enumerate(window, batchSize: 3) { windowed.append($0.title) }
        #expect(windowed.count == 7)
        #expect(windowed == (try ModelContext(container).fetch(window).map(\.title)))
    }
}

@Suite("Partial loads")
struct PartialLoadTests {
    @Test("propertiesToFetch reads only the named columns; the others are read on first access, and a save writes only what changed")
    func partialFetch() throws {
        let container = try ModelContainer(
            for: Schema(PredicateTranslationTests.models), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        _ = try PredicateFixture.make(in: ModelContext(container))
        let counter = try StatementCounter(container)
        let context = ModelContext(container)
        var descriptor = FetchDescriptor(predicate: #Predicate<Post> { $0.views > 40 }, sortBy: [SortDescriptor(\Post.views)])
        descriptor.propertiesToFetch = [\.title, \.views]
        let posts = try context.fetch(descriptor)
        #expect(posts.map(\.title) == ["delta_x", "Gamma 100%", ""])
        let select = try #require(counter.selects.last)
        #expect(select.contains("\"title\"") && select.contains("\"views\"") && !select.contains("\"body\""), "\(select)")

        counter.reset()
        let gamma = posts[1]
        #expect(gamma.body == "CAFE culture")
        #expect(gamma.tags == ["swift"])
        #expect(gamma.writer?.name == "Grace")
        // One query filled every missing column of that model; the writer was loaded as usual.
        #expect(counter.selects.filter { $0.contains("FROM \"Post\"") }.count == 1)

        let delta = posts[0]
        delta.rating = 9.5
        try context.save()
        let check = try #require(try ModelContext(container).fetch(FetchDescriptor(predicate: #Predicate<Post> { $0.title == "delta_x" })).first)
        #expect(check.rating == 9.5)
        #expect(check.body == "It's quoted 'here'")
        #expect(check.tags == ["rust", "swift", "db"])
        #expect(delta.body == "It's quoted 'here'")
    }
}

@Suite("Batch deletes")
struct BatchDeleteTests {
    private func store() throws -> ModelContainer {
        let container = try ModelContainer(
            for: Schema(PredicateTranslationTests.models), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        _ = try PredicateFixture.make(in: ModelContext(container))
        return container
    }

    @Test("delete(model:where:) runs one DELETE at save, without loading the rows; registered models are judged by their current values")
    func oneStatement() throws {
        let container = try store()
        let counter = try StatementCounter(container)
        let context = ModelContext(container)
        // Alpha's remarks (likes 6 and 2) are registered; one of them changes so it no longer matches.
        let alpha = try #require(try context.fetch(FetchDescriptor(predicate: #Predicate<Post> { $0.title == "Alpha" })).first)
        let alphaRemarks = alpha.remarks.sorted { $0.likes < $1.likes }
        alphaRemarks[0].likes = 7
        counter.reset()

        try context.delete(model: Remark.self, where: #Predicate { $0.likes < 3 })
        #expect(counter.selects.isEmpty)
        #expect(context.hasChanges)
        let received = NotificationBox()
        let observer = NotificationCenter.default.addObserver(forName: ModelContext.didSave, object: context, queue: nil) { note in
            received.store(note.userInfo)
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try context.save()
        #expect(counter.all.contains { $0.hasPrefix("DELETE FROM \"Remark\" WHERE \"_pk\" IN (SELECT") })

        // Likes of the 8 remarks: 6, 2→7 (registered and changed: judged in memory, kept),
        // 0, 1, 1, 1 (not loaded: deleted by the statement), 9, 3.
        let remaining = try ModelContext(container).fetch(FetchDescriptor<Remark>(sortBy: [SortDescriptor(\.likes)])).map(\.likes)
        #expect(remaining == [3, 6, 7, 9])
        let deletedIDs = received.userInfo?[ModelContext.NotificationKey.deletedIdentifiers.rawValue] as? [PersistentIdentifier] ?? []
        #expect(deletedIDs.count == 4)
        #expect(alpha.remarks.map(\.likes).sorted() == [6, 7])
    }

    @Test("a batch delete is undone by rollback, and entities with cascade rules still apply them")
    func rollbackAndRules() throws {
        let container = try store()
        let context = ModelContext(container)
        try context.delete(model: Remark.self)
        context.rollback()
        #expect(!context.hasChanges)
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Remark>()) == 8)

        // Post cascades to its remarks: those deletions load the posts and apply the rule.
        try context.delete(model: Post.self, where: #Predicate { $0.isPinned })
        try context.save()
        let check = ModelContext(container)
        #expect(try check.fetchCount(FetchDescriptor<Post>()) == 5)
        #expect(try check.fetchCount(FetchDescriptor<Remark>()) == 8 - 2 - 1 - 1)
    }
}
