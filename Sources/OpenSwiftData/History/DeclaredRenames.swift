/// Names in history entries that the current schema lacks, resolved through what the models
/// declare: an entity's `originalEntityName` (claimed by exactly one entity), a property's
/// `originalName:` (for properties without a column, such as a to-many relationship, whose
/// rename changes no table and so is in no migration's record; see ``HistoryRenames``).
///
/// Only names the schema does not have are resolved, so a name a later version reuses keeps
/// its current meaning; resolved once per entity and fetch.
struct DeclaredRenames {
    private let container: ModelContainer
    private var entities: [String: String?] = [:]
    private var properties: [String: [String: String]] = [:]

    init(_ container: ModelContainer) {
        self.container = container
    }

    /// Renames, in `entries`, the entities and properties the schema lacks by declared names.
    mutating func apply(to entries: inout [HistoryEntry]) {
        for index in entries.indices {
            var changed = false
            var records = entries[index].records
            for position in records.indices {
                if container.layout(named: records[position].entity) == nil, let entity = entity(renamedFrom: records[position].entity) {
                    records[position].entity = entity
                    changed = true
                }
                let renames = propertyRenames(of: records[position].entity)
                guard !renames.isEmpty, records[position].names.contains(where: { renames[$0] != nil }) else { continue }
                records[position].names = records[position].names.map { renames[$0] ?? $0 }
                changed = true
            }
            if changed { entries[index].records = records }
        }
    }

    /// The entity that declares `name` as its original name, when exactly one does.
    private mutating func entity(renamedFrom name: String) -> String? {
        if let known = entities[name] { return known }
        let claims = container.schema.entities.filter { entity in
            container.layout(named: entity.name)?.modelType.originalEntityName == name
        }
        let found = claims.count == 1 ? claims.first?.name : nil
        entities[name] = .some(found)
        return found
    }

    /// Declared original names of `entity`'s properties that no current property has.
    private mutating func propertyRenames(of entity: String) -> [String: String] {
        if let known = properties[entity] { return known }
        var renames: [String: String] = [:]
        if let layout = container.layout(named: entity) {
            let current = Set(layout.properties.map(\.name))
            for property in layout.properties {
                guard let original = property.declaredOriginalName, !current.contains(original) else { continue }
                renames[original] = property.name
            }
        }
        properties[entity] = renames
        return renames
    }
}
