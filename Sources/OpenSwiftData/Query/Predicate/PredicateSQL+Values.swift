import Foundation

// Variables, captured values and key paths: how a predicate reaches the row's columns, its
// to-one relationships (joins) and its to-many relationships (subqueries).

extension PredicateExpressions.Variable: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        try translator.binding(of: key)
    }
}

extension PredicateExpressions.Value: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        .constant(value)
    }
}

extension PredicateExpressions.KeyPath: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        switch try translator.translate(root) {
        case .constant:
            return try folded()
        case let .row(row):
            return try translator.member(keyPath, of: row)
        case let .value(text, form):
            return try translator.member(keyPath, ofValue: text, form: form, rootType: Root.Output.self)
        case let .rows(source):
            if let collection = Root.Output.self as? any CollectionKeyPaths.Type {
                if keyPath == collection._countKeyPath {
                    let count = try translator.subquery(over: source, selecting: "COUNT(*)") { _ in nil }
                    return .value("(\(count))", .stored)
                }
                if keyPath == collection._isEmptyKeyPath {
                    let any = try translator.subquery(over: source, selecting: "1") { _ in nil }
                    return .value("(NOT EXISTS (\(any)))", .stored)
                }
            }
            throw Untranslatable("\(keyPath) of a to-many relationship has no SQL form (only count and isEmpty)")
        case .range:
            throw Untranslatable("\(keyPath) of a range has no SQL form")
        }
    }
}

extension PredicateTranslator {
    /// A property of a model: a column, a to-one relationship (a row, joined when read
    /// through), a to-many relationship (a collection), or the identifier (the primary key).
    func member(_ keyPath: AnyKeyPath, of row: RowReference) throws -> SQLFragment {
        let layout = row.layout
        if keyPath == identifierKeyPath(of: layout.modelType) {
            return .value(row.key, .identifier(entity: layout.name))
        }
        guard let index = layout.propertyIndex(of: keyPath) else {
            throw Untranslatable("\(keyPath) is not a persisted property of \(layout.name)")
        }
        let property = layout.properties[index]
        if let relationship = property.relationship {
            let destination = try EntityLayout.of(relationship.destinationType)
            if EntityLayout.hasSubclassLayouts(destination) {
                // Its models sit in several tables (one per class): evaluated in memory.
                throw Untranslatable("\(property.name) may hold models of \(destination.name)'s subclasses")
            }
            if relationship.isToMany {
                return .rows(.relationship(owner: row, property: property, destination: destination))
            }
            switch relationship.storage {
            case .foreignKey:
                let alias = try alias(of: row)
                let key = "\(alias).\(quoted(property.name))"
                noteRowColumn(key, of: row.key)
                return .row(RowReference(layout: destination, key: SQLText(sql: key), alias: nil, scope: row.scope))
            case .inverseForeignKey:
                // The side of a one-to-one without the column: join the row that points back.
                guard let inverse = relationship.inverseName else { throw Untranslatable("\(property.name) has no inverse column") }
                let ownerKey = row.key.sql
                guard row.key.arguments.isEmpty else { throw Untranslatable("\(property.name) is reached through a computed row") }
                let alias = join(table: destination.name, scope: row.scope) { "\($0).\(quoted(inverse)) = \(ownerKey)" }
                let key = "\(alias).\(quoted(TableDescription.primaryKey))"
                noteRowColumn(key, of: row.key)
                return .row(RowReference(layout: destination, key: SQLText(sql: key), alias: alias, scope: row.scope))
            case .joinTable:
                throw Untranslatable("\(property.name) is a to-one relationship kept in a join table")
            }
        }
        guard property.columnIndex != nil else {
            throw Untranslatable("\(layout.name).\(property.name) is not stored in a column")
        }
        let sql = "\(try alias(of: row)).\(quoted(property.name))"
        noteRowColumn(sql, of: row.key)
        if property.isExternallyStored { noteExternalColumn(sql) }
        return .value(SQLText(sql: sql), .stored)
    }

    /// A property of a stored value: the length or emptiness of a string or JSON array, the
    /// first or last element of a JSON array.
    func member(_ keyPath: AnyKeyPath, ofValue text: SQLText, form: ValueForm, rootType: Any.Type) throws -> SQLFragment {
        if rootType == String.self {
            if keyPath == \String.isEmpty { return .value("(\(text) = '')", .stored) }
            // Characters (grapheme clusters), as Swift counts them.
            if keyPath == \String.count { return .value("osd_character_count(\(text))", .stored) }
        } else if case .stored = form, let collection = rootType as? any CollectionKeyPaths.Type, isJSONCollection(rootType) {
            if keyPath == collection._countKeyPath { return .value("json_array_length(\(text))", .stored) }
            if keyPath == collection._isEmptyKeyPath { return .value("(json_array_length(\(text)) = 0)", .stored) }
            if collection._isOrdered {
                if keyPath == collection._firstKeyPath { return .value("json_extract(\(text), '$[0]')", .jsonElement) }
                if keyPath == collection._lastKeyPath { return .value("json_extract(\(text), '$[#-1]')", .jsonElement) }
            }
        }
        throw Untranslatable("\(keyPath) has no SQL form")
    }

