import Foundation
import GRDB

/// A predicate node that can say what it is in SQL. Every `PredicateExpressions` node Foundation
/// produces conforms (under the same constraints as its `PredicateExpression` conformance), as do
/// OpenSwiftData's own string nodes.
protocol SQLTranslatable: PredicateExpression {
    /// The node's SQL form, translating its children through `translator`.
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment
}

extension SQLTranslatable {
    /// The node evaluated in Swift, for a node whose inputs are all constants. A failure (a
    /// forced unwrap of nil, an index out of range) leaves the whole predicate to memory, where it
    /// fails the same way it would in Foundation.
    func folded() throws -> SQLFragment {
        do {
            return .constant(try evaluate(PredicateBindings()))
        } catch {
            throw Untranslatable("evaluating \(type(of: self)) failed: \(error)")
        }
    }
}

/// A predicate as SQL over an entity's table aliased `t`: the joins it needs and its condition.
struct PredicateSQL {
    /// `LEFT JOIN …` clauses for the to-one relationships the condition reads through.
    var joins: String
    /// The `WHERE` condition, or nil when every row matches.
    var condition: SQLText?
    /// Whether the condition is the whole predicate. When false, it is the translatable part of
    /// a top-level conjunction (a superset of the matches) and the predicate must still be
    /// evaluated in memory on what it returns.
    var isComplete: Bool
    /// Why the predicate is not complete, for diagnostics and tests.
    var untranslated: [String]
}

/// Translates one predicate into SQL. One translator per fetch; not shared.
final class PredicateTranslator {
    /// A query level: the main query or one subquery, with the joins made inside it.
    private struct Scope {
        var joinAliases: [String: String] = [:]
        var joins: String = ""
    }

    private var scopes: [Scope] = [Scope()]
    private var bindings: [PredicateExpressions.VariableID: SQLFragment] = [:]
    private var nextAlias = 0
    private var codecs: [ObjectIdentifier: ValueCodec?] = [:]
    /// Column reads of joined rows (`p0."title"`), each with the key of the row it was read
    /// from: NULL whenever that row is, so an optional chain through the row needs no `CASE`.
    private(set) var rowColumns: [String: String] = [:]
    /// Column reads of `.externalStorage` properties: a large value is stored as a reference to
    /// its file, so equality with a constant compares with the constant's reference too.
    private(set) var externalColumns: Set<String> = []

    /// Translates `predicate` over `layout`'s table. A top-level conjunction is translated part
    /// by part: the parts SQL can say filter in SQL, the rest is left to memory.
    static func translate<T: PersistentModel>(_ predicate: Predicate<T>, layout: EntityLayout) -> PredicateSQL {
        let translator = PredicateTranslator()
        let root = RowReference(layout: layout, key: "t.\(raw: quoted(TableDescription.primaryKey))", alias: "t", scope: 0)
        translator.bindings[predicate.variable.key] = .row(root)
        var conditions: [SQLText] = []
        var untranslated: [String] = []
        for part in conjuncts(predicate.expression) {
            do {
                let fragment = try translator.translate(part)
                if case let .constant(value) = fragment, let bool = value as? Bool, bool { continue }
                conditions.append(try translator.condition(fragment))
            } catch {
                untranslated.append("\(error)")
            }
        }
        return PredicateSQL(
            joins: translator.scopes[0].joins,
            condition: conditions.isEmpty ? nil : SQLText.joined(conditions, separator: " AND "),
            isComplete: untranslated.isEmpty,
            untranslated: untranslated
        )
    }

    /// The operands of a top-level chain of `&&`, left to right.
    private static func conjuncts(_ expression: any PredicateExpression) -> [any PredicateExpression] {
        if let conjunction = expression as? any ConjunctionNode {
            return conjuncts(conjunction.leftOperand) + conjuncts(conjunction.rightOperand)
        }
        return [expression]
    }

    // MARK: Nodes

    /// The SQL form of a child node.
    func translate(_ node: Any) throws -> SQLFragment {
        guard let translatable = node as? any SQLTranslatable else {
            throw Untranslatable("\(type(of: node)) has no SQL form")
        }
        return try translatable.translate(self)
    }

