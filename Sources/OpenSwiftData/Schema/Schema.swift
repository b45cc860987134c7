import Foundation

/// The description of a set of model types: their entities, attributes and constraints.
///
/// ```swift
/// let schema = Schema([Trip.self, Visit.self])
/// let container = try ModelContainer(for: schema)
/// ```
public final class Schema: Hashable, CustomDebugStringConvertible, @unchecked Sendable {
    // @unchecked Sendable: every stored property is a `let` set in init; entities are immutable.

    /// The version that schemas built from model types get unless told otherwise.
    public static let schemaEncodingVersion = Version(1, 0, 0)
    /// The encoding version of this schema.
    public let encodingVersion: Version
    /// The schema's version.
    public let version: Version
    /// The entities, in the order their types were given.
    public let entities: [Entity]
    /// The entities by name.
    public let entitiesByName: [String: Entity]

    /// An empty schema.
    public convenience init() {
        self.init(entities: [], version: Version(1, 0, 0))
    }

    /// A schema of the given entities.
    public convenience init(_ entities: Entity..., version: Version = Version(1, 0, 0)) {
        self.init(entities: entities, version: version)
    }

    /// A schema built from model types.
    public convenience init(_ types: any PersistentModel.Type..., version: Version = Version(1, 0, 0)) {
        self.init(types, version: version)
    }

    /// A schema built from model types and every model type they reach through relationships.
    /// A type whose properties cannot be stored makes the
    /// container that uses this schema throw ``SwiftDataError/loadIssueModelContainer``.
    public init(_ types: [any PersistentModel.Type], version: Version = Version(1, 0, 0)) {
        var entities: [Entity] = []
        var seen = Set<ObjectIdentifier>()
        var problems: [SwiftDataError] = []
        // The given types first, then every type reachable through relationships, as SwiftData
        // pulls in relationship destinations.
        var queue = types
        var position = 0
        while position < queue.count {
            let type = queue[position]
            position += 1
            guard seen.insert(ObjectIdentifier(type)).inserted else { continue }
            do {
                let layout = try EntityLayout.of(type)
                entities.append(Entity(layout: layout))
                queue += layout.relationships.compactMap { $0.relationship?.destinationType }
                // A subclass brings its superclasses (SwiftData asks for every subclass to be
                // named; a superclass is reached from them).
                if let superLayout = layout.superLayout { queue.append(superLayout.modelType) }
            } catch let error as SwiftDataError {
                problems.append(error)
                entities.append(Entity(Schema.entityName(of: type)))
            } catch {
                problems.append(SwiftDataError(.loadIssueModelContainer, "\(type): \(error)"))
                entities.append(Entity(Schema.entityName(of: type)))
            }
        }
        self.encodingVersion = Schema.schemaEncodingVersion
        self.version = version
        self.entities = entities
        self.entitiesByName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.problems = problems
        // The inheritance links, set once here before the schema is shared.
        for entity in entities {
            guard let name = entity.superentityName, let superentity = entitiesByName[name] else { continue }
            entity.superentity = superentity
            superentity.subentities.insert(entity)
        }
    }

    /// A schema read back by ``load(from:)``, its inheritance links set.
    init(loaded entities: [Entity], version: Version, encodingVersion: Version) {
        self.encodingVersion = encodingVersion
        self.version = version
        self.entities = entities
        self.entitiesByName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.problems = []
        for entity in entities {
            guard let name = entity.superentityName, let superentity = entitiesByName[name] else { continue }
            entity.superentity = superentity
            superentity.subentities.insert(entity)
        }
    }

    private init(entities: [Entity], version: Version) {
        self.encodingVersion = Schema.schemaEncodingVersion
        self.version = version
        self.entities = entities
        self.entitiesByName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.problems = []
    }

    /// Errors found while building the schema from model types; the container reports them.
    let problems: [SwiftDataError]

    /// The entity of a model type, if the schema has it.
    public func entity<T: PersistentModel>(for type: T.Type) -> Entity? {
        entitiesByName[Schema.entityName(for: type)]
    }

    /// The entity name of a model type: its unqualified class name.
    public static func entityName<T: PersistentModel>(for type: T.Type) -> String {
        entityName(of: type)
    }

    /// Equal when the entities and version are equal.
    public static func == (lhs: Schema, rhs: Schema) -> Bool {
        lhs === rhs || (lhs.version == rhs.version && lhs.entities == rhs.entities)
    }

    /// Hashes the version and entity names.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(version)
        for entity in entities { hasher.combine(entity.name) }
    }

    /// A readable listing of the entities and their attributes.
    public var debugDescription: String {
        "Schema \(version)\n" + entities.map(\.debugDescription).joined(separator: "\n")
    }
}
