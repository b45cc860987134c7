import Foundation
import Logging

/// How a fetch runs: the SQL it sends, and what is left to memory.
///
/// Every predicate runs exactly; SQL runs as much of it as SQL can say. When part of a
/// predicate, a sort or the context's unsaved changes must be handled in memory, the fetch logs
/// it at debug level (logger `OpenSwiftData`), and ``ModelContext/explain(_:)`` says so:
///
/// ```swift
/// let plan = try context.explain(FetchDescriptor<Trip>(predicate: #Predicate { $0.name.count > 3 }))
/// print(plan.runsEntirelyInSQL, plan.predicateInMemory)
/// ```
public struct FetchExplanation: Sendable, CustomStringConvertible {
    /// The `SELECT` statement the fetch runs (arguments are bound, never part of the text).
    public let sql: String
    /// The number of arguments bound to the statement.
    public let argumentCount: Int
    /// Why parts of the predicate are evaluated in memory, one entry per part; empty when the
    /// predicate (if any) runs entirely in SQL.
    public let predicateInMemory: [String]
    /// Whether the sort runs in memory (a sort key SQL does not order as Swift does).
    public let sortsInMemory: Bool
    /// Whether unsaved changes of the context take part (merged and judged in memory).
    public let mergesPendingChanges: Bool

    /// Whether SQL alone produces the result.
    public var runsEntirelyInSQL: Bool { predicateInMemory.isEmpty && !sortsInMemory && !mergesPendingChanges }

    /// A one-line summary.
    public var description: String {
        var parts = [sql]
        if !predicateInMemory.isEmpty { parts.append("predicate in memory: \(predicateInMemory.joined(separator: "; "))") }
        if sortsInMemory { parts.append("sorted in memory") }
        if mergesPendingChanges { parts.append("unsaved changes merged in memory") }
        return parts.joined(separator: " — ")
    }
}

extension ModelContext {
    /// How `descriptor` would be fetched now: its SQL and what runs in memory.
    public func explain<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> FetchExplanation {
        let layout = try container.requireLayout(for: T.self)
        let subclasses = container.descendants(of: layout)
        guard !subclasses.isEmpty else { return explanation(of: plan(descriptor, layout: layout), descriptor, layout: layout) }
        // A class with subclasses: one query over the union of their tables, or each table read
        // and the rest done in memory.
        let layouts = [layout] + subclasses
        let plans = layouts.map { plan(descriptor, layout: $0) }
        if plans.allSatisfy(\.runsInSQL) {
            let parts = zip(layouts, plans).map { layout, plan in (table: layout.table, filter: plan.filter, order: plan.order ?? []) }
            let query = SelectBuilder.unionKeys(parts, limit: descriptor.fetchLimit, offset: descriptor.fetchOffset)
            return FetchExplanation(
                sql: query.sql, argumentCount: query.sql.filter { $0 == "?" }.count, predicateInMemory: [], sortsInMemory: false,
                mergesPendingChanges: false)
        }
        let root = explanation(of: plans[0], descriptor, layout: layout)
        var untranslated: [String] = []
        for reason in plans.flatMap({ $0.filter?.untranslated ?? [] }) where !untranslated.contains(reason) { untranslated.append(reason) }
        return FetchExplanation(
            sql: root.sql, argumentCount: root.argumentCount, predicateInMemory: untranslated,
            sortsInMemory: !descriptor.sortBy.isEmpty, mergesPendingChanges: plans.contains { $0.pending }
        )
    }

    func explanation<T: PersistentModel>(of plan: FetchPlan, _ descriptor: FetchDescriptor<T>, layout: EntityLayout) -> FetchExplanation {
        let query =
            plan.runsInSQL
            ? SelectBuilder.rows(
                layout.table, filter: plan.filter, order: plan.order ?? [], limit: descriptor.fetchLimit, offset: descriptor.fetchOffset)
            : SelectBuilder.rows(layout.table, filter: plan.filter, order: plan.order ?? [], limit: nil, offset: nil)
        return FetchExplanation(
            sql: query.sql,
            argumentCount: query.sql.filter { $0 == "?" }.count,
            predicateInMemory: plan.filter?.untranslated ?? [],
            sortsInMemory: plan.order == nil,
            mergesPendingChanges: plan.pending
        )
    }

    /// Logs, at debug level, a fetch that is not entirely SQL.
    func logMemoryWork<T: PersistentModel>(_ plan: FetchPlan, _ descriptor: FetchDescriptor<T>, layout: EntityLayout) {
        guard !plan.runsInSQL, fetchLogger.logLevel <= .debug else { return }
        let explanation = explanation(of: plan, descriptor, layout: layout)
        fetchLogger.debug("fetch of \(layout.name) is not entirely SQL: \(explanation)")
    }
}

/// The library's logger for fetches.
let fetchLogger = Logger(label: "OpenSwiftData")
