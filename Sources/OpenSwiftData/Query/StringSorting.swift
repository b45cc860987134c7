import Foundation

// String sorting as Foundation does it on Apple's platforms, where `SortDescriptor(\.name)` on a
// `String` key path compares with `String.StandardComparator.localizedStandard` (Finder order:
// case-insensitive, numbers by value, accents after the plain letter) and `.localized` and
// `.lexical` can be asked for. Foundation on Linux has only `.lexical` and sorts strings
// binary by default (`Banana` before `apple`, `file10` before `file9`), so this file supplies
// the rest there. A fetch runs these sorts in SQL, through collations every store connection
// registers with the same comparison functions (``SQLFunctions``), so both orders agree.
//
// "Localized" means what `String.localizedStandardCompare(_:)` and `localizedCompare(_:)` do in
// Foundation on the platform: on Linux, ICU's collation for `Locale.current` (from `LANG` /
// `LC_ALL`; `en_001` when none is set), with the options Foundation documents.

/// The value a localized ``SortDescriptor`` compares: a string ordered by a localized
/// comparison instead of `String`'s own `<` (used by the sort descriptors OpenSwiftData builds
/// for `String` key paths; not for direct use).
public struct _$LocalizedSortKey: Comparable, Sendable {
    /// The string compared.
    public let string: String
    /// Whether the comparison is `localizedStandardCompare` (else `localizedCompare`).
    public let isStandard: Bool

    /// Two keys are equal when the comparison finds no difference.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        StringCollation.compare(lhs.string, rhs.string, standard: lhs.isStandard) == .orderedSame
    }

    /// Orders two keys by the comparison.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        StringCollation.compare(lhs.string, rhs.string, standard: lhs.isStandard) == .orderedAscending
    }
}

extension String {
    /// The string as Foundation's `.localizedStandard` comparator orders it (a component of the
    /// key paths of OpenSwiftData's localized sort descriptors; not for direct use).
    public var _$localizedStandardSortKey: _$LocalizedSortKey { _$LocalizedSortKey(string: self, isStandard: true) }
    /// The string as Foundation's `.localized` comparator orders it (a component of the key
    /// paths of OpenSwiftData's localized sort descriptors; not for direct use).
    public var _$localizedSortKey: _$LocalizedSortKey { _$LocalizedSortKey(string: self, isStandard: false) }
}

/// The comparisons behind localized string sorting, in memory and in SQL alike.
enum StringCollation {
    /// `lhs` against `rhs` by `localizedStandardCompare(_:)` or `localizedCompare(_:)`, on
    /// their canonical (NFC) forms.
    ///
    /// Canonically equivalent strings (`"é"` precomposed and `"e\u{301}"`) are equal in Swift,
    /// but Foundation's localized comparisons on Linux order them apart, and not transitively
    /// once other characters follow (`café952`, `cafe\u{301}955`, …): two correct sorting
    /// algorithms, SQLite's and Swift's, then disagree. Comparing NFC forms keeps the order
    /// total and consistent with `==`. ASCII text is already NFC and is compared as it is.
    static func compare(_ lhs: String, _ rhs: String, standard: Bool) -> ComparisonResult {
        let lhs = canonical(lhs)
        let rhs = canonical(rhs)
        return standard ? lhs.localizedStandardCompare(rhs) : lhs.localizedCompare(rhs)
    }

    /// The NFC form of `text` (itself when it is ASCII).
    private static func canonical(_ text: String) -> String {
        text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCanonicalMapping
    }

    /// The SQLite collation that orders as `localizedStandardCompare(_:)`.
    static let localizedStandard = "osd_localized_standard"
    /// The SQLite collation that orders as `localizedCompare(_:)`.
    static let localized = "osd_localized"

    /// The last component of each localized sort descriptor's key path, with its collation and
    /// whether it follows an optional string.
    // nonisolated(unsafe): a constant array of key-path literals, which are immutable objects
    // without captures; nothing ever writes it.
    nonisolated(unsafe) static let suffixes: [(String, AnyKeyPath, Bool)] = [
        (localizedStandard, \String._$localizedStandardSortKey, false),
        (localized, \String._$localizedSortKey, false),
        (localizedStandard, \String?.?._$localizedStandardSortKey, true),
        (localized, \String?.?._$localizedSortKey, true),
    ]

    /// The accessor identity of each suffix's last component (``KeyPathComponents``), with its
    /// collation: how a key path that reaches a string through relationships is recognised.
    static let suffixComponents: [(Substring, String)] = suffixes.compactMap { collation, keyPath, _ in
        KeyPathComponents.of(keyPath).last.map { ($0, collation) }
    }
}

