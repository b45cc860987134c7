/// The names a history record was written with, read under the current schema.
///
/// Entries recorded before a migration renamed an entity (``PersistentModel/originalEntityName``)
/// or a property (`originalName:`) keep the old names in the log; they are handed out under the
/// new ones, so that a reader (the sync outbox) loses none of the changes made before the
/// rename. An old property name that a current property also has is left alone (the entry may
/// be newer than the migration).
struct RecordedNames {
    private let container: ModelContainer
    /// Per recorded entity name: its current layout and the property renames (old → new), or
    /// nil for an entity the schema no longer has.
    private var resolved: [String: (layout: EntityLayout, renames: [String: String])?] = [:]

    init(_ container: ModelContainer) {
        self.container = container
    }

    /// The current layout of a recorded entity, and the record with its property names under
    /// the current schema; nil when the schema no longer has the entity.
    mutating func current(_ record: HistoryRecord) -> (layout: EntityLayout, record: HistoryRecord)? {
        guard let entity = entity(record.entity) else { return nil }
        guard !entity.renames.isEmpty else { return (entity.layout, record) }
        var renamed = record
        renamed.names = record.names.map { entity.renames[$0] ?? $0 }
        return (entity.layout, renamed)
    }

    private mutating func entity(_ name: String) -> (layout: EntityLayout, renames: [String: String])? {
        if let known = resolved[name] { return known }
        let found = container.historyLayout(named: name).map { layout in
            var renames: [String: String] = [:]
            let current = Set(layout.properties.map(\.name))
            for property in layout.properties {
                guard let original = property.attribute?.declaredOriginalName ?? property.relationship?.description.declaredOriginalName,
                      !original.isEmpty, !current.contains(original) else { continue }
                renames[original] = property.name
            }
            return (layout, renames)
        }
        resolved[name] = found
        return found
    }
}

extension ModelContainer {
    /// The layout of the entity a history record names: the entity of that name, or the one
    /// renamed from it.
    func historyLayout(named entity: String) -> EntityLayout? {
        if let layout = layout(named: entity) { return layout }
        for candidate in schema.entities {
            if let layout = layout(named: candidate.name), layout.modelType.originalEntityName == entity { return layout }
        }
        return nil
    }
}
