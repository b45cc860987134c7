import Foundation

extension EntityLayout {
    /// The `ORDER BY` terms for sort descriptors, or nil when one of them names something that
    /// SQL cannot order like Swift (the fetch then sorts in memory, with the descriptors
    /// themselves). A key path may go through to-one relationships stored as foreign keys
    /// (`\Message.conversation?.lastMessageAt`): their tables are joined.
    func orderTerms<T>(for sortBy: [SortDescriptor<T>]) -> [OrderTerm]? {
        var terms: [OrderTerm] = []
        for descriptor in sortBy {
            guard let keyPath = descriptor.keyPath, var term = orderTerm(for: keyPath, ascending: descriptor.order == .forward) else { return nil }
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

    private func orderTerm(for keyPath: AnyKeyPath, ascending: Bool) -> OrderTerm? {
        if let index = propertyIndex(of: keyPath) {
            let property = properties[index]
            guard property.columnIndex != nil, property.relationship == nil, property.codec.sortsLikeSwift else { return nil }
            return OrderTerm(column: property.name, ascending: ascending)
        }
        // A key path through relationships: match its components with the properties'
        // accessors, hop by hop.
        let components = KeyPathComponents.of(keyPath)
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
