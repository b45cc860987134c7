extension EntityLayout {
    /// The store table of this entity: one column per stored property, named after it.
    var table: TableDescription {
        TableDescription(
            name: name,
            columns: columns.map { ColumnDescription(name: $0.name, type: $0.codec.columnType.rawValue, isNullable: $0.codec.isOptional) },
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
        return StoreLayout(tables: tables)
    }
}
