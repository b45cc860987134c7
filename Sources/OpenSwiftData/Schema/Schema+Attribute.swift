extension Schema {
    /// A persisted attribute of an entity. An attribute whose value is a `Codable` struct is a
    /// ``Schema/CompositeAttribute``, which also lists the struct's members.
    public class Attribute: SchemaProperty, @unchecked Sendable {
        // @unchecked Sendable: every stored property is set in init and never mutated afterwards
        // except by the schema builder before the schema is published; `valueType` is a metatype
        // and `defaultValue` a value the macro produced from a literal declaration.

        /// Storage options for an attribute.
        public struct Option: Codable, Hashable, CustomDebugStringConvertible, Sendable {
            let rawValue: String

            /// The value is unique among the entity's rows; inserting a duplicate updates the
            /// existing row instead.
            public static var unique: Option { Option(rawValue: "unique") }
            /// Keep large data apart from the row (recorded; stored inline for now).
            public static var externalStorage: Option { Option(rawValue: "externalStorage") }
            /// Tracked and observable, but never written to the store.
            public static var ephemeral: Option { Option(rawValue: "ephemeral") }
            /// Keep the value in the history tombstone when the model is deleted.
            public static var preserveValueOnDeletion: Option { Option(rawValue: "preserveValueOnDeletion") }
            /// CloudKit encryption on Apple's systems; recorded, no effect here.
            public static var allowsCloudEncryption: Option { Option(rawValue: "allowsCloudEncryption") }
            /// Spotlight indexing on Apple's systems; recorded, no effect here.
            public static var spotlight: Option { Option(rawValue: "spotlight") }
            /// Store the value through its `Codable` representation (SwiftData, 2026). Here that
            /// is already how a `Codable` value that is not a scalar is stored (JSON text), so
            /// the option is recorded and the column is the same.
            public static var codable: Option { Option(rawValue: "codable") }

            /// The option's name.
            public var debugDescription: String { rawValue }
        }

        /// The attribute's name.
        public let name: String
        /// The previous name, or `name` when there is none.
        public let originalName: String
        /// The storage options.
        public let options: [Option]
        /// The Swift type of the values.
        public let valueType: any Any.Type
        /// The declared default value, if any.
        public let defaultValue: Any?
        /// A string mixed into the attribute's version hash.
        public let hashModifier: String?
        let declaredOriginalName: String?

        /// Creates an attribute description from `@Attribute` arguments; the name and type are
        /// filled in by the schema builder.
        public init(_ options: Option..., originalName: String? = nil, hashModifier: String? = nil) {
            self.name = ""
            self.options = options
            self.declaredOriginalName = originalName
            self.originalName = originalName ?? ""
            self.hashModifier = hashModifier
            self.valueType = Any.self
            self.defaultValue = nil
        }

        /// Creates a complete attribute description.
        public init(
            name: String, originalName: String? = nil, options: [Option] = [], valueType: any Any.Type, defaultValue: Any? = nil,
            hashModifier: String? = nil
        ) {
            self.name = name
            self.declaredOriginalName = originalName
            self.originalName = originalName ?? name
            self.options = options
            self.valueType = valueType
            self.defaultValue = defaultValue
            self.hashModifier = hashModifier
        }

        /// Always true.
        public var isAttribute: Bool { true }
        /// Always false.
        public var isRelationship: Bool { false }
        /// Whether the attribute is `.ephemeral`.
        public var isTransient: Bool { options.contains(.ephemeral) }
        /// Whether the value type is optional.
        public var isOptional: Bool { valueType is any _OptionalType.Type }
        /// Whether the attribute is `.unique`.
        public var isUnique: Bool { options.contains(.unique) }
        /// Whether the attribute is stored through a value transformer (never, for now).
        public var isTransformable: Bool { false }
        /// Whether the attribute is declared `.codable`.
        public var isCodable: Bool { options.contains(.codable) }

        /// Equal when name, original name, options, type and hash modifier are equal (and, for
        /// composite attributes, their members).
        public static func == (lhs: Attribute, rhs: Attribute) -> Bool {
            guard
                lhs.name == rhs.name && lhs.originalName == rhs.originalName && lhs.options == rhs.options
                    && lhs.valueType == rhs.valueType && lhs.hashModifier == rhs.hashModifier
            else { return false }
            switch (lhs as? CompositeAttribute, rhs as? CompositeAttribute) {
            case (nil, nil): return true
            case (let left?, let right?): return left.properties == right.properties
            default: return false
            }
        }

        /// Hashes the name and options.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(name)
            hasher.combine(options)
        }

        /// A description such as `name: String (unique)`.
        public var debugDescription: String {
            let opts = options.isEmpty ? "" : " (\(options.map(\.rawValue).joined(separator: ", ")))"
            return "\(name): \(valueType)\(opts)"
        }

        /// The attribute with what the schema builder knows: its name, type and default. A
        /// value stored as JSON whose type is a keyed `Codable` struct gives a
        /// ``Schema/CompositeAttribute``.
        func completed(name: String, valueType: any Any.Type, defaultValue: Any?, storedAsJSON: Bool) -> Attribute {
            if storedAsJSON, let members = CompositeAttribute.members(of: valueType) {
                return CompositeAttribute(
                    name: name, originalName: declaredOriginalName, options: options, valueType: valueType, defaultValue: defaultValue,
                    hashModifier: hashModifier, properties: members)
            }
            return Attribute(
                name: name, originalName: declaredOriginalName, options: options, valueType: valueType, defaultValue: defaultValue,
                hashModifier: hashModifier)
        }
    }

    /// An attribute whose value is a `Codable` struct, described member by member: each member
    /// is an attribute, and a member that is itself such a struct is a composite attribute.
    ///
    /// SwiftData flattens these values into columns of their own; here the value is stored as
    /// one JSON column, predicates reach its members through SQLite's JSON functions, and the
    /// members are found from the struct's `Codable` conformance (its keys and their types).
    /// A struct whose members cannot be found that way (one holding an enum that is not
    /// `CaseIterable`, or validating what it decodes) is described by a plain ``Attribute``.
    public final class CompositeAttribute: Attribute, @unchecked Sendable {
        // @unchecked Sendable: as Attribute; `properties` is set in init and never mutated.

        /// The struct's members, in the order its decoding asks for them.
        public let properties: [Schema.Attribute]

        /// Creates a composite attribute from its members.
        public init(
            name: String, originalName: String? = nil, options: [Option] = [], valueType: any Any.Type, defaultValue: Any? = nil,
            hashModifier: String? = nil, properties: [Schema.Attribute]
        ) {
            self.properties = properties
            super.init(
                name: name, originalName: originalName, options: options, valueType: valueType, defaultValue: defaultValue,
                hashModifier: hashModifier)
        }

        /// The member attributes of `type` (optional or not), or nil when it is not a keyed
        /// `Codable` struct whose members can be found.
        static func members(of type: any Any.Type, depth: Int = 0) -> [Schema.Attribute]? {
            let unwrapped = (type as? any _OptionalType.Type)?._wrappedType ?? type
            guard depth < 8, let found = CodableShape.members(of: unwrapped), !found.isEmpty else { return nil }
            return found.map { member in
                if let nested = CompositeAttribute.members(of: member.type, depth: depth + 1) {
                    return CompositeAttribute(name: member.name, valueType: member.type, properties: nested)
                }
                return Attribute(name: member.name, valueType: member.type)
            }
        }
    }
}
