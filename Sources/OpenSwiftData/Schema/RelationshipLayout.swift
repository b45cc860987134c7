/// The shape of a relationship property, read from its value type at run time: `T`, `T?`, `[T]`
/// or `[T]?` where `T` is a model.
struct RelationshipShape {
    let destination: any PersistentModel.Type
    let isToMany: Bool
    let isOptional: Bool

    /// The shape of a property type, or nil when the type is not a relationship.
    init?(_ valueType: any Any.Type) {
        if let collection = valueType as? any RelationshipCollection.Type {
            destination = collection._$elementType
            isToMany = true
            isOptional = valueType is any _OptionalType.Type
        } else if let model = valueType as? any PersistentModel.Type {
            destination = model
            isToMany = false
            isOptional = false
        } else if let optional = valueType as? any _OptionalType.Type, let model = optional._wrappedType as? any PersistentModel.Type {
            destination = model
            isToMany = false
            isOptional = true
        } else {
            return nil
        }
    }
}

/// A join table: the rows of a many-to-many relationship (or of a to-many relationship without
/// an inverse), one `(source, target)` pair per related couple.
struct JoinTableDescription: Hashable, Sendable {
    let name: String
    /// The table whose primary keys fill `source` (the owning side).
    let sourceTable: String
    /// The table whose primary keys fill `target`.
    let targetTable: String

    /// Whether `source` holds keys of several tables: `sourceTable`'s class has subclasses, whose
    /// rows share its key space (`ModelContainer.keyFamily(of:)`), so a key names exactly one row
    /// of one of the hierarchy's tables but SQLite cannot check it against one table. Such a side
    /// has no `REFERENCES` clause, and the save deletes its links when the row goes.
    var sourceSpansHierarchy = false
    /// The same for `target`.
    var targetSpansHierarchy = false

    /// For the first of several collections that share one to-one inverse: the foreign-key
    /// column its links are filled from when a lightweight migration creates its table (a store
    /// written while the collections were read through that column). Not part of the fingerprint.
    var seed: Seed? = nil

    /// A table's foreign-key column (see ``seed``).
    struct Seed: Hashable, Sendable {
        let table: String
        let column: String
        /// The tables of `table`'s subclasses, which inherit the column.
        var subclassTables: [String] = []
    }

    static let sourceColumn = "source"
    static let targetColumn = "target"

    var fingerprint: String {
        let source = sourceSpansHierarchy ? "\(sourceTable) hierarchy" : sourceTable
        let target = targetSpansHierarchy ? "\(targetTable) hierarchy" : targetTable
        return "join \(name)(source -> \(source), target -> \(target))"
    }
}

