extension Schema {
    /// One model type of a schema: its name, attributes and constraints.
    public final class Entity: Hashable, CustomDebugStringConvertible, @unchecked Sendable {
        // @unchecked Sendable: every stored property is a `let` set in init, but for the
        // inheritance links (`subentities`, `superentity`), which the schema sets while it is
        // built, before it is returned to anyone.

        /// The entity's name: the model class's unqualified name.
        public let name: String
        /// The persisted properties, in declaration order.
        public let properties: [any SchemaProperty]
        /// The attributes.
        public let attributes: Set<Attribute>
        /// The relationships.
        public let relationships: Set<Relationship>
        /// Uniqueness constraints, as property names, one array per constraint.
        public let uniquenessConstraints: [[String]]
        /// Indexes, as property names, one array per index.
        public let indices: [[String]]
        /// The entities of the schema's model classes that inherit from this one directly.
        public internal(set) var subentities: Set<Entity> = []
        /// The name of the entity of the model class this one inherits from, if any.
        public var superentityName: String? { layout?.superLayout?.name ?? superentity?.name ?? loadedSuperentityName }
        /// The superentity's name in a saved schema (``Schema/load(from:)``).
        private var loadedSuperentityName: String?
        /// The entity of the model class this one inherits from, when it is in the schema.
        public internal(set) weak var superentity: Entity?
        let layout: EntityLayout?

        /// An entity with a name and no properties.
        public convenience init(_ name: String) {
            self.init(name: name, attributes: [], layout: nil)
        }

        /// An entity with a name and attributes.
        public convenience init(_ name: String, properties: Attribute...) {
            self.init(name: name, attributes: properties, layout: nil)
        }

        /// An entity with subentities (which it becomes the superentity of) and attributes,
        /// as a hand-written description; a container builds its entities from model types.
        public convenience init(_ name: String, subentities: Entity..., properties: Attribute...) {
            self.init(name: name, attributes: properties, layout: nil)
            self.subentities = Set(subentities)
            for subentity in subentities { subentity.superentity = self }
        }

        init(layout: EntityLayout) {
            self.name = layout.name
            self.layout = layout
            self.properties = layout.properties.map(\.schemaProperty)
            self.attributes = Set(layout.properties.compactMap(\.attribute))
            self.relationships = Set(layout.properties.compactMap { $0.schemaProperty as? Relationship })
            self.uniquenessConstraints = layout.uniquenessConstraints.map { $0.map { layout.properties[$0].name } }
            self.indices = layout.indices.map { $0.map { layout.properties[$0].name } }
        }

        /// An entity read back from a saved schema (``Schema/load(from:)``): no model type
        /// behind it; its superentity is named, and linked by the schema.
        init(
            loadedName name: String, superentityName: String?, properties: [any SchemaProperty], uniquenessConstraints: [[String]],
            indices: [[String]]
        ) {
            self.name = name
            self.layout = nil
            self.properties = properties
            self.attributes = Set(properties.compactMap { $0 as? Attribute })
            self.relationships = Set(properties.compactMap { $0 as? Relationship })
            self.uniquenessConstraints = uniquenessConstraints
            self.indices = indices
            self.loadedSuperentityName = superentityName
        }

        private init(name: String, attributes: [Attribute], layout: EntityLayout?) {
            self.name = name
            self.layout = layout
            self.properties = attributes
            self.attributes = Set(attributes)
            self.relationships = []
            self.uniquenessConstraints = attributes.filter(\.isUnique).map { [$0.name] }
            self.indices = []
        }

        /// The stored properties: every persisted property, inherited ones included.
        public var storedProperties: [any SchemaProperty] { properties }
        /// The properties inherited from the superentity (they come first in ``properties``).
        public var inheritedProperties: [any SchemaProperty] { Array(properties.prefix(layout?.ownIndexBase ?? 0)) }
        /// The inherited properties by name.
        public var inheritedPropertiesByName: [String: any SchemaProperty] {
            Dictionary(inheritedProperties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        }
        /// The attributes by name.
        public var attributesByName: [String: Attribute] {
            Dictionary(attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        }
        /// The relationships by name.
        public var relationshipsByName: [String: Relationship] {
            Dictionary(relationships.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        }
        /// The stored properties by name.
        public var storedPropertiesByName: [String: any SchemaProperty] {
            Dictionary(properties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        }

        /// Equal when the names and attributes are equal.
        public static func == (lhs: Entity, rhs: Entity) -> Bool {
            lhs === rhs
                || (lhs.name == rhs.name && lhs.attributes == rhs.attributes && lhs.relationships == rhs.relationships
                    && lhs.uniquenessConstraints == rhs.uniquenessConstraints && lhs.indices == rhs.indices)
        }

        /// Hashes the name.
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }

        /// A readable listing of the attributes.
        public var debugDescription: String {
            "Entity \(name)\n" + properties.map { "  \($0.debugDescription)" }.joined(separator: "\n")
        }
    }
}
