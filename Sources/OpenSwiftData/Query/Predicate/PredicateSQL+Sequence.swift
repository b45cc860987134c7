import Foundation
import GRDB

// Membership, quantifiers, filters and aggregates over to-many relationships (subqueries on the
// related table or join table), array attributes (`json_each` over the stored JSON) and captured
// arrays (`IN`, or `json_each` over one bound JSON argument).

extension PredicateExpressions.SequenceContains: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let elements = try translator.translate(sequence)
        let element = try translator.translate(element)
        if elements.isConstant && element.isConstant { return try folded() }
        if case let .constant(value) = elements {
            return try translator.membership(of: element, in: value)
        }
        let source = try translator.source(of: elements, type: LHS.Output.self)
        let exists = try translator.subquery(over: source, selecting: "1") { item in
            if case .value = item {
                guard translator.codec(for: LHS.Output.Element.self)?.isJSONScalar == true else {
                    throw Untranslatable("\(LHS.Output.Element.self) elements in JSON do not compare as stored ones")
                }
            }
            return try translator.equality(item, element, negated: false)
        }
        return .value("(EXISTS (\(exists)))", .stored)
    }
}

extension PredicateTranslator {
    /// `value IN (…)` for a captured collection: one placeholder per element for short lists,
    /// one JSON argument for long ones.
    func membership(of element: SQLFragment, in collection: Any) throws -> SQLFragment {
        let items = try JSONArgument.elements(collection)
        if items.isEmpty { return .constant(false) }
        let form: ValueForm
        switch element {
        case let .value(_, elementForm): form = elementForm
        case let .row(row): form = .identifier(entity: row.layout.name)
        default: form = .stored
        }
        let value = try operand(element)
        let encoded = try items.map { try encode($0, as: form) }
        var withoutNull = encoded.filter { !$0.isNull }
        // An `.externalStorage` column holds the reference of a value kept in a file: each such
        // `Data` value is matched by its reference too, as `==` does (see `equality`).
        if case let .value(text, .stored) = element, text.arguments.isEmpty, externalColumns.contains(text.sql) {
            for item in withoutNull {
                guard case let .blob(data) = item.storage, data.count > StoreAttachments.threshold || AttachmentReference.startsWithMagic(data)
                else { continue }
                withoutNull.append(AttachmentReference(of: data).encoded.databaseValue)
            }
        }
        var tests: [SQLText] = []
        if withoutNull.count < encoded.count { tests.append("(\(value) IS NULL)") }
        // `IN` is NULL for a NULL value; the `IS NOT NULL` keeps the test two-valued under `!`.
        if withoutNull.count <= 64 {
            if !withoutNull.isEmpty {
                let placeholders = Array(repeating: "?", count: withoutNull.count).joined(separator: ", ")
                tests.append("(\(value) IS NOT NULL AND \(value) IN (\(SQLText(sql: placeholders, arguments: withoutNull))))")
            }
        } else {
            let json = "[" + (try withoutNull.map(JSONArgument.scalar).joined(separator: ",")) + "]"
            tests.append("(\(value) IS NOT NULL AND \(value) IN (SELECT value FROM json_each(\(SQLText.bound(json.databaseValue)))))")
        }
        return .value(tests.count == 1 ? tests[0] : "(\(SQLText.joined(tests, separator: " OR ")))", .stored)
    }
}

extension PredicateExpressions.SequenceContainsWhere: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let elements = try translator.translate(sequence)
        let source = try translator.source(of: elements, type: LHS.Output.self)
        let exists = try translator.subquery(over: source, selecting: "1") { item in
            try translator.with(variable.key, boundTo: item) { try translator.condition(try translator.translate(test)) }
        }
        return .value("(EXISTS (\(exists)))", .stored)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let elements = try translator.translate(sequence)
        let source = try translator.source(of: elements, type: LHS.Output.self)
        let counterexample = try translator.subquery(over: source, selecting: "1") { item in
            let holds = try translator.with(variable.key, boundTo: item) { try translator.condition(try translator.translate(test)) }
            return "((\(holds)) IS NOT 1)"
        }
        return .value("(NOT EXISTS (\(counterexample)))", .stored)
    }
}

extension PredicateExpressions.Filter: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let elements = try translator.translate(sequence)
        let source = try translator.source(of: elements, type: LHS.Output.self)
        return .rows(.filtered(base: source, variable: variable.key, test: filter))
    }
}

extension PredicateExpressions.SequenceMinimum: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        try translator.aggregate("min", of: elements, node: self, collectionType: Elements.Output.self, elementType: Elements.Output.Element.self)
    }
}

extension PredicateExpressions.SequenceMaximum: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        try translator.aggregate("max", of: elements, node: self, collectionType: Elements.Output.self, elementType: Elements.Output.Element.self)
    }
}

extension PredicateTranslator {
    /// `(SELECT min(value) FROM json_each(…))`: NULL for an empty array, as Swift's is nil.
    func aggregate(
        _ function: String, of elements: any PredicateExpression, node: some SQLTranslatable, collectionType: Any.Type, elementType: Any.Type
    ) throws -> SQLFragment {
        let collection = try translate(elements)
        if collection.isConstant { return try node.folded() }
        guard case .value = collection else { throw Untranslatable("\(function) over models") }
        guard let codec = codec(for: elementType), codec.sortsLikeSwift, codec.isJSONScalar, elementType != Bool.self else {
            throw Untranslatable("SQL does not order \(elementType) values in JSON as Swift does")
        }
        let value = try subquery(over: try source(of: collection, type: collectionType), selecting: "\(function)(value)") { _ in nil }
        return .value("(\(value))", .jsonElement)
    }
}

extension PredicateExpressions.CollectionIndexSubscript: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let collection = try translator.translate(wrapped)
        let index = try translator.translate(index)
        if collection.isConstant && index.isConstant { return try folded() }
        guard case .value(_, .stored) = collection, Wrapped.Output.self is any CollectionKeyPaths.Type,
            translator.isJSONCollection(Wrapped.Output.self),
            Index.Output.self == Int.self
        else { throw Untranslatable("subscript of \(Wrapped.Output.self) has no SQL form") }
        // Out of range, Swift traps; SQL yields NULL and the row does not match.
        // A negative index is an error for json_extract: guard it (Swift traps; no match here).
        let position = try translator.operand(index)
        let path: SQLText = "'$[' || \(position) || ']'"
        return .value("(CASE WHEN \(position) >= 0 THEN json_extract(\(try translator.operand(collection)), \(path)) END)", .jsonElement)
    }
}

extension PredicateExpressions.DictionaryKeySubscript: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let dictionary = try translator.translate(wrapped)
        let key = try translator.translate(key)
        if dictionary.isConstant && key.isConstant { return try folded() }
        guard case .value(_, .stored) = dictionary, Key.Output.self == String.self else {
            throw Untranslatable("subscript of \(Wrapped.Output.self) has no SQL form")
        }
        let lookup: SQLText = "(SELECT value FROM json_each(\(try translator.operand(dictionary))) WHERE key = \(try translator.operand(key)))"
        return .value(lookup, .jsonElement)
    }
}