    private func identifierKeyPath(of type: any PersistentModel.Type) -> AnyKeyPath {
        func make<M: PersistentModel>(_ type: M.Type) -> AnyKeyPath { \M.persistentModelID }
        return make(type)
    }
}

/// The key paths of a collection's `count`, `isEmpty`, `first` and `last`, to recognise them in
/// a predicate whatever the element type.
protocol CollectionKeyPaths {
    static var _countKeyPath: AnyKeyPath { get }
    static var _isEmptyKeyPath: AnyKeyPath { get }
    static var _firstKeyPath: AnyKeyPath? { get }
    static var _lastKeyPath: AnyKeyPath? { get }
    /// Whether the order of elements is the stored order (arrays), so `first` means the same.
    static var _isOrdered: Bool { get }
}

extension Array: CollectionKeyPaths {
    static var _countKeyPath: AnyKeyPath { \Self.count }
    static var _isEmptyKeyPath: AnyKeyPath { \Self.isEmpty }
    static var _firstKeyPath: AnyKeyPath? { \Self.first }
    static var _lastKeyPath: AnyKeyPath? { \Self.last }
    static var _isOrdered: Bool { true }
}

extension Set: CollectionKeyPaths {
    static var _countKeyPath: AnyKeyPath { \Self.count }
    static var _isEmptyKeyPath: AnyKeyPath { \Self.isEmpty }
    static var _firstKeyPath: AnyKeyPath? { nil }
    static var _lastKeyPath: AnyKeyPath? { nil }
    static var _isOrdered: Bool { false }
}

extension PredicateExpressions.OptionalFlatMap: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let base = try translator.translate(wrapped)
        if case let .constant(value) = base {
            guard let unwrapped = (value as? any _OptionalType)?._wrappedValue else { return .constant(Optional<Result>.none as Any) }
            let result = try translator.with(variable.key, boundTo: .constant(unwrapped)) { try translator.translate(transform) }
            if result.isConstant { return try folded() }
            return result
        }
        let result = try translator.with(variable.key, boundTo: base) { try translator.translate(transform) }
        switch base {
        case .rows:
            // An optional to-many relationship of a stored model is never nil: it holds no models.
            return result
        case .range:
            throw Untranslatable("an optional range")
        case .constant, .value, .row:
            break
        }
        let test = try translator.operand(base)
        // A column of the unwrapped row is already NULL when the row is: no CASE needed.
        let propagatesNull: (SQLText) -> Bool = { text in
            if case let .row(row) = base { return translator.rowColumns[text.sql] == row.key.sql }
            return false
        }
        switch result {
        case .constant:
            return .value("(CASE WHEN \(test) IS NULL THEN NULL ELSE \(try translator.operand(result)) END)", .stored)
        case let .value(text, form):
            if propagatesNull(text) { return result }
            return .value("(CASE WHEN \(test) IS NULL THEN NULL ELSE \(text) END)", form)
        case let .row(row):
            if propagatesNull(row.key) { return result }
            return .row(
                RowReference(layout: row.layout, key: "(CASE WHEN \(test) IS NULL THEN NULL ELSE \(row.key) END)", alias: nil, scope: row.scope))
        case .rows, .range:
            throw Untranslatable("an optional chain to a collection")
        }
    }
}

extension PredicateExpressions.ForcedUnwrap: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        // In SQL, unwrapping nil yields NULL, so the row does not match (instead of a crash).
        let inner = try translator.translate(inner)
        if inner.isConstant { return try folded() }
        return inner
    }
}

extension PredicateExpressions.NilCoalesce: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        if case let .constant(value) = left {
            if (value as? any _OptionalType)?._wrappedValue == nil { return right }
            if right.isConstant { return try folded() }
            return left
        }
        let form = translator.form(of: left, right)
        let coalesced: SQLText = "COALESCE(\(try translator.operand(left, against: right)), \(try translator.operand(right, against: left)))"
        if case let .row(row) = left {
            return .row(RowReference(layout: row.layout, key: coalesced, alias: nil, scope: row.scope))
        }
        return .value(coalesced, form)
    }
}

extension PredicateExpressions.Conditional: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        let condition = try translator.translate(test)
        if case let .constant(value) = condition, let bool = value as? Bool {
            return try translator.translate(bool ? trueBranch : falseBranch)
        }
        let yes = try translator.translate(trueBranch)
        let no = try translator.translate(falseBranch)
        if case .row = yes { throw Untranslatable("a conditional choosing between models") }
        if case .row = no { throw Untranslatable("a conditional choosing between models") }
        let text: SQLText =
            "(CASE WHEN \(try translator.condition(condition)) THEN \(try translator.operand(yes, against: no)) ELSE \(try translator.operand(no, against: yes)) END)"
        return .value(text, translator.form(of: yes, no))
    }
}

extension PredicateExpressions.NilLiteral: SQLTranslatable {
    func translate(_ translator: PredicateTranslator) throws -> SQLFragment {
        .constant(Optional<Wrapped>.none as Any)
    }
}
