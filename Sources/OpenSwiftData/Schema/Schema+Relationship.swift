extension Schema {
    /// A relationship of an entity to another entity (or to itself): to-one (`T`, `T?`) or
    /// to-many (`[T]`, `[T]?`).
    public final class Relationship: SchemaProperty, @unchecked Sendable {
        // @unchecked Sendable: every stored property is a `let` set in init; `valueType` is a
        // metatype and the key paths are immutable key path objects.

        /// What happens to related models when the model that holds the relationship is deleted.
        public enum DeleteRule: String, Codable, Hashable, Sendable {
            /// Clear the related models' references back to the deleted model (the default).
            case nullify
            /// Delete the related models too, applying their own delete rules.
            case cascade
            /// Refuse the save while the relationship still holds any model.
            case deny
            /// Leave the related models alone. The store cannot keep a reference to a row that is
            /// gone, so a stored reference to the deleted row reads as nil once the save is done.
            case noAction
        }

        /// Options of a relationship.
        public struct Option: Codable, Hashable, CustomDebugStringConvertible, Sendable {
            let rawValue: String

            /// The related model is unique among the entity's rows (to-one only).
            public static var unique: Option { Option(rawValue: "unique") }

            /// The option's name.
            public var debugDescription: String { rawValue }
        }

        /// The relationship's name.
        public let name: String
        /// The previous name, or `name` when there is none.
        public let originalName: String
        /// The key path of the property, once the schema builder has filled it in.
        public let keypath: AnyKeyPath?
        /// The options.
        public let options: [Option]
        /// The Swift type of the property (`T`, `T?`, `[T]` or `[T]?`).
        public let valueType: any Any.Type
        /// The name of the related entity.
        public let destination: String
        /// What happens to related models when this model is deleted.
        public let deleteRule: DeleteRule
        /// The name of the inverse relationship on the destination, if there is one.
        public let inverseName: String?
        /// The inverse relationship's key path, as declared with `inverse:` (on this side).
        public let inverseKeyPath: AnyKeyPath?
        /// The fewest related models a to-many relationship may hold (`0` or nil: no minimum).
        public let minimumModelCount: Int?
        /// The most related models a to-many relationship may hold (`0` or nil: no maximum).
        public let maximumModelCount: Int?
        /// A string mixed into the relationship's version hash.
        public let hashModifier: String?
        /// Whether the relationship holds at most one model.
        public let isToOneRelationship: Bool
        let declaredOriginalName: String?

        /// Creates a relationship description from `@Relationship` arguments; the name, types and
        /// inverse are filled in by the schema builder.
        public init(
            _ options: Option..., deleteRule: DeleteRule = .nullify, minimumModelCount: Int? = 0,
            maximumModelCount: Int? = 0, originalName: String? = nil, inverse: AnyKeyPath? = nil,
            hashModifier: String? = nil
        ) {
            self.name = ""
            self.declaredOriginalName = originalName
            self.originalName = originalName ?? ""
            self.keypath = nil
            self.options = options
            self.valueType = Any.self
            self.destination = ""
            self.deleteRule = deleteRule
            self.inverseName = nil
            self.inverseKeyPath = inverse
            self.minimumModelCount = minimumModelCount
            self.maximumModelCount = maximumModelCount
            self.hashModifier = hashModifier
            self.isToOneRelationship = false
        }

        init(
            name: String, declaredOriginalName: String?, keypath: AnyKeyPath?, options: [Option], valueType: any Any.Type,
            destination: String, deleteRule: DeleteRule, inverseName: String?, inverseKeyPath: AnyKeyPath?,
            minimumModelCount: Int?, maximumModelCount: Int?, hashModifier: String?, isToOne: Bool
        ) {
            self.name = name
            self.declaredOriginalName = declaredOriginalName
            self.originalName = declaredOriginalName ?? name
            self.keypath = keypath
            self.options = options
            self.valueType = valueType
            self.destination = destination
            self.deleteRule = deleteRule
            self.inverseName = inverseName
            self.inverseKeyPath = inverseKeyPath
            self.minimumModelCount = minimumModelCount
            self.maximumModelCount = maximumModelCount
            self.hashModifier = hashModifier
            self.isToOneRelationship = isToOne
        }

        /// Always false.
        public var isAttribute: Bool { false }
        /// Always true.
        public var isRelationship: Bool { true }
        /// Always false: relationships are stored.
        public var isTransient: Bool { false }
        /// Whether the property's type is optional (`T?` or `[T]?`).
        public var isOptional: Bool { valueType is any _OptionalType.Type }
        /// Whether the relationship is `.unique`.
        public var isUnique: Bool { options.contains(.unique) }

        /// Equal when every described aspect is equal.
        public static func == (lhs: Relationship, rhs: Relationship) -> Bool {
            lhs.name == rhs.name && lhs.originalName == rhs.originalName && lhs.options == rhs.options
                && lhs.valueType == rhs.valueType && lhs.destination == rhs.destination
                && lhs.deleteRule == rhs.deleteRule && lhs.inverseName == rhs.inverseName
                && lhs.minimumModelCount == rhs.minimumModelCount && lhs.maximumModelCount == rhs.maximumModelCount
                && lhs.hashModifier == rhs.hashModifier
        }

        /// Hashes the name and destination.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(name)
            hasher.combine(destination)
        }

        /// A description such as `messages: [Message] (cascade, inverse: conversation)`.
        public var debugDescription: String {
            var traits = [deleteRule.rawValue]
            if let inverseName { traits.append("inverse: \(inverseName)") }
            return "\(name): \(valueType) (\(traits.joined(separator: ", ")))"
        }
    }
}