    /// The value a predicate variable stands for.
    func binding(of variable: PredicateExpressions.VariableID) throws -> SQLFragment {
        guard let fragment = bindings[variable] else { throw Untranslatable("a variable is used outside its closure") }
        return fragment
    }

    /// Translates `body` with `variable` standing for `fragment`.
    func with<R>(_ variable: PredicateExpressions.VariableID, boundTo fragment: SQLFragment, _ body: () throws -> R) rethrows -> R {
        let previous = bindings[variable]
        bindings[variable] = fragment
        defer { bindings[variable] = previous }
        return try body()
    }

    // MARK: Operands

    /// A Boolean fragment as an SQL condition.
    func condition(_ fragment: SQLFragment) throws -> SQLText {
        switch fragment {
        case let .constant(value):
            guard let bool = value as? Bool else { throw Untranslatable("a condition is not a Bool") }
            return bool ? "1" : "0"
        case let .value(text, _):
            return text
        case .row, .rows, .range:
            throw Untranslatable("a condition is not a Bool")
        }
    }

    /// Records that `sql` reads an `.externalStorage` column.
    func noteExternalColumn(_ sql: String) { externalColumns.insert(sql) }

    /// A fragment as an SQL operand; a constant is bound in the form of `other`, the fragment it
    /// is compared or combined with.
    func operand(_ fragment: SQLFragment, against other: SQLFragment? = nil) throws -> SQLText {
        switch fragment {
        case let .constant(value):
            var form = ValueForm.stored
            switch other {
            case let .value(_, otherForm)?: form = otherForm
            case let .row(row)?: form = .identifier(entity: row.layout.name)
            default: break
            }
            return .bound(try encode(value, as: form))
        case let .value(text, _):
            return text
        case let .row(reference):
            return reference.key
        case .rows, .range:
            throw Untranslatable("a collection or range is used as a value")
        }
    }

    /// The form of a binary operation's result: JSON when either operand is a JSON element.
    func form(of fragments: SQLFragment...) -> ValueForm {
        for case .value(_, .jsonElement) in fragments { return .jsonElement }
        return .stored
    }

    /// A constant in the stored form of values of its type (or JSON's scalar form): models and
    /// identifiers as their primary key, enums as their raw value, dates as seconds, and so on.
    func encode(_ value: Any, as form: ValueForm) throws -> DatabaseValue {
        if let optional = value as? any _OptionalType {
            guard let wrapped = optional._wrappedValue else { return .null }
            return try encode(wrapped, as: form)
        }
        if let model = value as? any PersistentModel {
            return try encode(model.persistentModelID, as: form)
        }
        if let identifier = value as? PersistentIdentifier {
            // A model without a row (not saved yet), or of another entity, matches no row: a
            // primary key is never negative.
            if case let .identifier(entity) = form, entity != identifier.entityName { return (-1).databaseValue }
            return (identifier.rowID ?? -1).databaseValue
        }
        guard let codec = codec(for: type(of: value)) else {
            throw Untranslatable("values of type \(type(of: value)) have no stored form")
        }
        if case .jsonElement = form, !codec.isJSONScalar {
            throw Untranslatable("values of type \(type(of: value)) are not JSON scalars")
        }
        func open<V>(_ value: V) throws -> DatabaseValue {
            do {
                return try withUnsafePointer(to: value) { try codec.encodeSlot(UnsafeRawPointer($0)) }
            } catch {
                throw Untranslatable("\(value) cannot be stored: \(error)")
            }
        }
        return try open(value)
    }

    /// The codec of a Swift type, cached for this translation.
    func codec(for type: Any.Type) -> ValueCodec? {
        let key = ObjectIdentifier(type)
        if let cached = codecs[key] { return cached }
        let codec = ValueCodec.cached(for: type)
        codecs[key] = codec
        return codec
    }

    /// Throws unless SQL orders values of `type` in `form` as Swift does.
    func requireSortable(_ type: Any.Type, _ forms: SQLFragment...) throws {
        guard let codec = codec(for: type), codec.sortsLikeSwift else {
            throw Untranslatable("SQL does not order \(type) values as Swift does")
        }
        if forms.contains(where: { if case .value(_, .jsonElement) = $0 { true } else { false } }), !codec.isJSONScalar {
            throw Untranslatable("\(type) values in JSON do not compare as stored ones")
        }
    }

