import Foundation
import OpenSwiftData

/// Models for predicate tests: every stored shape a predicate can reach.
enum PostStatus: String, Codable, Sendable { case draft, published, archived }
enum PostPriority: Int, Codable, Sendable { case low = 0, normal = 1, high = 2 }

struct PostLocation: Codable, Equatable, Sendable {
    var city: String
    var latitude: Double
}

@Model final class Writer {
    var name: String
    var born: Date?
    @Relationship(deleteRule: .cascade, inverse: \Post.writer) var posts: [Post] = []

    init(name: String, born: Date? = nil) {
        self.name = name
        self.born = born
    }
}

@Model final class Post {
    var title: String
    var body: String = ""
    var views: Int = 0
    var rating: Double = 0
    var score: Int?
    var status: PostStatus = PostStatus.draft
    var priority: PostPriority?
    var createdAt: Date = Date(timeIntervalSinceReferenceDate: 0)
    var tags: [String] = []
    var scores: [Int] = []
    var counts: [String: Int] = [:]
    var uuid: UUID = UUID()
    var link: URL?
    var price: Decimal = 0
    var isPinned: Bool = false
    var location: PostLocation?
    var writer: Writer?
    @Relationship(deleteRule: .cascade, inverse: \Remark.post) var remarks: [Remark] = []
    var labels: [Label] = []
    @Relationship(deleteRule: .cascade, inverse: \PostNote.post) var notes: [PostNote]?

    #Index<Post>([\.views], [\.title], [\.createdAt])

    init(title: String) {
        self.title = title
    }
}

@Model final class Remark {
    var text: String
    var likes: Int
    var post: Post?

    init(text: String, likes: Int) {
        self.text = text
        self.likes = likes
    }
}

@Model final class Label {
    var name: String
    @Relationship(inverse: \Post.labels) var posts: [Post] = []

    init(name: String) {
        self.name = name
    }
}

/// The other side of an optional to-many relationship (`Post.notes: [PostNote]?`).
@Model final class PostNote {
    var text: String
    var post: Post?

    init(text: String) {
        self.text = text
    }
}

/// A protocol over model types, for predicates written generically.
protocol Titled: PersistentModel {
    var title: String { get }
}

extension Post: Titled {}
