import GRDB

extension EntityLayout {
    /// The store table of this entity: one column per stored property, named after it.
    var table: TableDescription {
        TableDescription(
            name: name,
            columns: columns.map { property in
                ColumnDescription(
                    name: property.name, type: property.codec.columnType.rawValue, isNullable: property.codec.isOptional,
                    references: property.relationship?.destinationName,
                    originalName: property.declaredOriginalName,
                    defaultValue: property.defaultValue.flatMap { storedDefault($0, codec: property.codec) },
                    isExternal: property.isExternallyStored
                )
            },
            uniqueConstraints: uniquenessConstraints.map { $0.map { properties[$0].name } },
            indexes: indices.map { $0.map { properties[$0].name } },
            originalName: modelType.originalEntityName.flatMap { $0.isEmpty || $0 == name ? nil : $0 }
        )
    }
}

extension PropertyLayout {
    /// The name the property had in an earlier version, as declared with `originalName:` (nil
    /// when none, or empty, is declared).
    var declaredOriginalName: String? {
        (attribute?.declaredOriginalName ?? relationship?.description.declaredOriginalName).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The name the property syncs under: its declared original name, else its name. A
    /// property renamed with `originalName:` keeps its name on the wire, so devices on the old
    /// and the new version of an app keep exchanging it, and saves queued before the update
    /// still name a field the server knows.
    var syncName: String { declaredOriginalName ?? name }

}

/// A declared default in its stored form, or nil when it cannot be encoded.
private func storedDefault(_ value: Any, codec: ValueCodec) -> DatabaseValue? {
    func open<V>(_ value: V) -> DatabaseValue? {
        guard ObjectIdentifier(V.self) == ObjectIdentifier(codec.slot.type) else { return nil }
        return withUnsafePointer(to: value) { try? codec.encodeSlot(UnsafeRawPointer($0)) }
    }
    return open(value)
}

extension Schema {
    /// The store layout of every entity of the schema.
    func storeLayout() throws -> StoreLayout {
        if let problem = problems.first { throw problem }
        // A foreign key to a class with subclasses may hold a key of any of their tables (one
        // key space per hierarchy), so it cannot reference one table: the context clears it
        // when the row goes (as it does every foreign key).
        let superclasses = Set(entities.compactMap(\.superentityName))
        let tables = try entities.map { entity -> TableDescription in
            guard let layout = entity.layout else {
                throw SwiftDataError(
                    .loadIssueModelContainer, "entity \(entity.name) has no model type; build the schema from @Model classes", entity: entity.name)
            }
            let table = layout.table
            guard table.columns.contains(where: { $0.references.map(superclasses.contains) == true }) else { return table }
            return TableDescription(
                name: table.name,
                columns: table.columns.map { column in
                    guard let target = column.references, superclasses.contains(target) else { return column }
                    var loose = column
                    loose.references = nil
                    return loose
                },
                uniqueConstraints: table.uniqueConstraints, indexes: table.indexes, originalName: table.originalName
            )
        }
        var joinTables: [String: JoinTableDescription] = [:]
        for entity in entities {
            for property in entity.layout?.relationships ?? [] {
                guard var table = property.relationship?.joinTable else { continue }
                table.sourceSpansHierarchy = superclasses.contains(table.sourceTable)
                table.targetSpansHierarchy = superclasses.contains(table.targetTable)
                if let seed = table.seed, superclasses.contains(seed.table) {
                    table.seed?.subclassTables = descendants(of: seed.table)
                }
                joinTables[table.name] = table
            }
        }
        let names = tables.map(\.name) + joinTables.keys
        if let clash = Dictionary(grouping: names, by: { $0.lowercased() }).first(where: { $0.value.count > 1 }) {
            throw SwiftDataError(
                .loadIssueModelContainer, "two tables of the schema would be named \(clash.value[0]); rename the entity or the relationship")
        }
        return StoreLayout(tables: tables, joinTables: joinTables.values.sorted { $0.name < $1.name })
    }

    /// The names of an entity's subclasses, at every depth.
    private func descendants(of entity: String) -> [String] {
        let parent = Dictionary(entities.map { ($0.name, $0.superentityName) }, uniquingKeysWith: { first, _ in first })
        return entities.map(\.name).filter { name in
            var current = parent[name] ?? nil
            while let ancestor = current {
                if ancestor == entity { return true }
                current = parent[ancestor] ?? nil
            }
            return false
        }
    }
}
