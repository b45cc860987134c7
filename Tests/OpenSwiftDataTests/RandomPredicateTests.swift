import Foundation
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

/// Random model graphs and random predicate trees over them: the SQL fetch must return exactly
/// the models Foundation's `evaluate` accepts, in the order of the sort descriptors.
@Suite("Random predicates against Foundation")
struct RandomPredicateTests {
    typealias Variable = PredicateExpressions.Variable<Post>
    typealias BoolExpression = any StandardPredicateExpression<Bool>

    static let titles = ["Alpha", "alpha", "beta", "Beta", "", "a%b", "x_y", "é", "It's", "*[?]", "al"]
    static let words = ["a", "al", "b", "%", "_", "'", "é", "", "*", "Al"]
    static let tagPool = ["swift", "db", "", "s", "x%"]
    static let names = ["Ada", "Grace", "Linus"]

    /// Fills a store with `count` random posts and their writers, remarks and labels.
    static func populate(_ context: ModelContext, count: Int, using random: inout SeededGenerator) throws {
        let writers = names.map {
            Writer(name: $0, born: Bool.random(using: &random) ? PredicateFixture.date(Double(Int.random(in: 0...5, using: &random))) : nil)
        }
        let labels = [Label(name: "news"), Label(name: "tech")]
        for writer in writers { context.insert(writer) }
        for label in labels { context.insert(label) }
        for _ in 0..<count {
            let post = Post(title: titles.randomElement(using: &random) ?? "")
            context.insert(post)
            post.body = titles.randomElement(using: &random) ?? ""
            post.views = Int.random(in: -3...12, using: &random)
            post.rating = Double(Int.random(in: 0...10, using: &random)) / 2
            post.score = Bool.random(using: &random) ? Int.random(in: 0...6, using: &random) : nil
            post.status = [PostStatus.draft, .published, .archived].randomElement(using: &random) ?? .draft
            post.priority = [nil, PostPriority.low, .normal, .high].randomElement(using: &random) ?? nil
            post.createdAt = PredicateFixture.date(Double(Int.random(in: 0...6, using: &random)))
            post.tags = (0..<Int.random(in: 0...3, using: &random)).compactMap { _ in tagPool.randomElement(using: &random) }
            post.scores = (0..<Int.random(in: 0...3, using: &random)).map { _ in Int.random(in: 0...6, using: &random) }
            post.isPinned = Bool.random(using: &random)
            post.writer = Bool.random(using: &random) ? writers.randomElement(using: &random) : nil
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                post.remarks.append(Remark(text: "r", likes: Int.random(in: 0...5, using: &random)))
            }
            post.labels = labels.filter { _ in Bool.random(using: &random) }
        }
        try context.save()
    }

    // MARK: Random predicate trees

    static func tree(depth: Int, _ variable: Variable, using random: inout SeededGenerator) -> BoolExpression {
        guard depth > 0, Int.random(in: 0..<3, using: &random) > 0 else { return leaf(variable, using: &random) }
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return and(tree(depth: depth - 1, variable, using: &random), tree(depth: depth - 1, variable, using: &random))
        case 1: return or(tree(depth: depth - 1, variable, using: &random), tree(depth: depth - 1, variable, using: &random))
        case 2: return not(tree(depth: depth - 1, variable, using: &random))
        default:
            return conditional(
                tree(depth: depth - 1, variable, using: &random), tree(depth: depth - 1, variable, using: &random),
                tree(depth: depth - 1, variable, using: &random))
        }
    }

    static func leaf(_ v: Variable, using random: inout SeededGenerator) -> BoolExpression {
        let operators: [PredicateExpressions.ComparisonOperator] = [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual]
        let op = operators.randomElement(using: &random) ?? .lessThan
        let number = Int.random(in: -2...8, using: &random)
        let word = words.randomElement(using: &random) ?? ""
        switch Int.random(in: 0..<20, using: &random) {
        case 0: return compare(key(v, \.views), value(number), op)
        case 1: return equal(key(v, \.views), value(number), negated: Bool.random(using: &random))
        case 2: return compare(key(v, \.rating), value(Double(number) / 2), op)
        case 3: return equal(key(v, \.score), value(Bool.random(using: &random) ? Int?.none : number), negated: Bool.random(using: &random))
        case 4:
            return equal(key(v, \.status), value([PostStatus.draft, .published, .archived][abs(number) % 3]), negated: Bool.random(using: &random))
        case 5:
            return equal(key(v, \.priority), value([nil, PostPriority.low, .normal, .high][abs(number) % 4]), negated: Bool.random(using: &random))
        case 6: return compare(key(v, \.createdAt), value(PredicateFixture.date(Double(number))), op)
        case 7: return compare(key(v, \.title), value(word), op)
        case 8: return PredicateExpressions.build_contains(key(v, \.title), value(word))
        case 9: return PredicateExpressions.build_starts(key(v, \.body), with: value(word))
        case 10: return key(v, \.isPinned)
        case 11: return PredicateExpressions.build_contains(key(v, \.tags), value(tagPool[abs(number) % tagPool.count]))
        case 12:
            return PredicateExpressions.build_contains(key(v, \.remarks)) { remark in
                PredicateExpressions.build_Comparison(
                    lhs: PredicateExpressions.build_KeyPath(root: remark, keyPath: \.likes), rhs: value(number), op: op)
            }
        case 13:
            return PredicateExpressions.build_allSatisfy(key(v, \.scores)) { score in
                PredicateExpressions.build_Comparison(lhs: score, rhs: value(number), op: op)
            }
        case 14:
            let name = PredicateExpressions.build_flatMap(key(v, \.writer)) { writer in
                PredicateExpressions.build_KeyPath(root: writer, keyPath: \.name)
            }
            return equal(
                name, value(Bool.random(using: &random) ? String?.none : names[abs(number) % names.count]), negated: Bool.random(using: &random))
        case 15:
            let doubled = PredicateExpressions.build_Arithmetic(lhs: key(v, \.views), rhs: value(2), op: .multiply)
            return compare(PredicateExpressions.build_Arithmetic(lhs: doubled, rhs: value(number), op: .add), value(number * 2), op)
        case 16:
            return compare(PredicateExpressions.build_NilCoalesce(lhs: key(v, \.score), rhs: value(number)), value(3), op)
        case 17:
            let count = PredicateExpressions.build_KeyPath(root: key(v, \.labels), keyPath: \.count)
            return compare(count, value(abs(number) % 3), op)
        case 18:
            let born = PredicateExpressions.build_flatMap(key(v, \.writer)) { writer in
                PredicateExpressions.build_KeyPath(root: writer, keyPath: \.born)
            }
            return equal(born, value(Date?.none), negated: Bool.random(using: &random))
        default:
            return PredicateExpressions.build_contains(value([number, number + 3, 7]), key(v, \.views))
        }
    }

    static func key<T>(_ v: Variable, _ path: KeyPath<Post, T> & Sendable) -> PredicateExpressions.KeyPath<Variable, T> {
        PredicateExpressions.build_KeyPath(root: v, keyPath: path)
    }

    static func value<T: Codable & Sendable>(_ value: T) -> PredicateExpressions.Value<T> {
        PredicateExpressions.build_Arg(value)
    }

    static func compare<L: StandardPredicateExpression, R: StandardPredicateExpression>(
        _ lhs: L, _ rhs: R, _ op: PredicateExpressions.ComparisonOperator
    ) -> BoolExpression
    where L.Output == R.Output, L.Output: Comparable {
        PredicateExpressions.build_Comparison(lhs: lhs, rhs: rhs, op: op)
    }

    static func equal<L: StandardPredicateExpression, R: StandardPredicateExpression>(_ lhs: L, _ rhs: R, negated: Bool) -> BoolExpression
    where L.Output == R.Output, L.Output: Equatable {
        negated ? PredicateExpressions.build_NotEqual(lhs: lhs, rhs: rhs) : PredicateExpressions.build_Equal(lhs: lhs, rhs: rhs)
    }

    static func and(_ lhs: BoolExpression, _ rhs: BoolExpression) -> BoolExpression {
        func open<L: StandardPredicateExpression<Bool>, R: StandardPredicateExpression<Bool>>(_ lhs: L, _ rhs: R) -> BoolExpression {
            PredicateExpressions.build_Conjunction(lhs: lhs, rhs: rhs)
        }
        return open(lhs, rhs)
    }

    static func or(_ lhs: BoolExpression, _ rhs: BoolExpression) -> BoolExpression {
        func open<L: StandardPredicateExpression<Bool>, R: StandardPredicateExpression<Bool>>(_ lhs: L, _ rhs: R) -> BoolExpression {
            PredicateExpressions.build_Disjunction(lhs: lhs, rhs: rhs)
        }
        return open(lhs, rhs)
    }

    static func not(_ inner: BoolExpression) -> BoolExpression {
        func open<E: StandardPredicateExpression<Bool>>(_ inner: E) -> BoolExpression { PredicateExpressions.build_Negation(inner) }
        return open(inner)
    }

    static func conditional(_ test: BoolExpression, _ yes: BoolExpression, _ no: BoolExpression) -> BoolExpression {
        func open<T: StandardPredicateExpression<Bool>, A: StandardPredicateExpression<Bool>, B: StandardPredicateExpression<Bool>>(
            _ test: T, _ yes: A, _ no: B
        ) -> BoolExpression {
            PredicateExpressions.build_Conditional(test, yes, no)
        }
        return open(test, yes, no)
    }

    // MARK: The property

    @Test("SQL fetches equal Foundation's evaluate for random predicates on random graphs", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomPredicates(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let container = try ModelContainer(
            for: Schema(PredicateTranslationTests.models), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        try Self.populate(ModelContext(container), count: 40, using: &random)
        let context = ModelContext(container)
        let order = [SortDescriptor(\Post.views, order: .reverse), SortDescriptor(\Post.title), SortDescriptor(\Post.rating)]
        let every = try context.fetch(FetchDescriptor<Post>(sortBy: order))
        let layout = try EntityLayout.of(Post.self)
        var untranslated = 0
        for number in 0..<250 {
            let depth = Int.random(in: 0...3, using: &random)
            let predicate = Predicate<Post> { variable in Self.tree(depth: depth, variable, using: &random) }
            let expected = try every.filter { try predicate.evaluate($0) }.map(\.persistentModelID)
            let fetched = try context.fetch(FetchDescriptor(predicate: predicate, sortBy: order)).map(\.persistentModelID)
            let translation = PredicateTranslator.translate(predicate, layout: layout)
            #expect(
                fetched == expected,
                "seed \(seed), predicate \(number): \(predicate)\nSQL: \(translation.condition?.sql ?? "-") \(translation.condition?.arguments ?? [])"
            )
            if !translation.isComplete { untranslated += 1 }
        }
        // Every node these trees use has an SQL form.
        #expect(untranslated == 0)
    }
}
