import Foundation

extension Schema {
    /// Writes the schema to `url` as JSON: its version, and per entity its name, superentity,
    /// attributes (name, original name, options, type), relationships (destination, inverse,
    /// delete rule, counts, options), uniqueness constraints and indexes.
    ///
    /// ```swift
    /// try Schema([Trip.self]).save(to: URL(filePath: "schema.json"))
    /// let saved = try Schema.load(from: URL(filePath: "schema.json"))
    /// ```
    ///
    /// Types are written by their runtime names, so ``load(from:)`` finds them again in a
    /// process that has them. Default values, key paths and model types are not written.
    public final func save(to url: URL) throws {
        let document = SchemaDocument(self)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(document)
        } catch {
            throw SwiftDataError(.unknownSchema, "the schema cannot be written as JSON: \(error)")
        }
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw SwiftDataError(.storeFailure, "writing the schema to \(url.path): \(error.localizedDescription)")
        }
    }

    /// Reads a schema that ``save(to:)`` wrote. Its entities describe the saved model types
    /// (names, attributes, relationships, constraints) and compare equal to the saved schema's;
    /// they have no model type behind them, so a container cannot be opened with them.
    ///
    /// Throws ``SwiftDataError/unknownSchema`` for a file that is not such a document, or that
    /// names a type this process does not have.
    public static func load(from url: URL) throws -> Schema {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw SwiftDataError(.unknownSchema, "reading a schema from \(url.path): \(error.localizedDescription)")
        }
        let document: SchemaDocument
        do {
            document = try JSONDecoder().decode(SchemaDocument.self, from: data)
        } catch {
            throw SwiftDataError(.unknownSchema, "\(url.path) is not a schema written by Schema.save(to:): \(error)")
        }
        guard document.format == SchemaDocument.currentFormat else {
            throw SwiftDataError(
                .unknownSchema,
                "\(url.path) is a schema document of format \(document.format); this version reads format \(SchemaDocument.currentFormat)")
        }
        return try document.schema()
    }
}

/// The JSON form of a ``Schema`` (``Schema/save(to:)``).
struct SchemaDocument: Codable {
    static let currentFormat = 1

    struct Version: Codable {
        var major: Int
        var minor: Int
        var patch: Int
    }

    struct Attribute: Codable {
        var name: String
        var originalName: String?
        var options: [Schema.Attribute.Option]
        /// The runtime (mangled) name of the value's type.
        var type: String
        /// The type as Swift writes it, for a reader of the file.
        var typeDescription: String
        var hashModifier: String?
    }

    struct Relationship: Codable {
        var name: String
        var originalName: String?
        var options: [Schema.Relationship.Option]
        var type: String
        var typeDescription: String
        var destination: String
        var deleteRule: Schema.Relationship.DeleteRule
        var inverse: String?
        var minimumModelCount: Int?
        var maximumModelCount: Int?
        var hashModifier: String?
        var isToOne: Bool
    }

    struct Entity: Codable {
        var name: String
        var superentity: String?
        /// Every stored property's name, in declaration order.
        var properties: [String]
        var attributes: [Attribute]
        var relationships: [Relationship]
        var uniquenessConstraints: [[String]]
        var indices: [[String]]
    }

    var format: Int
    var encodingVersion: Version
    var version: Version
    var entities: [Entity]

    init(_ schema: Schema) {
        format = Self.currentFormat
        encodingVersion = Version(schema.encodingVersion)
        version = Version(schema.version)
        entities = schema.entities.map { entity in
            Entity(
                name: entity.name,
                superentity: entity.superentityName,
                properties: entity.properties.map(\.name),
                attributes: entity.properties.compactMap { $0 as? Schema.Attribute }.map { attribute in
                    Attribute(
                        name: attribute.name, originalName: attribute.declaredOriginalName, options: attribute.options,
                        type: _mangledTypeName(attribute.valueType) ?? "", typeDescription: String(reflecting: attribute.valueType),
                        hashModifier: attribute.hashModifier
                    )
                },
                relationships: entity.properties.compactMap { $0 as? Schema.Relationship }.map { relationship in
                    Relationship(
                        name: relationship.name, originalName: relationship.declaredOriginalName, options: relationship.options,
                        type: _mangledTypeName(relationship.valueType) ?? "", typeDescription: String(reflecting: relationship.valueType),
                        destination: relationship.destination, deleteRule: relationship.deleteRule, inverse: relationship.inverseName,
                        minimumModelCount: relationship.minimumModelCount, maximumModelCount: relationship.maximumModelCount,
                        hashModifier: relationship.hashModifier, isToOne: relationship.isToOneRelationship
                    )
                },
                uniquenessConstraints: entity.uniquenessConstraints,
                indices: entity.indices
            )
        }
    }

    /// The schema the document describes.
    func schema() throws -> Schema {
        func type(_ name: String, _ description: String, of property: String, in entity: String) throws -> any Any.Type {
            guard let type = _typeByName(name) else {
                throw SwiftDataError(
                    .unknownSchema, "\(entity).\(property) has the type \(description), which this process does not have", entity: entity,
                    property: property)
            }
            return type
        }
        let entities = try entities.map { entity -> Schema.Entity in
            var byName: [String: any SchemaProperty] = [:]
            for attribute in entity.attributes {
                // The completed attribute, as the schema builder makes it (a composite attribute
                // for a `Codable` struct stored as JSON).
                let valueType = try type(attribute.type, attribute.typeDescription, of: attribute.name, in: entity.name)
                let plain = Schema.Attribute(
                    name: attribute.name, originalName: attribute.originalName, options: attribute.options, valueType: valueType,
                    hashModifier: attribute.hashModifier)
                byName[attribute.name] = plain.completed(
                    name: attribute.name, valueType: valueType, defaultValue: nil, storedAsJSON: ValueCodec.make(for: valueType)?.kind == .json)
            }
            for relationship in entity.relationships {
                byName[relationship.name] = Schema.Relationship(
                    name: relationship.name, declaredOriginalName: relationship.originalName, keypath: nil, options: relationship.options,
                    valueType: try type(relationship.type, relationship.typeDescription, of: relationship.name, in: entity.name),
                    destination: relationship.destination, deleteRule: relationship.deleteRule, inverseName: relationship.inverse,
                    inverseKeyPath: nil, minimumModelCount: relationship.minimumModelCount, maximumModelCount: relationship.maximumModelCount,
                    hashModifier: relationship.hashModifier, isToOne: relationship.isToOne
                )
            }
            let properties = entity.properties.compactMap { byName[$0] }
            guard properties.count == byName.count else {
                throw SwiftDataError(.unknownSchema, "the saved entity \(entity.name) lists its properties inconsistently", entity: entity.name)
            }
            return Schema.Entity(
                loadedName: entity.name, superentityName: entity.superentity, properties: properties,
                uniquenessConstraints: entity.uniquenessConstraints, indices: entity.indices
            )
        }
        return Schema(loaded: entities, version: Schema.Version(version), encodingVersion: Schema.Version(encodingVersion))
    }
}

extension SchemaDocument.Version {
    init(_ version: Schema.Version) {
        self.init(major: version.major, minor: version.minor, patch: version.patch)
    }
}

extension Schema.Version {
    init(_ version: SchemaDocument.Version) {
        self.init(version.major, version.minor, version.patch)
    }
}
