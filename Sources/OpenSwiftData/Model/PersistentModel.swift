import Foundation
import Observation

/// A class whose instances a ``ModelContext`` persists. Conform by applying ``Model()``.
///
/// Identity follows ``persistentModelID``: two instances are equal when they stand for the same
/// row, and `id` is the persistent identifier unless the class declares its own `id`.
public protocol PersistentModel: AnyObject, Observable, Hashable, Identifiable, SendableMetatype {
    /// The topmost model class of the model's class hierarchy: the class itself for a model
    /// without a model superclass, and that superclass's `Root` for a subclass (which inherits
    /// the conformance).
    associatedtype Root: PersistentModel = Self
    /// Creates an instance around existing backing data, without running the class's own
    /// initializer. The store uses this to materialise fetched rows.
    init(backingData: any BackingData<Self>)
    /// Where the model's persisted values live.
    var persistentBackingData: any BackingData<Self> { get set }
    /// One entry per persisted property, in declaration order.
    static var schemaMetadata: [Schema.PropertyMetadata] { get }
    /// The key-path groups declared with `#Unique`, one uniqueness constraint per group.
    static var _$uniquenessConstraints: [[AnyKeyPath]] { get }
    /// The key-path groups declared with `#Index`, one index per group.
    static var _$indices: [[AnyKeyPath]] { get }
    /// For a subclass of a model class: the key paths of the properties it inherits, rooted at
    /// it (`\Car.name` for `Vehicle.name`), in the superclass's layout order. `@Model`
    /// generates it; empty for a class whose superclass is not a model.
    static var _$inheritedKeyPaths: [AnyKeyPath] { get }
    /// Builds an instance around the storage of a fetched row. A requirement with an inlinable
    /// default, so that each model module gets a copy specialized for its class. It returns
    /// `Self` alone (the storage travels in `row`): a non-final class can satisfy a requirement
    /// that returns `Self`, not one that returns it inside a tuple.
    static func _$materialize(_ row: _$FetchedRow) throws -> Self
    /// Tells the model's observers that the property at `keyPath` changed without going through
    /// its setter (the inverse side of a relationship another model changed). `@Model`
    /// generates it.
    func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath)
    /// The entity's name in an earlier version of the schema, when the class was renamed: a
    /// lightweight migration then renames the entity's table (with its rows) instead of
    /// dropping the old one and creating an empty new one. An OpenSwiftData addition (SwiftData
    /// has no way to rename an entity); nil by default.
    ///
    /// ```swift
    /// @Model final class Journey {   // was `Trip`
    ///     static var originalEntityName: String? { "Trip" }
    ///     var name: String
    ///     init(name: String) { self.name = name }
    /// }
    /// ```
    static var originalEntityName: String? { get }
}

extension PersistentModel {
    /// Makes the storage of a fetched row, reads the row's values into it, and builds an
    /// instance around it.
    ///
    /// No argument can be wrong: only a context makes a ``_$FetchedRow``, for a layout it
    /// checked to be `Self`'s once per fetch (`ModelContext.maker(_:layout:)`), so the storage
    /// made here has the slots of `Self`'s properties without a check per row.
    @inlinable
    public static func _$materialize(_ row: _$FetchedRow) throws -> Self {
        let storage = ModelStorage<Self>.fetched(row.layout)
        try row.fill(storage)
        row.storage = storage
        return Self(backingData: storage)
    }

    /// The entity was not renamed.
    public static var originalEntityName: String? { nil }

    /// Nothing observes a class without `@Model`'s registrar.
    public func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {}

    /// No `#Unique` constraints.
    public static var _$uniquenessConstraints: [[AnyKeyPath]] { [] }
    /// No `#Index` indexes.
    public static var _$indices: [[AnyKeyPath]] { [] }
    /// No inherited properties.
    public static var _$inheritedKeyPaths: [AnyKeyPath] { [] }

    /// The backing data a subclass's initializer wrote its own properties to, taken out of
    /// `staged` (which becomes inert), or nil when it wrote none or they were taken already (used
    /// by the code `@Model` generates for a subclass; a separate call, so that the access to the
    /// subclass's property ends before the values move).
    public static func _$takeInitializedValues(_ staged: inout any BackingData<Self>) -> (any BackingData<Self>)? {
        guard !ModelStorage<Self>.isInert(staged) else { return nil }
        let own = staged
        staged = ModelStorage<Self>.inert(for: Self.self)
        return own
    }