/// Everything the context and the store need to know about one relationship property, resolved
/// once per model type from its own and its destination's `schemaMetadata`.
final class RelationshipLayout: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; metatypes and values only.

    /// Where a relationship's state lives in the store.
    enum Storage: Hashable {
        /// A column of this entity's table holding the related row's primary key.
        case foreignKey
        /// The destination's foreign-key column (named after the inverse) points at this row.
        case inverseForeignKey
        /// A join table; `isSource` tells which of its columns holds this entity's keys, `writes`
        /// whether this side writes its rows (one side only when both sides are maintained).
        case joinTable(JoinTableDescription, isSource: Bool, writes: Bool)
    }

    let destinationType: any PersistentModel.Type
    let destinationName: String
    let isToMany: Bool
    let isOptional: Bool
    let deleteRule: Schema.Relationship.DeleteRule
    /// 0 means no bound.
    let minimumModelCount: Int
    let maximumModelCount: Int
    /// The inverse's position in the destination's `schemaMetadata`.
    let inverseIndex: Int?
    let inverseName: String?
    let inverseIsToMany: Bool
    /// For a to-one relationship that several to-many relationships of its destination name as
    /// their inverse (`Box.front` and `Box.back` both naming `Item.box`): their positions in the
    /// destination's layout, in declaration order. Empty otherwise.
    let sharingCollections: [Int]
    /// For a to-many relationship that shares its to-one inverse with other to-many relationships
    /// of its entity: the positions of all of them (itself included) in its own entity's layout,
    /// in declaration order. Empty otherwise.
    let collectionsSharingInverse: [Int]
    let storage: Storage
    let description: Schema.Relationship

    init(
        entity: String, property: Schema.PropertyMetadata, shape: RelationshipShape,
        declared: Schema.Relationship?, modelType: any PersistentModel.Type
    ) throws {
        let declared = declared ?? Schema.Relationship()
        let destinationName = Schema.entityName(of: shape.destination)
        if shape.isToMany && declared.isUnique {
            throw SwiftDataError(
                .loadIssueModelContainer, "\(entity).\(property.name) is a to-many relationship and cannot be .unique", entity: entity,
                property: property.name)
        }
        // The destination's properties as its layout orders them: inherited ones first (under
        // key paths rooted at it), then its own.
        let destinationMetadata = Self.allMetadata(of: shape.destination)
        let inverse = try Self.inverse(of: property, in: modelType, entity: entity, shape: shape, declared: declared, candidates: destinationMetadata)
        let inverseShape = inverse.flatMap { RelationshipShape(type(of: destinationMetadata[$0].keypath).valueType) }

        let ownKey = "\(entity).\(property.name)"
        let inverseKey = inverse.map { "\(destinationName).\(destinationMetadata[$0].name)" }
        let owns = inverseKey.map { ownKey <= $0 } ?? true
        let ownMetadata = Self.allMetadata(of: modelType)
        // Relationships that share one inverse: each to-many keeps its own members.
        var sharingCollections: [Int] = []
        var collectionsSharingInverse: [Int] = []
        if let inverse {
            if shape.isToMany {
                let sharing = SharedInverse.members(naming: destinationMetadata[inverse], among: ownMetadata)
                if sharing.count > 1 {
                    try SharedInverse.check(
                        sharing.map { ownMetadata[$0] }, entity: entity, inverse: destinationMetadata[inverse], inverseEntity: destinationName)
                    collectionsSharingInverse = sharing
                }
            } else {
                let sharing = SharedInverse.members(naming: property, among: destinationMetadata)
                if sharing.count > 1 {
                    try SharedInverse.check(
                        sharing.map { destinationMetadata[$0] }, entity: destinationName, inverse: property, inverseEntity: entity)
                    sharingCollections = sharing
                }
            }
        }
        let storage: Storage
        switch (shape.isToMany, inverseShape?.isToMany) {
        case (false, nil), (false, true?):
            storage = .foreignKey
        case (false, false?):
            storage = owns ? .foreignKey : .inverseForeignKey
        case (true, false?) where !collectionsSharingInverse.isEmpty:
            // One of several collections naming one to-one inverse: the inverse's foreign key says
            // which model holds a member, not which of the collections it is in, so each
            // collection has a join table of its own.
            storage = .joinTable(
                JoinTableDescription(
                    name: "\(entity)_\(property.name)", sourceTable: entity, targetTable: destinationName,
                    seed: inverse.flatMap { index in
                        let primary = SharedInverse.primary(of: destinationMetadata[index], among: ownMetadata, sharing: collectionsSharingInverse)
                        guard primary.map({ ownMetadata[$0].keypath == property.keypath }) == true else { return nil }
                        return JoinTableDescription.Seed(table: destinationName, column: destinationMetadata[index].name)
                    }),
                isSource: true, writes: true)
        case (true, false?):
            storage = .inverseForeignKey
        case (true, nil):
            storage = .joinTable(
                JoinTableDescription(name: "\(entity)_\(property.name)", sourceTable: entity, targetTable: destinationName), isSource: true,
                writes: true)
        case (true, true?):
            let ownerEntity = owns ? entity : destinationName
            let ownerProperty = owns ? property.name : (inverse.map { destinationMetadata[$0].name } ?? property.name)
            let table = JoinTableDescription(
                name: "\(ownerEntity)_\(ownerProperty)", sourceTable: ownerEntity, targetTable: owns ? destinationName : entity)
            storage = .joinTable(table, isSource: owns, writes: owns)
        }

        self.destinationType = shape.destination
        self.destinationName = destinationName
        self.isToMany = shape.isToMany
        self.isOptional = shape.isOptional
        self.deleteRule = declared.deleteRule
        self.minimumModelCount = max(declared.minimumModelCount ?? 0, 0)
        self.maximumModelCount = max(declared.maximumModelCount ?? 0, 0)
        self.inverseIndex = inverse
        self.inverseName = inverse.map { destinationMetadata[$0].name }
        self.inverseIsToMany = inverseShape?.isToMany ?? false
        self.sharingCollections = sharingCollections
        self.collectionsSharingInverse = collectionsSharingInverse
        self.storage = storage
        self.description = Schema.Relationship(
            name: property.name, declaredOriginalName: declared.declaredOriginalName, keypath: property.keypath,
            options: declared.options, valueType: type(of: property.keypath).valueType, destination: destinationName,
            deleteRule: declared.deleteRule, inverseName: inverseName, inverseKeyPath: inverse.map { destinationMetadata[$0].keypath },
            minimumModelCount: declared.minimumModelCount, maximumModelCount: declared.maximumModelCount,
            hashModifier: declared.hashModifier, isToOne: !shape.isToMany
        )
    }

    /// The join table, when the relationship has one.
    var joinTable: JoinTableDescription? {
        if case let .joinTable(table, _, _) = storage { return table }
        return nil
    }

    /// Finds the inverse: declared on this side with `inverse:`, declared on the other side
    /// naming this property, or inferred when exactly one property on each side points at the
    /// other (as SwiftData infers it).
    private static func inverse(
        of property: Schema.PropertyMetadata, in modelType: any PersistentModel.Type, entity: String,
        shape: RelationshipShape, declared: Schema.Relationship, candidates: [Schema.PropertyMetadata]
    ) throws -> Int? {
        func pointsBack(_ metadata: Schema.PropertyMetadata) -> Bool {
            guard let other = RelationshipShape(type(of: metadata.keypath).valueType) else { return false }
            return other.destination == modelType
        }
        if let declaredInverse = declared.inverseKeyPath {
            guard let index = candidates.firstIndex(where: { $0.keypath == declaredInverse }), pointsBack(candidates[index]) else {
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "the inverse of \(entity).\(property.name) is not a relationship of \(Schema.entityName(of: shape.destination)) that points back at \(entity)",
                    entity: entity, property: property.name)
            }
            return index
        }
        if let index = candidates.firstIndex(where: { ($0.metadata as? Schema.Relationship)?.inverseKeyPath == property.keypath }) {
            guard pointsBack(candidates[index]) else {
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "\(Schema.entityName(of: shape.destination)).\(candidates[index].name) names \(entity).\(property.name) as its inverse but does not point at \(entity)",
                    entity: entity, property: property.name)
            }
            return index
        }
        // Inference: properties that declare an inverse are paired already.
        func isFree(_ metadata: Schema.PropertyMetadata) -> Bool {
            (metadata.metadata as? Schema.Relationship)?.inverseKeyPath == nil
        }
        let ownProperties = allMetadata(of: modelType)
        if shape.destination == modelType {
            // A self-relationship pairs two different properties, each the other's only match.
            let selfCandidates = ownProperties.indices.filter { index in
                ownProperties[index].keypath != property.keypath && isFree(ownProperties[index]) && pointsBack(ownProperties[index])
            }
            return selfCandidates.count == 1 ? selfCandidates.first : nil
        }
        let backward = candidates.indices.filter { index in
            let candidate = candidates[index]
            return isFree(candidate) && pointsBack(candidate)
                && !ownProperties.contains { ($0.metadata as? Schema.Relationship)?.inverseKeyPath == candidate.keypath }
        }
        let forward = ownProperties.filter { metadata in
            guard isFree(metadata), let other = RelationshipShape(type(of: metadata.keypath).valueType) else { return false }
            return other.destination == shape.destination
                && !candidates.contains { ($0.metadata as? Schema.Relationship)?.inverseKeyPath == metadata.keypath }
        }
        return backward.count == 1 && forward.count == 1 ? backward.first : nil
    }

    /// The persisted properties of a model class in its layout's order: those of its model
    /// superclasses first (root first, under key paths rooted at the class, as a predicate or
    /// `inverse:` argument names them), then its own.
    static func allMetadata(of type: any PersistentModel.Type) -> [Schema.PropertyMetadata] {
        var chain: [any PersistentModel.Type] = []
        var current = _getSuperclass(type) as? any PersistentModel.Type
        while let superclass = current {
            chain.insert(superclass, at: 0)
            current = _getSuperclass(superclass) as? any PersistentModel.Type
        }
        guard !chain.isEmpty else { return type.schemaMetadata }
        var inherited: [Schema.PropertyMetadata] = []
        for superclass in chain { inherited += superclass.schemaMetadata }
        let rerooted = type._$inheritedKeyPaths
        let renamed = inherited.indices.map { index in
            let metadata = inherited[index]
            guard index < rerooted.count else { return metadata }
            return Schema.PropertyMetadata(
                name: metadata.name, keypath: rerooted[index], defaultValue: metadata.defaultValue, metadata: metadata.metadata)
        }
        return renamed + type.schemaMetadata
    }
}
