// This file imports Foundation only: `#Predicate` here is Foundation's macro, written the way
// Foundation requires (constants captured in locals), to compare with OpenSwiftData's forms.
import Foundation

enum FoundationForm {
    static func status(is status: PostStatus) -> Predicate<Post> { #Predicate { $0.status == status } }
    static func status(isNot status: PostStatus) -> Predicate<Post> { #Predicate { $0.status != status } }
    static func priority(is priority: PostPriority?) -> Predicate<Post> { #Predicate { $0.priority == priority } }
    static func priorityOrLow(is priority: PostPriority) -> Predicate<Post> { #Predicate { ($0.priority ?? priority) == priority } }
    static func createdBefore(_ date: Date) -> Predicate<Post> { #Predicate { $0.createdAt < date } }
    static func createdSince(_ date: Date) -> Predicate<Post> { #Predicate { $0.createdAt >= date } }
    static func views(below limit: Int, above floor: Int) -> Predicate<Post> { #Predicate { $0.views < limit && $0.views > floor } }
    static func title(startsWith prefix: String) -> Predicate<Post> { #Predicate { $0.title.starts(with: prefix) } }
    static func title(isOneOf first: String, _ second: String) -> Predicate<Post> { #Predicate { $0.title == first || $0.title == second } }
    static func likedRemarks(status: PostStatus) -> Predicate<Post> {
        #Predicate { post in post.remarks.contains { $0.likes > 2 } && post.status == status }
    }
    static func writerName(startsWith prefix: String) -> Predicate<Post> { #Predicate { $0.writer?.name.starts(with: prefix) == true } }
    static func scoreAbove4OrArchived(_ archived: PostStatus) -> Predicate<Post> {
        #Predicate { ($0.score.flatMap { $0 > 4 } ?? false) || ($0.score == nil && $0.status == archived) }
    }
    static func pinnedViewsAbove20() -> Predicate<Post> { #Predicate { ($0.isPinned ? $0.views : -1) > 20 } }
    static func noNewsOneSwiftTag() -> Predicate<Post> {
        #Predicate { $0.labels.allSatisfy { $0.name != "news" } && $0.tags.filter { $0 == "swift" }.count == 1 }
    }
}