    /// Throws unless `type` is a number stored as one (so SQL arithmetic means Swift's).
    func requireNumeric(_ type: Any.Type) throws {
        // `Float` is stored as a `Double`, and arithmetic in double precision rounds differently.
        guard let codec = codec(for: type), codec.columnType == .integer || codec.columnType == .real,
            type != Bool.self, type != Bool?.self, type != Float.self, type != Float?.self, codec.sortsLikeSwift
        else { throw Untranslatable("\(type) is not a number stored as one") }
    }

    /// Throws unless equality of the stored forms of `type` is Swift's `==`: JSON-coded values
    /// (a set's order varies, a custom `==` is unknown) are compared in memory, except with nil;
    /// a JSON element compares only as a JSON scalar.
    func requireComparableForEquality(_ type: Any.Type, _ left: SQLFragment, _ right: SQLFragment) throws {
        for fragment in [left, right] {
            switch fragment {
            case .row, .value(_, .identifier): return  // compared by primary key
            default: continue
            }
        }
        guard let codec = codec(for: type) else { return }
        let isNil: (SQLFragment) -> Bool = { fragment in
            if case let .constant(value) = fragment { return (value as? any _OptionalType)?._wrappedValue == nil && value is any _OptionalType }
            return false
        }
        if codec.isJSONCoded, !isNil(left), !isNil(right) {
            throw Untranslatable("\(type) values are compared in memory (JSON-coded)")
        }
        for case .value(_, .jsonElement) in [left, right] where !codec.isJSONScalar {
            throw Untranslatable("\(type) values in JSON do not compare as stored ones")
        }
    }

    /// Whether values of `type` are stored as JSON arrays or objects SQL can iterate.
    func isJSONCollection(_ type: Any.Type) -> Bool {
        codec(for: type)?.isJSONCoded == true
            && (type is any Collection.Type || (type as? any _OptionalType.Type)?._wrappedType is any Collection.Type)
    }

    // MARK: Rows and joins

    /// The alias under which a row's columns are read, joining its table on first use.
    func alias(of row: RowReference) throws -> String {
        if let alias = row.alias { return alias }
        // A join condition carries no arguments (joins come before the WHERE clause's).
        guard row.key.arguments.isEmpty else { throw Untranslatable("a model reached through a computed value") }
        return join(table: row.layout.name, scope: row.scope) { alias in
            "\(alias).\(quoted(TableDescription.primaryKey)) = \(row.key.sql)"
        }
    }

    /// Left-joins `table` in `scope` (once per condition), returning its alias.
    func join(table: String, scope: Int, on condition: (String) -> String) -> String {
        let probe = condition("?")
        let key = "\(table) \(probe)"
        if let alias = scopes[scope].joinAliases[key] { return alias }
        let alias = newAlias("p")
        scopes[scope].joins += " LEFT JOIN \(quoted(table)) AS \(alias) ON \(condition(alias))"
        scopes[scope].joinAliases[key] = alias
        return alias
    }

    /// Notes that `sql` reads a column of the row whose key is `rowKey`.
    func noteRowColumn(_ sql: String, of rowKey: SQLText) {
        rowColumns[sql] = rowKey.sql
    }

    func newAlias(_ prefix: String) -> String {
        defer { nextAlias += 1 }
        return "\(prefix)\(nextAlias)"
    }

    // MARK: Subqueries

    /// A subquery over a collection, open while its body is translated.
    struct Subquery {
        let scope: Int
        let from: String
        var conditions: [SQLText]
        /// What the iteration variable stands for: the element row or JSON value.
        let element: SQLFragment
    }

