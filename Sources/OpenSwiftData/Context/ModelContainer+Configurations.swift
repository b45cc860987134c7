import Foundation

extension ModelContainer {
    /// The stores of a container with several configurations: for each configuration, in
    /// order, its file (nil in memory) and the tables of the entities it holds.
    ///
    /// An entity lives in the configuration whose schema names it (a schema names the types it
    /// was made from, their relationships' destinations and their superclasses), or else in
    /// the first configuration without a schema. Throws a ``SwiftDataError`` naming what is wrong when an
    /// entity lives in no configuration or is named by two, when a relationship or a class
    /// hierarchy would cross from one store to another (SQLite keeps each store's foreign keys
    /// inside its file), when two configurations share a file, and when a configuration is
    /// read-only (a container's stores are then opened one per container).
    static func storeParts(of schema: Schema, _ configurations: [ModelConfiguration], layout: StoreLayout) throws -> [StorePart] {
        var files = Set<String>()
        for configuration in configurations {
            guard configuration.allowsSave else {
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "the configuration \"\(configuration.name)\" is read-only, which a container with several configurations does not support; open it in a container of its own"
                )
            }
            if !configuration.isStoredInMemoryOnly, !files.insert(configuration.url.standardizedFileURL.resolvingSymlinksInPath().path).inserted {
                throw SwiftDataError(
                    .duplicateConfiguration, "two configurations use the same file, \(configuration.url.path); give each its own url")
            }
        }
        var home: [String: Int] = [:]
        for entity in schema.entities {
            let naming = configurations.indices.filter { configurations[$0].schema?.entitiesByName[entity.name] != nil }
            if naming.count > 1 {
                let names = naming.map { "\"\(configurations[$0].name)\"" }.joined(separator: " and ")
                throw SwiftDataError(
                    .loadIssueModelContainer, "the entity \(entity.name) is named by the configurations \(names); an entity lives in one store",
                    entity: entity.name)
            }
            guard let index = naming.first ?? configurations.firstIndex(where: { $0.schema == nil }) else {
                throw SwiftDataError(
                    .configurationSchemaNotFoundInContainerSchema,
                    "the entity \(entity.name) is in none of the container's configurations; name it in one configuration's schema",
                    entity: entity.name)
            }
            home[entity.name] = index
        }
        for entity in schema.entities {
            guard let index = home[entity.name] else { continue }
            if let superentity = entity.superentityName, let other = home[superentity], other != index {
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "\(entity.name) is in the configuration \"\(configurations[index].name)\" but its superclass \(superentity) is in \"\(configurations[other].name)\"; a class hierarchy lives in one store",
                    entity: entity.name)
            }
            for relationship in entity.relationships {
                guard let other = home[relationship.destination], other != index else { continue }
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "\(entity.name).\(relationship.name) relates the configuration \"\(configurations[index].name)\" to \(relationship.destination) in \"\(configurations[other].name)\"; relationships cannot cross stores",
                    entity: entity.name)
            }
        }
        return configurations.indices.map { index in
            let tables = Set(home.filter { $0.value == index }.keys)
            return StorePart(
                url: configurations[index].isStoredInMemoryOnly ? nil : configurations[index].url, layout: layout.restricted(to: tables),
                options: configurations[index].migrationOptions)
        }
    }
}
