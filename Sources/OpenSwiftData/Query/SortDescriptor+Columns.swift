import Foundation

extension EntityLayout {
    /// The `ORDER BY` terms for sort descriptors, or nil when one of them names something that
    /// SQL cannot order like Swift (the fetch then sorts in memory, with the descriptors
    /// themselves). A key path may go through to-one relationships stored as foreign keys
    /// (`\Message.conversation?.lastMessageAt`): their tables are joined.
    func orderTerms<T>(for sortBy: [SortDescriptor<T>]) -> [OrderTerm]? {
        var terms: [OrderTerm] = []
        for descriptor in sortBy {
            guard let keyPath = descriptor.keyPath else { return nil }
            // A localized string sort (``LocalizedStringComparator``, the default for strings):
            // the string property's column, ordered by the collation that compares as it does.
            if let localized = localizedOrderTerm(for: keyPath, ascending: descriptor.order == .forward) {
                guard let term = localized else { return nil }
                terms.append(term)
                continue
            }
            guard var term = orderTerm(for: keyPath, ascending: descriptor.order == .forward) else { return nil }
            if let comparator = descriptor.stringComparator {
                // SQLite's own order is the lexical one; the localized ones run Foundation's
                // comparison through a collation the store registers.
                guard let collation = SQLFunctions.collation(for: comparator) else { return nil }
                term.collation = collation
            }
            terms.append(term)
        }
        return terms
    }

    /// The `ORDER BY` term of a localized string sort, whose key path is a string property's
    /// followed by a sort-key component (``StringCollation/suffixes``): nil when `keyPath` is no
    /// such sort, `.some(nil)` when it is one SQL cannot order (the fetch then sorts in memory).
    private func localizedOrderTerm(for keyPath: AnyKeyPath, ascending: Bool) -> OrderTerm?? {
        // A property of this entity: its key path with the suffix appended equals the sort's.
        for (collation, suffix, optional) in StringCollation.suffixes {
            let stringType: Any.Type = optional ? String?.self : String.self
            for property in properties where property.relationship == nil && property.codec.slot.type == stringType {
                guard property.keyPath.appending(path: suffix) == keyPath else { continue }
                guard property.columnIndex != nil else { return .some(nil) }
                var term = OrderTerm(column: property.name, ascending: ascending)
                term.collation = collation
                return .some(term)
            }
        }
        // A property inherited from a model superclass, named as the superclass names it
        // (`\Vehicle.name` in a fetch of the hierarchy): the same column in this table.
        if let superLayout, let inherited = superLayout.localizedOrderTerm(for: keyPath, ascending: ascending) {
            return inherited
        }
        // Through to-one relationships: the last component is the sort key's accessor.
        let components = KeyPathComponents.of(keyPath)
        guard let last = components.last, let collation = StringCollation.suffixComponents.first(where: { $0.0 == last })?.1 else { return nil }
        guard components.count > 2, var term = orderTerm(components: Array(components.dropLast()), ascending: ascending),
            term.hops.isEmpty == false
        else { return .some(nil) }
        term.collation = collation
        return .some(term)
    }

    private func orderTerm(for keyPath: AnyKeyPath, ascending: Bool) -> OrderTerm? {
        if let index = propertyIndex(of: keyPath) {
            let property = properties[index]
            guard property.columnIndex != nil, property.relationship == nil, property.codec.sortsLikeSwift else { return nil }
            return OrderTerm(column: property.name, ascending: ascending)
        }
        // A key path through relationships: match its components with the properties'
        // accessors, hop by hop.
        return orderTerm(components: KeyPathComponents.of(keyPath), ascending: ascending)
    }

    /// The term of a key path through relationships, given as its components' accessor identities.
    private func orderTerm(components: [Substring], ascending: Bool) -> OrderTerm? {
        guard components.count > 1 else { return nil }
        var layout = self
        var hops: [OrderTerm.Hop] = []
        for component in components.dropLast() {
            guard let property = layout.properties.first(where: { KeyPathComponents.of($0.keyPath) == [component] }),
                let relationship = property.relationship, !relationship.isToMany, relationship.storage == .foreignKey,
                let destination = try? EntityLayout.of(relationship.destinationType)
            else { return nil }
            hops.append(OrderTerm.Hop(foreignKey: property.name, table: destination.name))
            layout = destination
        }
        guard let last = components.last,
            let property = layout.properties.first(where: { KeyPathComponents.of($0.keyPath) == [last] }),
            property.columnIndex != nil, property.relationship == nil, property.codec.sortsLikeSwift
        else { return nil }
        return OrderTerm(hops: hops, column: property.name, ascending: ascending)
    }
}

/// The accessor identities of a key path's components, read from its debug description
/// (`\Message.<computed 0x… (Optional<Conversation>)>?.<computed 0x… (Date)>?`). A model's
/// properties are computed, and each accessor has its own address, so two components are the
/// same property exactly when their addresses are equal. When the description has another form,
/// no components are found and the sort runs in memory.
enum KeyPathComponents {
    static func of(_ keyPath: AnyKeyPath) -> [Substring] {
        let text = keyPath.debugDescription
        var result: [Substring] = []
        var rest = text[...]
        while let start = rest.range(of: "<computed 0x") {
            let tail = rest[start.upperBound...]
            let end = tail.firstIndex { !$0.isHexDigit } ?? tail.endIndex
            result.append(tail[..<end])
            rest = tail[end...]
        }
        return result
    }
}