    /// Moves the values a subclass's initializer gave its own properties (kept in backing data
    /// of the subclass's own, since they are set before `super.init`) into the instance's
    /// storage, which then holds every value (used by the code `@Model` generates for a
    /// subclass, on the first use of `persistentBackingData`).
    public static func _$adoptInitializedValues(_ own: (any BackingData<Self>)?, of model: Self) {
        guard let own, let ownStorage = (own as AnyObject) as? AnyModelStorage else { return }
        // The superclass's initializer made storage of its own for the inherited properties
        // (same positions); their values move over, then this storage replaces it.
        if let inherited = (model.persistentBackingData as AnyObject) as? AnyModelStorage, inherited !== ownStorage {
            ownStorage.adoptValues(of: inherited)
        }
        model.persistentBackingData = own
    }

    /// Fresh backing data for a model that is not yet in any context.
    public static func createBackingData<P: PersistentModel>() -> some BackingData<P> {
        ModelStorage<P>(for: P.self)
    }

    /// The shared, inert backing data every new instance starts with (used by the code `@Model`
    /// generates, which keeps one per model class). It stores nothing; the first value written
    /// through ``_$prepareBackingData(_:)`` replaces it with real storage.
    public static func _$makeInertBackingData() -> any BackingData<Self> {
        ModelStorage<Self>.inert(for: Self.self)
    }

    /// Writes a persisted value from an initializer, through its init accessor (used by the code
    /// `@Model` generates, where `self` cannot be named yet): makes `data` real storage first
    /// (see ``_$prepareBackingData(_:)``).
    @inlinable
    public static func _$initializeValue<Value: Encodable>(
        _ data: inout any BackingData<Self>, at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>, to newValue: Value
    ) {
        guard _$prepareBackingData(&data) else { return }
        // The exact type checked first, so the downcast cannot be wrong.
        if ObjectIdentifier(type(of: data)) == ObjectIdentifier(ModelStorage<Self>.self) {
            let storage = unsafeDowncast(data, to: ModelStorage<Self>.self)
            storage._setValue(at: storage.position(of: index, declaredIn: ObjectIdentifier(Self.self)), forKey: key(), to: newValue)
        } else {
            data.setValue(forKey: key(), to: newValue)
        }
    }

    /// Makes `data` real storage before an init accessor writes the first value, and returns
    /// whether the value should be written: not while a fetched row of this model type is being
    /// materialised, whose storage is about to replace `data` anyway (used by the code `@Model`
    /// generates).
    @inlinable
    public static func _$prepareBackingData(_ data: inout any BackingData<Self>) -> Bool {
        guard ModelStorage<Self>.isInert(data) else { return true }
        if Materialization.isInProgress(for: ObjectIdentifier(Self.self)) { return false }
        data = ModelStorage<Self>.make(for: Self.self)
        return true
    }

    /// The stored value of a `let` property, for the class's `init(backingData:)` (used by the
    /// code `@Model` generates; `index` is the property's position among the class's own
    /// persisted properties). A fetched model's storage holds every `let` (fetches always read
    /// their columns); a model whose row has vanished gets the declared default or empty value,
    /// as its other properties do.
    public static func _$constantValue<Root: PersistentModel, Value>(
        _ data: any BackingData<Root>, at index: Int, forKey key: KeyPath<Self, Value>
    ) -> Value {
        if let storage = (data as AnyObject) as? AnyModelStorage {
            let position = storage.position(of: index, declaredIn: ObjectIdentifier(Self.self))
            if let address = storage.slotAddress(at: position, type: ObjectIdentifier(Value.self)) {
                let value = address.load(as: Value.self)
                _fixLifetime(storage)
                return value
            }
            if let layout = storage.layout, position >= 0, position < layout.properties.count,
                let value = layout.properties[position].fallbackValue as? Value
            {
                return value
            }
            if let value = storage.extras?.looseValues[key] as? Value { return value }
        }
        if let none = (Value.self as? any _OptionalType.Type)?._none as? Value { return none }
        // Only OpenSwiftData's storage reaches `init(backingData:)` with a layout, and it holds a
        // value for every `let` of a fetched or placeholder model whose type has an empty value.
        fatalError("OpenSwiftData: \(Self.self).\(key) has no stored value to initialize it with")
    }

    /// The model's identifier: temporary until its first save, permanent afterwards.
    public var persistentModelID: PersistentIdentifier {
        storageBase.ensureIdentifier()
    }

    /// The context the model is registered in, or nil before insertion and after its deletion
    /// has been saved.
    public var modelContext: ModelContext? { storageBase.context }

    /// Whether the model has changes not yet saved (including being a pending insert).
    public var hasChanges: Bool { storageBase.hasChanges }

    /// Whether the model is marked for deletion at the next save.
    public var isDeleted: Bool {
        let state = storageBase.state
        return state == .deleted || state == .removed
    }

