import Foundation
import OpenSwiftData
import Testing

/// One predicate, how it is expected to run, and how to build it over a fixture.
struct PredicateCase: Sendable, CustomTestStringConvertible {
    let name: String
    /// Whether the whole predicate must run in SQL.
    let inSQL: Bool
    let make: @Sendable (PredicateFixture) -> Predicate<Post>

    init(_ name: String, inSQL: Bool = true, _ make: @escaping @Sendable (PredicateFixture) -> Predicate<Post>) {
        self.name = name
        self.inSQL = inSQL
        self.make = make
    }

    var testDescription: String { name }
}

// Constants captured from locals, the form Foundation's #Predicate requires (OpenSwiftData's
// macro also accepts implicit and static members; see OwnPredicateTests).
let published = PostStatus.published
let archived = PostStatus.archived
let highPriority: PostPriority? = .high
let same = ComparisonResult.orderedSame
let ascending = ComparisonResult.orderedAscending
let cutoff = PredicateFixture.date(4)
let someViews = [0, 7, 42, 1000]
let manyViews = Array(0...200).map { $0 * 7 }
let exampleURL = URL(string: "https://b.example")
let tenCents = Decimal(string: "0.1") ?? 0
let paris: PostLocation? = PostLocation(city: "Paris", latitude: 0)

