/// Where a model's persisted values live. ``Model()`` generates the code that reads and writes
/// through it; OpenSwiftData supplies the implementation.
///
/// The requirements are SwiftData's alone: the fast paths the code `@Model` generates take
/// (reads and writes by position, the stand-in check) are OpenSwiftData's own storage's, reached
/// through `_$`-prefixed static entry points of ``PersistentModel``, so that a hand-written
/// backing data needs nothing beyond Apple's protocol.
///
/// Unlike SwiftData's, the protocol is class-bound: backing data is shared state by nature, and a
/// class existential costs a model 16 bytes instead of 40.
public protocol BackingData<Model>: AnyObject {
    /// The model type whose values this holds.
    associatedtype Model: PersistentModel
    /// Creates empty backing data for a new, unregistered model.
    init(for modelType: Model.Type)
    /// The identifier of the model, once it has one.
    var persistentModelID: PersistentIdentifier? { get set }
    /// Information about the backing store.
    var metadata: Any { get }
    /// Reads a value.
    func getValue<Value: Decodable>(forKey key: KeyPath<Model, Value>) -> Value
    /// Writes a value.
    func setValue<Value: Encodable>(forKey key: KeyPath<Model, Value>, to newValue: Value)
    /// Reads a non-optional to-one relationship.
    func getValue<Value: PersistentModel>(forKey key: KeyPath<Model, Value>) -> Value
    /// Reads an optional to-one relationship.
    func getValue<Value: PersistentModel>(forKey key: KeyPath<Model, Value?>) -> Value?
    /// Reads a to-many relationship.
    func getValue<Value: RelationshipCollection>(forKey key: KeyPath<Model, Value>) -> Value
    /// Writes a non-optional to-one relationship.
    func setValue<Value: PersistentModel>(forKey key: KeyPath<Model, Value>, to newValue: Value)
    /// Writes an optional to-one relationship.
    func setValue<Value: PersistentModel>(forKey key: KeyPath<Model, Value?>, to newValue: Value?)
    /// Writes a to-many relationship.
    func setValue<Value: RelationshipCollection>(forKey key: KeyPath<Model, Value>, to newValue: Value)
}
