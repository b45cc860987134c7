/// Several relationships of one entity that name the same inverse, as `Box.front` and
/// `Box.back` both declared with `inverse: \Item.box`.
///
/// To-many relationships sharing a to-one inverse each keep their own members, as in SwiftData:
/// the to-one points at the model whose collection holds it, and each collection is stored in a
/// join table of its own. Any other sharing is ambiguous (which collection does a model set from
/// the other side join?) and is refused when the container is created.
enum SharedInverse {
    /// The positions, in declaration order, of the properties in `candidates` that have
    /// `inverse` as their inverse: those that name it with `inverse:`, and the one it names.
    static func members(naming inverse: Schema.PropertyMetadata, among candidates: [Schema.PropertyMetadata]) -> [Int] {
        let named = (inverse.metadata as? Schema.Relationship)?.inverseKeyPath
        return candidates.indices.filter { index in
            let candidate = candidates[index]
            guard RelationshipShape(type(of: candidate.keypath).valueType) != nil else { return false }
            return (candidate.metadata as? Schema.Relationship)?.inverseKeyPath == inverse.keypath || candidate.keypath == named
        }
    }

    /// The collection a model joins when its to-one `inverse` is set directly: the one `inverse`
    /// names with `inverse:`, or else the first declared of `sharing` (positions in
    /// `candidates`).
    static func primary(of inverse: Schema.PropertyMetadata, among candidates: [Schema.PropertyMetadata], sharing: [Int]) -> Int? {
        if let named = (inverse.metadata as? Schema.Relationship)?.inverseKeyPath,
            let index = sharing.first(where: { candidates[$0].keypath == named })
        {
            return index
        }
        return sharing.first
    }

    /// Refuses a sharing that SwiftData's model cannot express without merging members: a
    /// shared inverse that is itself to-many, or a to-one relationship among those sharing it.
    static func check(_ members: [Schema.PropertyMetadata], entity: String, inverse: Schema.PropertyMetadata, inverseEntity: String) throws {
        let names = members.map { "\(entity).\($0.name)" }.joined(separator: ", ")
        let inverseName = "\(inverseEntity).\(inverse.name)"
        if RelationshipShape(type(of: inverse.keypath).valueType)?.isToMany == true {
            throw SwiftDataError(
                .loadIssueModelContainer,
                "\(names) all name \(inverseName) as their inverse, which is a to-many relationship: a model added to \(inverseName) could belong to any of them. Give each of them its own inverse relationship, or declare them without an inverse",
                entity: entity, property: members.first?.name)
        }
        if let toOne = members.first(where: { RelationshipShape(type(of: $0.keypath).valueType)?.isToMany == false }) {
            throw SwiftDataError(
                .loadIssueModelContainer,
                "\(names) all name \(inverseName) as their inverse, and \(entity).\(toOne.name) is a to-one relationship: only to-many relationships can share an inverse (each keeping its own members). Give \(entity).\(toOne.name) its own inverse relationship, or declare it without one",
                entity: entity, property: toOne.name)
        }
    }
}