#if !canImport(ObjectiveC)
/// The localized string comparators that Foundation offers on Apple's platforms as
/// `String.StandardComparator.localizedStandard` and `.localized`, and Foundation on Linux
/// lacks: what `SortDescriptor(\.name, comparator: .localizedStandard)` takes on Linux.
/// (`.lexical` is Foundation's own `String.StandardComparator.lexical`.)
///
/// ```swift
/// let names = try context.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name, comparator: .localized)]))
/// let sorted = ["file10", "File9"].sorted(using: LocalizedStringComparator.localizedStandard)  // ["File9", "file10"]
/// ```
public struct LocalizedStringComparator: SortComparator, Hashable, Codable, Sendable {
    /// Compares strings as the Finder does: `String.localizedStandardCompare(_:)`, a
    /// case-insensitive, numeric comparison in the current locale.
    public static let localizedStandard = LocalizedStringComparator(isStandard: true)
    /// Compares strings with `String.localizedCompare(_:)`, in the current locale.
    public static let localized = LocalizedStringComparator(isStandard: false)

    /// Whether this is ``localizedStandard``.
    let isStandard: Bool
    /// The order of the comparison.
    public var order: SortOrder

    private init(isStandard: Bool, order: SortOrder = .forward) {
        self.isStandard = isStandard
        self.order = order
    }

    /// A copy of `base` with the order `order`.
    public init(_ base: LocalizedStringComparator, order: SortOrder = .forward) {
        self.init(isStandard: base.isStandard, order: order)
    }

    /// Compares two strings in this comparator's order.
    public func compare(_ lhs: String, _ rhs: String) -> ComparisonResult {
        let result = StringCollation.compare(lhs, rhs, standard: isStandard)
        guard order == .reverse else { return result }
        switch result {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }
}

extension SortDescriptor {
    /// `keyPath` typed as the `Sendable` key path Foundation's initializers take. Sound for the
    /// key paths this extension makes: one appended from a `Sendable` key path and a literal
    /// without captures holds nothing but theirs, and key paths are immutable.
    private static func sendable<Value>(_ keyPath: KeyPath<Compared, Value>) -> any KeyPath<Compared, Value> & Sendable {
        unsafeBitCast(keyPath, to: (any KeyPath<Compared, Value> & Sendable).self)
    }

    /// Sorts by a string property with `comparator`, as Foundation's initializer of the same
    /// shape does on Apple's platforms.
    ///
    /// - Parameters:
    ///   - keyPath: The string property to compare.
    ///   - comparator: ``LocalizedStringComparator/localizedStandard`` or
    ///     ``LocalizedStringComparator/localized``.
    ///   - order: The order of the sort (default: `comparator`'s own order).
    public init(_ keyPath: any KeyPath<Compared, String> & Sendable, comparator: LocalizedStringComparator, order: SortOrder? = nil) {
        let suffix = comparator.isStandard ? \String._$localizedStandardSortKey : \String._$localizedSortKey
        self.init(Self.sendable((keyPath as KeyPath<Compared, String>).appending(path: suffix)), order: order ?? comparator.order)
    }

    /// Sorts by an optional string property with `comparator` (nil first in forward order), as
    /// Foundation's initializer of the same shape does on Apple's platforms.
    ///
    /// - Parameters:
    ///   - keyPath: The optional string property to compare.
    ///   - comparator: ``LocalizedStringComparator/localizedStandard`` or
    ///     ``LocalizedStringComparator/localized``.
    ///   - order: The order of the sort (default: `comparator`'s own order).
    public init(_ keyPath: any KeyPath<Compared, String?> & Sendable, comparator: LocalizedStringComparator, order: SortOrder? = nil) {
        let suffix = comparator.isStandard ? \String?.?._$localizedStandardSortKey : \String?.?._$localizedSortKey
        self.init(Self.sendable((keyPath as KeyPath<Compared, String?>).appending(path: suffix)), order: order ?? comparator.order)
    }

    /// Sorts by a string property as Foundation does by default on Apple's platforms: with the
    /// `.localizedStandard` comparator (Foundation on Linux would compare binary).
    ///
    /// - Parameters:
    ///   - keyPath: The string property to compare.
    ///   - order: The order of the sort.
    public init(_ keyPath: any KeyPath<Compared, String> & Sendable, order: SortOrder = .forward) {
        self.init(keyPath, comparator: .localizedStandard, order: order)
    }

    /// Sorts by an optional string property as Foundation does by default on Apple's platforms:
    /// with the `.localizedStandard` comparator, nil first in forward order.
    ///
    /// - Parameters:
    ///   - keyPath: The optional string property to compare.
    ///   - order: The order of the sort.
    public init(_ keyPath: any KeyPath<Compared, String?> & Sendable, order: SortOrder = .forward) {
        self.init(keyPath, comparator: .localizedStandard, order: order)
    }
}
#endif
