import Foundation

/// A predicate over models, written as SwiftData code writes it.
///
/// Produces the same `Foundation.Predicate` as Foundation's `#Predicate`, from the same
/// `PredicateExpressions` nodes, so fetches, `evaluate` and composition see no difference. For
/// model inputs Swift picks this macro over Foundation's, which stays in charge for other types.
/// In addition to everything Foundation's macro accepts, it accepts:
///
/// - implicit members typed by the other operand: `$0.status == .pending`, `?? .none`;
/// - static members and enum cases written with their type: `Date.now`, `Status.done`,
///   `Int.max`, and other values computed without the inputs (`Date(timeIntervalSinceNow: -60)`),
///   each evaluated once when the predicate is created, like a captured constant;
/// - `hasPrefix(_:)` (as `starts(with:)`) and `hasSuffix(_:)` on strings;
/// - `localizedStandardContains(_:)`, `localizedCompare(_:)` and `caseInsensitiveCompare(_:)`
///   on Linux.
///
/// ```swift
/// let queue = #Predicate<Message> { $0.syncStatus == .pending || ($0.syncStatus == .failed && $0.retryCount < 3) }
/// ```
@freestanding(expression)
public macro Predicate<each Input: PersistentModel>(_ body: (repeat each Input) -> Bool) -> Foundation.Predicate<repeat each Input> =
    #externalMacro(module: "OpenSwiftDataMacros", type: "PredicateMacro")

/// An expression over models, written as SwiftData code writes it; see ``Predicate(_:)``.
@freestanding(expression)
public macro Expression<each Input: PersistentModel, Output>(
    _ body: (repeat each Input) -> Output
) -> Foundation.Expression<repeat each Input, Output> =
    #externalMacro(module: "OpenSwiftDataMacros", type: "PredicateExpressionMacro")

/// `Foundation.Predicate`, under a name the code ``Predicate(_:)`` generates can use where a
/// member or local named `Foundation` would shadow the module; not for direct use.
public typealias _$Predicate<each Input> = Foundation.Predicate<repeat each Input>

/// `Foundation.Expression`, for the code ``Expression(_:)`` generates; not for direct use.
public typealias _$Expression<each Input, Output> = Foundation.Expression<repeat each Input, Output>

/// `Foundation.PredicateExpressions`, for the code ``Predicate(_:)`` generates; not for direct
/// use.
public typealias _$PredicateExpressions = Foundation.PredicateExpressions
