/// Where a model's persisted values live. ``Model()`` generates the code that reads and writes
/// through it; OpenSwiftData supplies the implementation.
public protocol BackingData<Model> {
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
}
