import Foundation
import OpenSwiftData

/// A store of posts covering the shapes predicates meet: nil and non-nil optionals, empty and
/// non-empty strings and collections, accents, emoji, SQL and pattern metacharacters, models
/// with and without related models.
struct PredicateFixture: Sendable {
    let adaID: PersistentIdentifier
    let newsID: PersistentIdentifier
    let alphaID: PersistentIdentifier
    static let knownUUID = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F") ?? UUID()
    static let day: TimeInterval = 86_400

    static func date(_ days: Double) -> Date { Date(timeIntervalSinceReferenceDate: days * day) }

    /// Fills `context` and saves.
    static func make(in context: ModelContext) throws -> PredicateFixture {
        let ada = Writer(name: "Ada", born: date(0))
        let grace = Writer(name: "Grace")
        let linus = Writer(name: "Linus", born: date(100))
        let news = Label(name: "news")
        let tech = Label(name: "tech")
        for model in [ada, grace, linus] { context.insert(model) }
        for label in [news, tech] { context.insert(label) }

        struct Row {
            var title: String, body: String, views: Int, rating: Double, score: Int?
            var status: PostStatus, priority: PostPriority?, day: Double
            var tags: [String], scores: [Int], counts: [String: Int], link: String?, price: String
            var pinned: Bool, city: String?, writer: Writer?, likes: [Int], labels: [Label]
        }
        let rows: [Row] = [
            Row(
                title: "Alpha", body: "Un café au lait", views: 10, rating: 4.5, score: 3, status: .published, priority: .high, day: 1,
                tags: ["swift", "server"], scores: [1, 5, 9], counts: ["a": 1], link: "https://a.example/1", price: "9.99",
                pinned: true, city: "Paris", writer: ada, likes: [6, 2], labels: [news, tech]),
            Row(
                title: "beta", body: "Nothing here", views: 0, rating: 1.0, score: nil, status: .draft, priority: nil, day: 2,
                tags: [], scores: [], counts: [:], link: nil, price: "0", pinned: false, city: nil, writer: nil, likes: [], labels: []),
            Row(
                title: "Gamma 100%", body: "CAFE culture", views: 55, rating: 2.5, score: 7, status: .archived, priority: .low, day: 3,
                tags: ["swift"], scores: [3, 4], counts: ["a": 2, "b": 1], link: nil, price: "19.5", pinned: true, city: "Berlin",
                writer: grace, likes: [0], labels: [tech]),
            Row(
                title: "delta_x", body: "It's quoted 'here'", views: 42, rating: 3.0, score: 0, status: .published, priority: .normal, day: 4,
                tags: ["rust", "swift", "db"], scores: [7], counts: ["b": 3], link: "https://b.example", price: "1", pinned: false,
                city: nil, writer: ada, likes: [1, 1, 1], labels: []),
            Row(
                title: "Épsilon", body: "naïve résumé", views: 7, rating: 0.5, score: 12, status: .draft, priority: .high, day: 5,
                tags: ["db"], scores: [2, 2], counts: [:], link: nil, price: "100", pinned: false, city: "Rome", writer: grace,
                likes: [], labels: [news]),
            Row(
                title: "x' OR 1=1 --", body: "*?[glob] 50%_off", views: 33, rating: 5.0, score: nil, status: .published, priority: .low, day: 6,
                tags: ["sql"], scores: [10], counts: ["a": 1], link: nil, price: "3.3", pinned: true, city: nil, writer: linus,
                likes: [9], labels: [news]),
            Row(
                title: "", body: "", views: 100, rating: 2.0, score: 5, status: .archived, priority: nil, day: 7,
                tags: ["", "x"], scores: [0], counts: [:], link: nil, price: "0.1", pinned: false, city: nil, writer: nil, likes: [], labels: []),
            Row(
                title: "🙂 emoji", body: "e\u{301}clair", views: 21, rating: 4.0, score: 1, status: .published, priority: .normal, day: 8,
                tags: ["swift", "sql"], scores: [6, 8], counts: ["c": 4], link: "https://c.example", price: "2.5", pinned: false,
                city: "Paris", writer: ada, likes: [3], labels: [tech, news]),
        ]
        var alpha: Post?
        for (index, row) in rows.enumerated() {
            let post = Post(title: row.title)
            context.insert(post)
            post.body = row.body
            post.views = row.views
            post.rating = row.rating
            post.score = row.score
            post.status = row.status
            post.priority = row.priority
            post.createdAt = date(row.day)
            post.tags = row.tags
            post.scores = row.scores
            post.counts = row.counts
            post.link = row.link.flatMap(URL.init(string:))
            post.price = Decimal(string: row.price) ?? 0
            post.isPinned = row.pinned
            post.location = row.city.map { PostLocation(city: $0, latitude: Double(index)) }
            post.uuid = index == 3 ? knownUUID : UUID()
            post.writer = row.writer
            for (number, likes) in row.likes.enumerated() { post.remarks.append(Remark(text: "\(row.title) #\(number)", likes: likes)) }
            post.labels = row.labels
            // Every third post has notes; the others keep nil.
            if index % 3 == 0 { post.notes = (0...index % 2).map { PostNote(text: "note \($0) of \(row.title)") } }
            if index == 0 { alpha = post }
        }
        try context.save()
        guard let alpha else { throw CocoaError(.coderInvalidValue) }
        return PredicateFixture(adaID: ada.persistentModelID, newsID: news.persistentModelID, alphaID: alpha.persistentModelID)
    }
}