enum PredicateCases {
    static let comparisons: [PredicateCase] = [
        PredicateCase("Int ==") { _ in #Predicate<Post> { $0.views == 42 } },
        PredicateCase("Int !=") { _ in #Predicate<Post> { $0.views != 42 } },
        PredicateCase("Int range with && ") { _ in #Predicate<Post> { $0.views > 5 && $0.views <= 42 } },
        PredicateCase("Double <") { _ in #Predicate<Post> { $0.rating < 2.5 } },
        PredicateCase("optional Int == nil") { _ in #Predicate<Post> { $0.score == nil } },
        PredicateCase("optional Int != nil") { _ in #Predicate<Post> { $0.score != nil } },
        PredicateCase("optional Int == literal") { _ in #Predicate<Post> { $0.score == 7 } },
        PredicateCase("optional Int != literal (nil rows match)") { _ in #Predicate<Post> { $0.score != 7 } },
        PredicateCase("String enum == captured case") { _ in #Predicate<Post> { $0.status == published } },
        PredicateCase("String enum != captured case") { _ in #Predicate<Post> { $0.status != archived } },
        PredicateCase("optional Int enum == captured case") { _ in #Predicate<Post> { $0.priority == highPriority } },
        PredicateCase("optional enum == nil") { _ in #Predicate<Post> { $0.priority == nil } },
        PredicateCase("Date >") { _ in #Predicate<Post> { $0.createdAt > cutoff } },
        PredicateCase("UUID ==") { _ in
            let uuid = PredicateFixture.knownUUID
            return #Predicate<Post> { $0.uuid == uuid }
        },
        PredicateCase("URL ==") { _ in #Predicate<Post> { $0.link == exampleURL } },
        PredicateCase("Decimal ==") { _ in #Predicate<Post> { $0.price == tenCents } },
        PredicateCase("Codable struct == nil") { _ in #Predicate<Post> { $0.location == nil } },
        PredicateCase("Bool property") { _ in #Predicate<Post> { $0.isPinned } },
        PredicateCase("negated Bool") { _ in #Predicate<Post> { !$0.isPinned } },
        PredicateCase("Bool == false || comparison") { _ in #Predicate<Post> { $0.isPinned == false || $0.views > 40 } },
        PredicateCase("String <") { _ in #Predicate<Post> { $0.title < "delta" } },
        PredicateCase("closed range contains") { _ in #Predicate<Post> { (10...42).contains($0.views) } },
        PredicateCase("half-open range contains") { _ in #Predicate<Post> { (10..<42).contains($0.views) } },
        PredicateCase("range built from the row") { _ in #Predicate<Post> { ($0.views...100).contains(50) } },
        PredicateCase("captured array contains property") { _ in #Predicate<Post> { someViews.contains($0.views) } },
        PredicateCase("long captured array contains property") { _ in #Predicate<Post> { manyViews.contains($0.views) } },
        PredicateCase("identifier ==") { fixture in
            let id = fixture.alphaID
            return #Predicate<Post> { $0.persistentModelID == id }
        },
        PredicateCase("always true") { _ in #Predicate<Post> { _ in true } },
        PredicateCase("constant sub-expression folded") { _ in #Predicate<Post> { $0.views > 20 + 1 } },
    ]

    static let arithmetic: [PredicateCase] = [
        PredicateCase("multiply and add") { _ in #Predicate<Post> { $0.views * 2 + 1 > 41 } },
        PredicateCase("integer division") { _ in #Predicate<Post> { $0.views / 3 == 3 } },
        PredicateCase("remainder") { _ in #Predicate<Post> { $0.views % 7 == 0 } },
        PredicateCase("unary minus") { _ in #Predicate<Post> { -$0.views < -30 } },
        PredicateCase("float division") { _ in #Predicate<Post> { $0.rating / 2.0 > 1.0 } },
        PredicateCase("conditional") { _ in #Predicate<Post> { ($0.isPinned ? $0.views : 0) > 10 } },
        PredicateCase("nil-coalescing") { _ in #Predicate<Post> { ($0.score ?? -1) < 4 } },
    ]

    static let strings: [PredicateCase] = [
        PredicateCase("contains") { _ in #Predicate<Post> { $0.title.contains("a") } },
        PredicateCase("contains is case-sensitive") { _ in #Predicate<Post> { $0.body.contains("CAFE") } },
        PredicateCase("contains %") { _ in #Predicate<Post> { $0.title.contains("%") } },
        PredicateCase("contains _") { _ in #Predicate<Post> { $0.title.contains("_") } },
        PredicateCase("contains quote") { _ in #Predicate<Post> { $0.title.contains("' OR") } },
        PredicateCase("contains glob characters") { _ in #Predicate<Post> { $0.body.contains("*?[") } },
        PredicateCase("contains NUL") { _ in #Predicate<Post> { $0.title.contains("a\0b") } },
        PredicateCase("contains a very long string") { _ in
            let long = String(repeating: "ab%_", count: 25_000)
            return #Predicate<Post> { $0.body.contains(long) }
        },
        PredicateCase("starts(with:)") { _ in #Predicate<Post> { $0.title.starts(with: "Al") } },
        PredicateCase("starts(with:) is case-sensitive") { _ in #Predicate<Post> { $0.title.starts(with: "b") } },
        PredicateCase("starts(with:) glob characters") { _ in #Predicate<Post> { $0.body.starts(with: "*?[") } },
        PredicateCase("starts(with:) %") { _ in #Predicate<Post> { $0.title.starts(with: "%") } },
        PredicateCase("starts(with:) empty") { _ in #Predicate<Post> { $0.title.starts(with: "") } },
        PredicateCase("starts(with:) another column") { _ in #Predicate<Post> { $0.body.starts(with: $0.title) } },
        PredicateCase("== with SQL injection") { _ in #Predicate<Post> { $0.title == "x' OR 1=1 --" } },
        PredicateCase("isEmpty") { _ in #Predicate<Post> { $0.title.isEmpty } },
        PredicateCase("count of characters") { _ in #Predicate<Post> { $0.title.count == 7 } },
        PredicateCase("localizedStandardContains folds case and accents") { _ in #Predicate<Post> { $0.body.localizedStandardContains("cafe") } },
        PredicateCase("localizedStandardContains of a column (the empty title matches nothing)") { _ in
            #Predicate<Post> { "ALPHA BETA".localizedStandardContains($0.title) }
        },
        PredicateCase("contains the empty string") { _ in #Predicate<Post> { $0.title.contains("") } },
        PredicateCase("caseInsensitiveCompare") { _ in #Predicate<Post> { $0.title.caseInsensitiveCompare("BETA") == same } },
        PredicateCase("localizedCompare") { _ in #Predicate<Post> { $0.title.localizedCompare("delta") == ascending } },
    ]

    static let collections: [PredicateCase] = [
        PredicateCase("array attribute contains") { _ in #Predicate<Post> { $0.tags.contains("swift") } },
        PredicateCase("array attribute contains empty string") { _ in #Predicate<Post> { $0.tags.contains("") } },
        PredicateCase("negated array contains") { _ in #Predicate<Post> { !$0.tags.contains("swift") } },
        PredicateCase("array attribute isEmpty") { _ in #Predicate<Post> { $0.tags.isEmpty } },
        PredicateCase("array attribute count") { _ in #Predicate<Post> { $0.tags.count >= 2 } },
        PredicateCase("array attribute contains(where:)") { _ in #Predicate<Post> { $0.tags.contains { $0.starts(with: "s") } } },
        PredicateCase("array attribute allSatisfy") { _ in #Predicate<Post> { $0.scores.allSatisfy { $0 > 2 } } },
        PredicateCase("array attribute max") { _ in #Predicate<Post> { ($0.scores.max() ?? 0) > 5 } },
        PredicateCase("array attribute min") { _ in #Predicate<Post> { $0.scores.min() == 2 } },
        PredicateCase("array attribute filter count") { _ in #Predicate<Post> { $0.scores.filter { $0 > 3 }.count >= 2 } },
        PredicateCase("array attribute first") { _ in #Predicate<Post> { $0.scores.first == 1 } },
        PredicateCase("array attribute last") { _ in #Predicate<Post> { $0.tags.last == "swift" } },
        PredicateCase("array attribute subscript") { _ in #Predicate<Post> { $0.scores.count > 1 && $0.scores[1] > 4 } },
        PredicateCase("dictionary subscript") { _ in #Predicate<Post> { $0.counts["a"] == 1 } },
        PredicateCase("captured array contains(where:) over the row") { _ in #Predicate<Post> { post in someViews.contains { $0 == post.views + 7 } }
        },
    ]

    static let relationships: [PredicateCase] = [
        PredicateCase("to-one property through optional chain") { _ in #Predicate<Post> { $0.writer?.name == "Ada" } },
        PredicateCase("to-one == nil") { _ in #Predicate<Post> { $0.writer == nil } },
        PredicateCase("to-one != nil") { _ in #Predicate<Post> { $0.writer != nil } },
        PredicateCase("forced unwrap after a nil check") { _ in #Predicate<Post> { $0.writer != nil && $0.writer!.name == "Grace" } },
        PredicateCase("optional chain with ??") { _ in #Predicate<Post> { ($0.writer?.name ?? "nobody") == "nobody" } },
        PredicateCase("optional chain to an optional property == nil") { _ in #Predicate<Post> { $0.writer?.born == nil } },
        PredicateCase("to-one identifier") { fixture in
            let ada = fixture.adaID
            return #Predicate<Post> { $0.writer?.persistentModelID == ada }
        },
        PredicateCase("to-many contains(where:)") { _ in #Predicate<Post> { $0.remarks.contains { $0.likes > 5 } } },
        PredicateCase("to-many allSatisfy (true when empty)") { _ in #Predicate<Post> { $0.remarks.allSatisfy { $0.likes > 0 } } },
        PredicateCase("to-many count") { _ in #Predicate<Post> { $0.remarks.count == 0 } },
        PredicateCase("to-many isEmpty") { _ in #Predicate<Post> { !$0.remarks.isEmpty } },
        PredicateCase("to-many filter count") { _ in #Predicate<Post> { $0.remarks.filter { $0.likes >= 1 }.count >= 2 } },
        PredicateCase("many-to-many contains(where:)") { _ in #Predicate<Post> { $0.labels.contains { $0.name == "news" } } },
        PredicateCase("many-to-many contains by identifier") { fixture in
            let news = fixture.newsID
            return #Predicate<Post> { $0.labels.contains { $0.persistentModelID == news } }
        },
        PredicateCase("to-many of a to-one") { _ in #Predicate<Post> { ($0.writer.flatMap { $0.posts.count } ?? 0) > 2 } },
        PredicateCase("optional to-many contains(where:) ?? false") { _ in #Predicate<Post> { $0.notes?.contains { $0.text.contains("1") } ?? false }
        },
        PredicateCase("optional to-many count") { _ in #Predicate<Post> { ($0.notes?.count ?? 0) == 1 } },
        PredicateCase("negated optional equality keeps the nil rows") { _ in #Predicate<Post> { !($0.score == 7) } },
        PredicateCase("negated optional chain keeps the models without writer") { _ in #Predicate<Post> { !($0.writer?.name == "Ada") } },
        PredicateCase("negated captured membership of an optional") { _ in
            let scores: [Int?] = [3, 7]
            return #Predicate<Post> { !scores.contains($0.score) }
        },
        PredicateCase("identifier of another entity matches nothing") { fixture in
            let ada = fixture.adaID
            return #Predicate<Post> { $0.persistentModelID == ada }
        },
        PredicateCase("a guarded subscript does not fail the fetch") { _ in
            #Predicate<Post> { $0.scores.count < 2 || $0.scores[$0.scores.count - 2] > 4 }
        },
        PredicateCase("nested quantifiers") { _ in #Predicate<Post> { $0.labels.contains { $0.posts.contains { $0.views > 50 } } } },
        PredicateCase("to-many element's to-one") { _ in #Predicate<Post> { $0.remarks.contains { $0.post?.isPinned == true } } },
    ]

    static let partial: [PredicateCase] = [
        PredicateCase("Codable struct == value is compared in memory", inSQL: false) { _ in
            #Predicate<Post> { $0.views >= 0 && $0.location == paris }
        },
        PredicateCase("float division by a column is left to memory (Swift divides by zero)", inSQL: false) { _ in
            #Predicate<Post> { $0.views < 50 && $0.rating / ($0.rating - 1.0) > 0 }
        },
        PredicateCase("JSON struct field leaves its conjunct to memory", inSQL: false) { _ in
            #Predicate<Post> { $0.views > 5 && $0.location?.city == "Paris" }
        },
        PredicateCase("a computed property of a stored value leaves its conjunct to memory", inSQL: false) { _ in
            #Predicate<Post> { $0.views > 5 && $0.uuid.uuidString.contains("5F") }
        },
        PredicateCase("an enum's raw value stays in memory", inSQL: false) { _ in
            #Predicate<Post> { $0.tags.count > 0 && ($0.priority?.rawValue ?? -1) > 0 }
        },
    ]

    static let all = comparisons + arithmetic + strings + collections + relationships + partial
}
