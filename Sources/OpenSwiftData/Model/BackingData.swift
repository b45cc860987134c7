/// Where a model's persisted values live. ``Model()`` generates the code that reads and writes
/// through it; OpenSwiftData supplies the implementation.
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

    /// Reads the value at a position in `Model.schemaMetadata` (the code `@Model` generates knows
    /// it, which spares a key-path lookup; the key path is only made if needed). Defaults to
    /// ``getValue(forKey:)``.
    func _getValue<Value: Decodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Model, Value>) -> Value
    /// Writes the value at a position in `Model.schemaMetadata`. Defaults to
    /// ``setValue(forKey:to:)``.
    func _setValue<Value: Encodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Model, Value>, to newValue: Value)
    /// Whether this is the shared, inert stand-in a model holds before its first value is set.
    var _isInert: Bool { get }
}

extension BackingData {
    /// Backing data is real unless it says otherwise.
    public var _isInert: Bool { false }

    /// Reads through ``getValue(forKey:)``.
    public func _getValue<Value: Decodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Model, Value>) -> Value {
        getValue(forKey: key())
    }

    /// Writes through ``setValue(forKey:to:)``.
    public func _setValue<Value: Encodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Model, Value>, to newValue: Value) {
        setValue(forKey: key(), to: newValue)
    }
}