    /// Opens a subquery over `source`; translate the body, then ``close(_:selecting:where:)``.
    func open(_ source: RowSource) throws -> Subquery {
        switch source {
        case let .relationship(owner, property, destination):
            guard let relationship = property.relationship else { throw Untranslatable("\(property.name) is not a relationship") }
            scopes.append(Scope())
            let scope = scopes.count - 1
            let alias = newAlias("s")
            let primaryKey = quoted(TableDescription.primaryKey)
            let element = SQLFragment.row(RowReference(layout: destination, key: "\(raw: alias).\(raw: primaryKey)", alias: alias, scope: scope))
            switch relationship.storage {
            case .inverseForeignKey:
                guard let inverse = relationship.inverseName else { throw Untranslatable("\(property.name) has no inverse column") }
                return Subquery(
                    scope: scope, from: "\(quoted(destination.name)) AS \(alias)",
                    conditions: ["\(raw: alias).\(raw: quoted(inverse)) = \(owner.key)"], element: element)
            case let .joinTable(table, isSource, _):
                let link = newAlias("l")
                let near = quoted(isSource ? JoinTableDescription.sourceColumn : JoinTableDescription.targetColumn)
                let far = quoted(isSource ? JoinTableDescription.targetColumn : JoinTableDescription.sourceColumn)
                return Subquery(
                    scope: scope,
                    from: "\(quoted(table.name)) AS \(link) JOIN \(quoted(destination.name)) AS \(alias) ON \(alias).\(primaryKey) = \(link).\(far)",
                    conditions: ["\(raw: link).\(raw: near) = \(owner.key)"], element: element)
            case .foreignKey:
                scopes.removeLast()
                throw Untranslatable("\(property.name) is not a to-many relationship")
            }
        case let .json(array):
            scopes.append(Scope())
            let alias = newAlias("e")
            // The array's own arguments are bound in the FROM clause, which comes first.
            return Subquery(
                scope: scopes.count - 1, from: "json_each(\(array.sql)) AS \(alias)",
                conditions: array.arguments.isEmpty ? [] : [SQLText(sql: "", arguments: array.arguments)],
                element: .value("\(raw: alias).value", .jsonElement))
        case let .filtered(base, variable, test):
            var subquery = try open(base)
            do {
                let condition = try with(variable, boundTo: subquery.element) { try self.condition(try translate(test)) }
                subquery.conditions.append(condition)
            } catch {
                scopes.removeLast()
                throw error
            }
            return subquery
        }
    }

    /// Closes a subquery: `SELECT <selection> FROM … WHERE <conditions> AND <extra>`.
    func close(_ subquery: Subquery, selecting selection: String, where extra: SQLText? = nil) -> SQLText {
        let joins = scopes[subquery.scope].joins
        scopes.removeLast()
        // An empty condition carries only arguments bound in the FROM clause (a JSON array).
        var prefixArguments: [DatabaseValue] = []
        var conditions: [SQLText] = []
        for condition in subquery.conditions {
            if condition.sql.isEmpty { prefixArguments += condition.arguments } else { conditions.append(condition) }
        }
        if let extra { conditions.append(extra) }
        var text = SQLText(sql: "SELECT \(selection) FROM \(subquery.from)\(joins)", arguments: prefixArguments)
        if !conditions.isEmpty { text = "\(text) WHERE \(SQLText.joined(conditions, separator: " AND "))" }
        return text
    }

    /// Runs `body` inside a subquery over `source`, discarding the subquery when `body` throws.
    func subquery(over source: RowSource, selecting selection: String, _ body: (SQLFragment) throws -> SQLText?) throws -> SQLText {
        let subquery = try open(source)
        let extra: SQLText?
        do {
            extra = try body(subquery.element)
        } catch {
            scopes.removeLast()
            throw error
        }
        return close(subquery, selecting: selection, where: extra)
    }

    /// The collection a fragment stands for: a relationship, a JSON array column, or a captured
    /// array (bound as JSON).
    func source(of fragment: SQLFragment, type: Any.Type) throws -> RowSource {
        switch fragment {
        case let .rows(source):
            return source
        case let .value(text, .stored):
            guard isJSONCollection(type) else { throw Untranslatable("\(type) is not stored as a JSON collection") }
            return .json(text)
        case let .constant(value):
            return .json(.bound(try JSONArgument.array(value, translator: self)))
        case .value(_, .jsonElement), .value(_, .identifier), .row, .range:
            throw Untranslatable("the value is not a collection SQL can iterate")
        }
    }
}

/// A conjunction node, seen without its generic parameters.
protocol ConjunctionNode {
    var leftOperand: any PredicateExpression { get }
    var rightOperand: any PredicateExpression { get }
}

extension PredicateExpressions.Conjunction: ConjunctionNode {
    var leftOperand: any PredicateExpression { lhs }
    var rightOperand: any PredicateExpression { rhs }
}
