/// The type of a to-many relationship property: `[T]` or `[T]?` where `T` is a model.
public protocol RelationshipCollection {
    /// The related model type.
    associatedtype PersistentElement: PersistentModel
    /// A collection of these models; nil stands for the `nil` of an optional collection.
    init(_$models models: [PersistentElement]?)
    /// The models, or nil when an optional collection is `nil`.
    var _$models: [PersistentElement]? { get }
}

extension RelationshipCollection {
    /// The related model type, as a metatype the schema builder can inspect.
    static var _$elementType: any PersistentModel.Type { PersistentElement.self }
}

extension Array: RelationshipCollection where Element: PersistentModel {
    /// The related model type.
    public typealias PersistentElement = Element

    /// The models; nil makes an empty array.
    public init(_$models models: [Element]?) { self = models ?? [] }

    /// The array itself.
    public var _$models: [Element]? { self }
}

extension Optional: RelationshipCollection where Wrapped: RelationshipCollection {
    /// The related model type.
    public typealias PersistentElement = Wrapped.PersistentElement

    /// `nil` for nil, the wrapped collection otherwise.
    public init(_$models models: [Wrapped.PersistentElement]?) { self = models.map { Wrapped(_$models: $0) } }

    /// The wrapped collection's models, or nil.
    public var _$models: [Wrapped.PersistentElement]? { self?._$models }
}
