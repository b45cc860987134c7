/// A property of an entity: an attribute or a relationship.
public protocol SchemaProperty: Hashable, CustomDebugStringConvertible, Sendable {
    /// The property's name.
    var name: String { get }
    /// The property's previous name, or its name when it was never renamed.
    var originalName: String { get }
    /// The Swift type of the property's values.
    var valueType: any Any.Type { get }
    /// Whether this property is an attribute.
    var isAttribute: Bool { get }
    /// Whether this property is a relationship.
    var isRelationship: Bool { get }
    /// Whether this property is tracked but never written to the store.
    var isTransient: Bool { get }
    /// Whether the property's type is optional.
    var isOptional: Bool { get }
    /// Whether the property's value must be unique among the entity's rows.
    var isUnique: Bool { get }
}
