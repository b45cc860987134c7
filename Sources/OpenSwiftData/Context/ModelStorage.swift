import Foundation

/// Marks a property slot whose value has not been set yet.
struct UnsetValue {}

/// The backing data of one model instance: its persisted values, the values last read from or
/// written to the store (for rollback and change tracking), and its registration state.
///
/// Not `Sendable`: like the model that owns it, it is confined to its context's isolation.
class AnyModelStorage {
    enum State {
        /// Created, not inserted in any context.
        case unregistered
        /// Inserted, not yet saved.
        case inserted
        /// Saved or fetched, registered in a context.
        case registered
        /// Marked for deletion at the next save.
        case deleted
    }

    /// The entity layout, resolved on first use (nil only when the model type cannot be stored).
    final var layout: EntityLayout?
    /// Current values, one per persisted property, in `schemaMetadata` order.
    final var values: ContiguousArray<Any>
    /// The values last read from or written to the store.
    final var committed: ContiguousArray<Any>
    /// Values for key paths the layout does not know (a model type that cannot be stored).
    final var looseValues: [AnyKeyPath: Any] = [:]
    /// Indexes of the properties changed since the last save.
    final var changedProperties: Set<Int> = []
    final var state: State = .unregistered
    final weak var context: ModelContext?
    final var primaryKey: Int64?
    final var storeIdentifier: String?
    final var temporaryID: UUID?

    init(layout: EntityLayout?, values: ContiguousArray<Any>) {
        self.layout = layout
        self.values = values
        self.committed = values
    }

    final var entityName: String { layout?.name ?? "" }

    final var hasChanges: Bool {
        switch state {
        case .inserted, .deleted: return true
        case .registered: return !changedProperties.isEmpty
        case .unregistered: return false
        }
    }

    /// The identifier: permanent once the row exists, otherwise a temporary one made on demand.
    final func ensureIdentifier() -> PersistentIdentifier {
        if let primaryKey {
            return PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entityName, key: .row(primaryKey))
        }
        let temporary = temporaryID ?? UUID()
        temporaryID = temporary
        return PersistentIdentifier(storeIdentifier: nil, entityName: entityName, key: .temporary(temporary))
    }

    /// Records a write to property `index` and tells the context the first time the model changes.
    final func noteChange(_ index: Int) {
        guard state == .registered else { return }
        let first = changedProperties.isEmpty
        changedProperties.insert(index)
        if first { context?.storageDidChange(self) }
    }

    /// Puts back the values last read from or written to the store.
    final func revert() {
        values = committed
        changedProperties.removeAll()
    }

    /// Makes the current values the committed ones after a successful save.
    final func commit() {
        committed = values
        changedProperties.removeAll()
    }
}

/// The ``BackingData`` implementation of OpenSwiftData.
final class ModelStorage<Model: PersistentModel>: AnyModelStorage, BackingData {
    /// An inert stand-in used while a fetched row is materialised: writes are ignored, and the
    /// row's storage replaces it before the model's initializer returns.
    private let isPlaceholder: Bool

    init(for modelType: Model.Type) {
        isPlaceholder = false
        let layout = try? EntityLayout.of(Model.self)
        let count = layout?.properties.count ?? 0
        super.init(layout: layout, values: ContiguousArray(repeating: UnsetValue(), count: count))
    }

    convenience init(placeholder: Bool) {
        if placeholder {
            self.init(inertFor: Model.self)
        } else {
            self.init(for: Model.self)
        }
    }

    private init(inertFor modelType: Model.Type) {
        isPlaceholder = true
        super.init(layout: nil, values: [])
    }

    init(layout: EntityLayout, values: ContiguousArray<Any>) {
        isPlaceholder = false
        super.init(layout: layout, values: values)
    }

    var persistentModelID: PersistentIdentifier? {
        get { ensureIdentifier() }
        set {
            guard let newValue else { return }
            if let row = newValue.rowID {
                primaryKey = row
                storeIdentifier = newValue.storeIdentifier
            } else if case let .temporary(uuid) = newValue.id.key {
                temporaryID = uuid
            }
        }
    }

    var metadata: Any { layout as Any }

    func getValue<Value: Decodable>(forKey key: KeyPath<Model, Value>) -> Value {
        if let index = layout?.propertyIndex(of: key) {
            if let value = values[index] as? Value { return value }
            if let value = layout?.properties[index].defaultValue as? Value { return value }
        } else if let value = looseValues[key] as? Value {
            return value
        }
        if let none = (Value.self as? any _OptionalType.Type)?._none as? Value { return none }
        // Swift's definite initialization runs every property's init accessor before the model
        // can be read, and fetched models get every value decoded, so no read reaches this line.
        fatalError("OpenSwiftData: \(Model.self).\(key) was read before it was given a value")
    }

    func setValue<Value: Encodable>(forKey key: KeyPath<Model, Value>, to newValue: Value) {
        guard !isPlaceholder else { return }
        guard let index = layout?.propertyIndex(of: key) else {
            looseValues[key] = newValue
            return
        }
        values[index] = newValue
        noteChange(index)
    }

    // `index` is the property's position in `Model.schemaMetadata`, which `@Model` generates
    // from the same member list as the accessors that pass it; the layout keeps that order.

    func _getValue<Value: Decodable>(forKey key: KeyPath<Model, Value>, at index: Int) -> Value {
        if index >= 0, index < values.count, let value = values[index] as? Value { return value }
        return getValue(forKey: key)
    }

    func _setValue<Value: Encodable>(forKey key: KeyPath<Model, Value>, at index: Int, to newValue: Value) {
        guard !isPlaceholder else { return }
        guard index >= 0, index < values.count else { return setValue(forKey: key, to: newValue) }
        values[index] = newValue
        noteChange(index)
    }
}
