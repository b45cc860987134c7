import Foundation
import GRDB

/// What one predicate node becomes in SQL.
indirect enum SQLFragment {
    /// A value that does not depend on the row: a captured constant, a literal, or a sub-expression
    /// made only of those, evaluated once in Swift when the query is built.
    case constant(Any)
    /// A scalar SQL expression.
    case value(SQLText, ValueForm)
    /// A model (a row of an entity's table), possibly none.
    case row(RowReference)
    /// A collection a subquery iterates: a to-many relationship or a JSON array.
    case rows(RowSource)
    /// The bounds of a range built in the predicate (`lower..<upper`, `lower...upper`).
    case range(lower: SQLFragment, upper: SQLFragment, closed: Bool)

    var isConstant: Bool {
        if case .constant = self { return true }
        return false
    }
}

/// How a scalar SQL expression holds its value, and so how a constant compared with it is bound.
enum ValueForm {
    /// A column's stored form (``ValueCodec``), or the same form computed (`length(…)`, `a + b`).
    case stored
    /// An element of a JSON array or object, as `json_each`/`json_extract` return it: JSON's own
    /// scalars (numbers, text, `true`/`false` as 1/0).
    case jsonElement
    /// A model's identifier (its primary key) in the entity named: an identifier of another
    /// entity is bound as a key no row has.
    case identifier(entity: String)
}

/// A row of an entity's table, reached from the query's root, a join or a subquery.
struct RowReference {
    /// The entity of the row.
    let layout: EntityLayout
    /// The row's primary key as SQL (`t."_pk"`, or the foreign-key column that points at it).
    let key: SQLText
    /// The alias under which the row's columns can be read, once its table is joined.
    var alias: String?
    /// The query scope (main query or subquery) the row belongs to; joins to reach its columns
    /// go there.
    let scope: Int
}

/// A collection that a subquery iterates.
indirect enum RowSource {
    /// The models of a to-many relationship of `owner`.
    case relationship(owner: RowReference, property: PropertyLayout, destination: EntityLayout)
    /// The elements of a JSON array (an array attribute, or a captured array bound as JSON).
    case json(SQLText)
    /// The elements of `base` for which `test` (over `variable`) holds.
    case filtered(base: RowSource, variable: PredicateExpressions.VariableID, test: any PredicateExpression)
}

/// Thrown while translating when a node has no SQL form; the fetch then evaluates the predicate
/// (or the untranslated part of a conjunction) in memory, with Foundation's own semantics.
struct Untranslatable: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
