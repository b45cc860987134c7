import Foundation
import GRDB

/// What a node of a history predicate is in SQL over the history table's columns.
enum HistorySQLTerm {
    /// A condition.
    case condition(String, [DatabaseValue])
    /// A column of the history table, and how a constant compared with it is bound.
    case column(String, bind: (Any) -> DatabaseValue?)
    /// A constant.
    case value(Any)
}

/// What translating a history predicate needs to know and finds out.
struct HistorySQLScope {
    /// The store whose token values count.
    let storeIdentifier: String
}

/// A predicate node that can become SQL over the history table.
protocol HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm?
}

/// Translates the predicate of a history descriptor: the SQL condition of its top-level
/// conjuncts that translate, and whether that is the whole predicate.
enum HistoryPredicateTranslator {
    static func translate(
        _ predicate: Predicate<DefaultHistoryTransaction>, scope: inout HistorySQLScope
    ) -> (condition: (sql: String, arguments: [DatabaseValue])?, isComplete: Bool) {
        var conjuncts: [any PredicateExpression<Bool>] = []
        collectConjuncts(predicate.expression, into: &conjuncts)
        var sql: [String] = []
        var arguments: [DatabaseValue] = []
        var complete = true
        for conjunct in conjuncts {
            guard let node = conjunct as? any HistorySQLConvertible,
                case let .condition(text, values)? = node.historySQL(&scope)
            else {
                complete = false
                continue
            }
            sql.append("(\(text))")
            arguments += values
        }
        return (sql.isEmpty ? nil : (sql.joined(separator: " AND "), arguments), complete)
    }

    private static func collectConjuncts(_ expression: any PredicateExpression<Bool>, into conjuncts: inout [any PredicateExpression<Bool>]) {
        if let conjunction = expression as? any HistoryConjunction {
            conjunction.splitConjuncts(into: &conjuncts)
        } else {
            conjuncts.append(expression)
        }
    }

    /// The history table's column for a key path of a transaction, with how values bind to it.
    static func column(for keyPath: AnyKeyPath, scope: inout HistorySQLScope) -> HistorySQLTerm? {
        let store = scope.storeIdentifier
        switch keyPath {
        case \DefaultHistoryTransaction.token:
            return .column("id") { value in
                (value as? DefaultHistoryToken)?.transaction(in: store).map { $0.databaseValue }
            }
        case \DefaultHistoryTransaction.transactionIdentifier, \DefaultHistoryTransaction.id:
            return .column("id") { value in (value as? Int64)?.databaseValue }
        case \DefaultHistoryTransaction.timestamp:
            return .column("timestamp") { value in (value as? Date)?.timeIntervalSince1970.databaseValue }
        case \DefaultHistoryTransaction.author:
            return .column("author") { value in
                if let author = value as? String { return author.databaseValue }
                if let author = value as? String?, author == nil { return .null }
                return nil
            }
        default:
            return nil
        }
    }

    /// A comparison of a column with a constant, either way round.
    static func compare(_ lhs: HistorySQLTerm?, _ op: String, _ rhs: HistorySQLTerm?, scope: inout HistorySQLScope) -> HistorySQLTerm? {
        let mirrored = ["<": ">", "<=": ">=", ">": "<", ">=": "<=", "IS": "IS", "IS NOT": "IS NOT"]
        switch (lhs, rhs) {
        case let (.column(name, bind)?, .value(value)?):
            guard let bound = bind(value) else { return nil }
            return .condition("\(quoted(name)) \(op) ?", [bound])
        case let (.value(value)?, .column(name, bind)?):
            guard let bound = bind(value), let flipped = mirrored[op] else { return nil }
            return .condition("\(quoted(name)) \(flipped) ?", [bound])
        default:
            return nil
        }
    }

    /// Every token constant anywhere in an expression tree (values, optionals, captured
    /// arrays), found through reflection so that parts SQL does not run are checked too.
    static func tokens(in expression: Any) -> [DefaultHistoryToken] {
        var found: [DefaultHistoryToken] = []
        func walk(_ value: Any, depth: Int) {
            if let token = value as? DefaultHistoryToken {
                found.append(token)
                return
            }
            guard depth < 64 else { return }
            for child in Mirror(reflecting: value).children { walk(child.value, depth: depth + 1) }
        }
        walk(expression, depth: 0)
        return found
    }
}

/// A conjunction, split into its operands for partial translation.
protocol HistoryConjunction {
    func splitConjuncts(into conjuncts: inout [any PredicateExpression<Bool>])
}

extension PredicateExpressions.Conjunction: HistoryConjunction {
    func splitConjuncts(into conjuncts: inout [any PredicateExpression<Bool>]) {
        for operand in [lhs as any PredicateExpression, rhs as any PredicateExpression] {
            if let nested = operand as? any HistoryConjunction {
                nested.splitConjuncts(into: &conjuncts)
            } else if let condition = operand as? any PredicateExpression<Bool> {
                conjuncts.append(condition)
            }
        }
    }
}

extension PredicateExpressions.KeyPath: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? {
        guard root is PredicateExpressions.Variable<DefaultHistoryTransaction> else { return nil }
        return HistoryPredicateTranslator.column(for: keyPath, scope: &scope)
    }
}

extension PredicateExpressions.Value: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? { .value(value) }
}

extension PredicateExpressions.NilLiteral: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? { .value(Output.none as Any) }
}

extension PredicateExpressions.Equal: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? {
        HistoryPredicateTranslator.compare(
            (lhs as? any HistorySQLConvertible)?.historySQL(&scope), "IS", (rhs as? any HistorySQLConvertible)?.historySQL(&scope), scope: &scope)
    }
}

extension PredicateExpressions.NotEqual: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? {
        HistoryPredicateTranslator.compare(
            (lhs as? any HistorySQLConvertible)?.historySQL(&scope), "IS NOT", (rhs as? any HistorySQLConvertible)?.historySQL(&scope), scope: &scope)
    }
}

extension PredicateExpressions.Comparison: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? {
        HistoryPredicateTranslator.compare(
            (lhs as? any HistorySQLConvertible)?.historySQL(&scope), op.sqlSymbol, (rhs as? any HistorySQLConvertible)?.historySQL(&scope),
            scope: &scope)
    }
}

extension PredicateExpressions.Conjunction: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? {
        HistoryPredicateTranslator.combine(lhs, "AND", rhs, scope: &scope)
    }
}

extension PredicateExpressions.Disjunction: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? {
        HistoryPredicateTranslator.combine(lhs, "OR", rhs, scope: &scope)
    }
}

extension PredicateExpressions.Negation: HistorySQLConvertible {
    func historySQL(_ scope: inout HistorySQLScope) -> HistorySQLTerm? {
        // The columns compared are never NULL, or compared with IS: conditions are two-valued.
        guard case let .condition(sql, arguments)? = (wrapped as? any HistorySQLConvertible)?.historySQL(&scope) else { return nil }
        return .condition("NOT (\(sql))", arguments)
    }
}

extension HistoryPredicateTranslator {
    static func combine(_ lhs: Any, _ op: String, _ rhs: Any, scope: inout HistorySQLScope) -> HistorySQLTerm? {
        guard case let .condition(left, leftArguments)? = (lhs as? any HistorySQLConvertible)?.historySQL(&scope),
            case let .condition(right, rightArguments)? = (rhs as? any HistorySQLConvertible)?.historySQL(&scope)
        else { return nil }
        return .condition("(\(left)) \(op) (\(right))", leftArguments + rightArguments)
    }
}