    /// Two models are equal when they stand for the same row.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs === rhs || lhs.persistentModelID == rhs.persistentModelID
    }

    /// Hashes the persistent identifier.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(persistentModelID)
    }

    /// Reads a persisted value.
    public func getValue<Value: Decodable>(forKey key: KeyPath<Self, Value>) -> Value {
        persistentBackingData.getValue(forKey: key)
    }

    /// Reads the persisted value at a `schemaMetadata` position (used by the code `@Model`
    /// generates).
    ///
    /// Inlined into the model's module, so that a value stored in place is copied out with code
    /// specialized for its type; anything else goes through the backing data's generic path.
    @inlinable
    public func _$getValue<Value: Decodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>) -> Value {
        let data = persistentBackingData
        // OpenSwiftData's own storage, read in place; nothing writes to it before the load,
        // and `data` is kept alive until after it. The exact type is compared first, so the
        // downcast cannot be wrong.
        if ObjectIdentifier(type(of: data)) == ObjectIdentifier(ModelStorage<Self>.self) {
            let storage = unsafeDowncast(data, to: ModelStorage<Self>.self)
            if let address = storage.slotAddress(ofOwn: index, declaredIn: ObjectIdentifier(Self.self), type: ObjectIdentifier(Value.self)) {
                let value = address.load(as: Value.self)
                _fixLifetime(data)
                return value
            }
            return storage._getValue(at: storage.position(of: index, declaredIn: ObjectIdentifier(Self.self)), forKey: key())
        }
        // A superclass's property of a subclass instance (whose storage is the subclass's).
        if let storage = (data as AnyObject) as? AnyModelStorage,
            let address = storage.slotAddress(
                at: storage.position(of: index, declaredIn: ObjectIdentifier(Self.self)), type: ObjectIdentifier(Value.self))
        {
            let value = address.load(as: Value.self)
            _fixLifetime(data)
            return value
        }
        return data.getValue(forKey: key())
    }

    /// Writes the persisted value at a `schemaMetadata` position (used by the code `@Model`
    /// generates).
    @inlinable
    public func _$setValue<Value: Encodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>, to newValue: Value) {
        let data = persistentBackingData
        // OpenSwiftData's own storage, written without a protocol witness (the exact type is
        // compared first, so the downcast cannot be wrong).
        if ObjectIdentifier(type(of: data)) == ObjectIdentifier(ModelStorage<Self>.self) {
            let storage = unsafeDowncast(data, to: ModelStorage<Self>.self)
            let position = storage.position(of: index, declaredIn: ObjectIdentifier(Self.self))
            if !storage.setSlot(at: position, to: newValue) { storage._setValue(at: position, forKey: key(), to: newValue) }
            return
        }
        // A superclass's property of a subclass instance (whose storage is the subclass's).
        if let storage = (data as AnyObject) as? AnyModelStorage,
            storage.setSlotOfAnyModel(at: storage.position(of: index, declaredIn: ObjectIdentifier(Self.self)), to: newValue)
        {
            return
        }
        data.setValue(forKey: key(), to: newValue)
    }

    /// Writes a persisted value (used by the code `@Model` generates).
    public func setValue<Value: Encodable>(forKey key: KeyPath<Self, Value>, to newValue: Value) {
        persistentBackingData.setValue(forKey: key, to: newValue)
    }

    /// OpenSwiftData's storage behind this model. A model whose backing data is not ours (a
    /// hand-written `BackingData`) gets a detached, empty storage: inserting it then fails at
    /// save with a typed error instead of silently dropping its values.
    var storageBase: AnyModelStorage {
        let storage = ownStorage
        if storage.extras?.pendingInverses.isEmpty == false {
            storage.applyPendingInverses(owner: RelatedRef(model: self, storage: storage))
        }
        return storage
    }

    /// The storage itself (see ``storageBase``), made real if the model still holds the shared
    /// stand-in.
    private var ownStorage: AnyModelStorage {
        let data = persistentBackingData
        // OpenSwiftData's own storage, the common case: a class cast and a look at its header,
        // without the protocol witness the stand-in check below costs (this runs on every
        // relationship read and for every model a prefetch fills). Through `AnyObject`: a cast
        // of the `any BackingData<Self>` existential itself would look its (extended
        // existential) metadata up on every call.
        if let storage = (data as AnyObject) as? AnyModelStorage, !storage.isPlaceholder { return storage }
        if ModelStorage<Self>.isInert(data) {
            // A model with no persisted property set yet still holds the shared stand-in.
            persistentBackingData = ModelStorage<Self>(for: Self.self)
        }
        if let storage = (persistentBackingData as AnyObject) as? AnyModelStorage { return storage }
        return ModelStorage<Self>(for: Self.self)
    }
}

extension PersistentModel where ID == PersistentIdentifier {
    /// The persistent identifier, unless the class declares its own `id`.
    public var id: PersistentIdentifier { persistentModelID }
}
