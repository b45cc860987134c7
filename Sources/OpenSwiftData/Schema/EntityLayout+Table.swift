extension EntityLayout {
    /// The store table of this entity: one column per stored property, named after it.
    var table: TableDescription {
        TableDescription(
            name: name,
            columns: columns.map {
                ColumnDescription(name: $0.name, type: $0.codec.columnType.rawValue, isNullable: $0.codec.isOptional, references: $0.relationship?.destinationName)
            },
            uniqueConstraints: uniquenessConstraints.map { $0.map { properties[$0].name } },
            indexes: indices.map { $0.map { properties[$0].name } }
        )
    }
}

extension Schema {
    /// The store layout of every entity of the schema.
    func storeLayout() throws -> StoreLayout {
        if let problem = problems.first { throw problem }
        let tables = try entities.map { entity -> TableDescription in
            guard let layout = entity.layout else {
                throw SwiftDataError(.loadIssueModelContainer, "entity \(entity.name) has no model type; build the schema from @Model classes", entity: entity.name)
            }
            return layout.table
        }
        var joinTables: [String: JoinTableDescription] = [:]
        for entity in entities {
            for property in entity.layout?.relationships ?? [] {
                if let table = property.relationship?.joinTable { joinTables[table.name] = table }
            }
        }
        let names = tables.map(\.name) + joinTables.keys
        if let clash = Dictionary(grouping: names, by: { $0.lowercased() }).first(where: { $0.value.count > 1 }) {
            throw SwiftDataError(.loadIssueModelContainer, "two tables of the schema would be named \(clash.value[0]); rename the entity or the relationship")
        }
        return StoreLayout(tables: tables, joinTables: joinTables.values.sorted { $0.name < $1.name })
    }
}
