import Foundation
import GRDB

/// SQL functions every connection of a store registers, so that predicates keep Swift's and
/// Foundation's meaning in SQL where SQLite's built-ins differ.
enum SQLFunctions {
    /// `osd_fold(text)`: the text folded for `localizedStandardContains` (case and diacritics).
    static let fold = "osd_fold"
    /// `osd_compare(a, b, mode)`: a `ComparisonResult` raw value (-1, 0, 1) from Foundation.
    static let compare = "osd_compare"
    /// `osd_character_count(text)`: the number of `Character`s (grapheme clusters), as
    /// `String.count` says; SQLite's `length` counts code points.
    static let characterCount = "osd_character_count"

    /// The Foundation comparison `osd_compare` runs.
    enum ComparisonMode: Int {
        case caseInsensitive = 0
        case localized = 1
    }

    /// `text` folded as `osd_fold` folds it.
    static func searchFolded(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: .current)
    }

    /// The collation that orders strings as `comparator` does, or nil when SQL cannot (the sort
    /// then runs in memory with the descriptor itself). The lexical comparator is SQLite's
    /// binary order: Unicode scalar order, as Swift's `<` on normalized strings.
    static func collation(for comparator: String.StandardComparator) -> String? {
        if comparator == .lexical { return "BINARY" }
        #if canImport(ObjectiveC)
        // Foundation's own localized comparators, which exist on Apple's platforms only.
        if comparator == .localizedStandard { return StringCollation.localizedStandard }
        if comparator == .localized { return StringCollation.localized }
        #endif
        return nil
    }

    /// Registers the functions on a connection.
    static func register(in db: Database) {
        db.add(
            function: DatabaseFunction(fold, argumentCount: 1, pure: true) { values in
                guard let text = String.fromDatabaseValue(values[0]) else { return nil }
                return searchFolded(text)
            })
        db.add(
            function: DatabaseFunction(compare, argumentCount: 3, pure: true) { values in
                guard let lhs = String.fromDatabaseValue(values[0]), let rhs = String.fromDatabaseValue(values[1]),
                    let mode = Int.fromDatabaseValue(values[2]).flatMap(ComparisonMode.init(rawValue:))
                else { return nil }
                switch mode {
                case .caseInsensitive: return lhs.caseInsensitiveCompare(rhs).rawValue
                case .localized: return lhs.localizedCompare(rhs).rawValue
                }
            })
        // The orders of localized string sorts, with the functions the in-memory sort uses.
        db.add(collation: DatabaseCollation(StringCollation.localizedStandard) { StringCollation.compare($0, $1, standard: true) })
        db.add(collation: DatabaseCollation(StringCollation.localized) { StringCollation.compare($0, $1, standard: false) })
        db.add(
            function: DatabaseFunction(characterCount, argumentCount: 1, pure: true) { values in
                String.fromDatabaseValue(values[0])?.count
            })
    }
}
