import Foundation

/// Reading and writing relationship properties: the overloads that the code `@Model` generates
/// calls, chosen by the type checker from the property's type (`T`, `T?`, `[T]`, `[T]?`).
extension PersistentModel {
    /// This model's storage and the relationship property at a `schemaMetadata` position of
    /// the class `Self` (counted from its first own property).
    private func relationship(at index: Int) -> (AnyModelStorage, PropertyLayout)? {
        let storage = storageBase
        return storage.relationshipProperty(at: storage.position(of: index, declaredIn: ObjectIdentifier(Self.self))).map { (storage, $0) }
    }

    /// The position `@Model` gives a property of `Self` (counted from its first own property).
    private func ownIndex(_ property: PropertyLayout) -> Int {
        property.index - (storageBase.layout?.indexBase(of: ObjectIdentifier(Self.self)) ?? 0)
    }

    /// This model's storage and the relationship property a key path names.
    private func relationship(for keyPath: AnyKeyPath) -> (AnyModelStorage, PropertyLayout)? {
        let storage = storageBase
        return storage.relationshipProperty(for: keyPath).map { (storage, $0) }
    }

    private func ownReference(_ storage: AnyModelStorage) -> RelatedRef {
        RelatedRef(model: self, storage: storage)
    }

    // MARK: Generated accessors

    /// Reads a non-optional to-one relationship (used by the code `@Model` generates). A model
    /// whose related row is gone reads as a detached instance holding default values (and a log
    /// line), never a crash.
    public func _$getValue<Value: PersistentModel>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>) -> Value {
        guard let (storage, property) = relationship(at: index) else { return persistentBackingData.getValue(forKey: key()) }
        if let model = storage.relatedOne(property)?.model as? Value { return model }
        storage.context?.log("\(storage.entityName).\(property.name) is not optional but holds no \(Value.self); reading a detached instance")
        return Value._$detachedInstance()
    }

    /// Reads an optional to-one relationship (used by the code `@Model` generates).
    public func _$getValue<Value: PersistentModel>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value?>) -> Value? {
        guard let (storage, property) = relationship(at: index) else { return persistentBackingData.getValue(forKey: key()) }
        return storage.relatedOne(property)?.model as? Value
    }

    /// Reads a to-many relationship (used by the code `@Model` generates).
    ///
    /// Inlined into the model's module, so that the array of related models is made by code
    /// specialized for their type (``RelatedRef/models(_:of:)``).
    @inlinable
    public func _$getValue<Value: RelationshipCollection>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>) -> Value {
        guard let refs = _$relatedModels(at: index) else { return persistentBackingData.getValue(forKey: key()) }
        return Value(_$models: refs.map { RelatedRef.models($0, of: Value.PersistentElement.self) })
    }

    /// The models of the to-many relationship at a `schemaMetadata` position, loading them on
    /// first read and leaving out those whose deletion has been saved: nil when the position is
    /// not one of OpenSwiftData's relationships, `.some(nil)` for the `nil` of an optional
    /// collection.
    @usableFromInline
    func _$relatedModels(at index: Int) -> [RelatedRef]?? {
        guard let (storage, property) = relationship(at: index) else { return nil }
        return .some(storage.relatedMany(property))
    }

    /// Reads a to-many relationship of a `Codable` model type (used by the code `@Model`
    /// generates).
    public func _$getValue<Value: RelationshipCollection & Decodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>) -> Value {
        func collection<C: RelationshipCollection>(_ key: KeyPath<Self, C>) -> C { _$getValue(at: index, forKey: key) }
        return collection(key())
    }

    /// Writes a non-optional to-one relationship and its inverse (used by the code `@Model`
    /// generates).
    public func _$setValue<Value: PersistentModel>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>, to newValue: Value) {
        guard let (storage, property) = relationship(at: index) else { return persistentBackingData.setValue(forKey: key(), to: newValue) }
        storage.setRelatedOne(property, to: RelatedRef(newValue), owner: ownReference(storage))
    }

    /// Writes an optional to-one relationship and its inverse (used by the code `@Model`
    /// generates).
    public func _$setValue<Value: PersistentModel>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value?>, to newValue: Value?) {
        guard let (storage, property) = relationship(at: index) else { return persistentBackingData.setValue(forKey: key(), to: newValue) }
        storage.setRelatedOne(property, to: newValue.map(RelatedRef.init), owner: ownReference(storage))
    }

    /// Writes a to-many relationship and the inverse of every model that left or joined it
    /// (used by the code `@Model` generates).
    public func _$setValue<Value: RelationshipCollection>(at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>, to newValue: Value) {
        guard let (storage, property) = relationship(at: index) else { return persistentBackingData.setValue(forKey: key(), to: newValue) }
        storage.setRelatedMany(property, to: RelatedRef.list(newValue), owner: ownReference(storage))
    }

    /// Writes a to-many relationship of a `Codable` model type (used by the code `@Model`
    /// generates).
    public func _$setValue<Value: RelationshipCollection & Encodable>(
        at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>, to newValue: Value
    ) {
        func collection<C: RelationshipCollection>(_ key: KeyPath<Self, C>, _ value: C) { _$setValue(at: index, forKey: key, to: value) }
        collection(key(), newValue)
    }

    // MARK: Key-path access

    /// Reads a non-optional to-one relationship.
    public func getValue<Value: PersistentModel>(forKey key: KeyPath<Self, Value>) -> Value {
        guard let (_, property) = relationship(for: key) else { return persistentBackingData.getValue(forKey: key) }
        return _$getValue(at: ownIndex(property), forKey: key)
    }

    /// Reads an optional to-one relationship.
    public func getValue<Value: PersistentModel>(forKey key: KeyPath<Self, Value?>) -> Value? {
        guard let (_, property) = relationship(for: key) else { return persistentBackingData.getValue(forKey: key) }
        return _$getValue(at: ownIndex(property), forKey: key)
    }

    /// Reads a to-many relationship.
    public func getValue<Value: RelationshipCollection>(forKey key: KeyPath<Self, Value>) -> Value {
        guard let (_, property) = relationship(for: key) else { return persistentBackingData.getValue(forKey: key) }
        return _$getValue(at: ownIndex(property), forKey: key)
    }

    /// Writes a non-optional to-one relationship and its inverse.
    public func setValue<Value: PersistentModel>(forKey key: KeyPath<Self, Value>, to newValue: Value) {
        guard let (_, property) = relationship(for: key) else { return persistentBackingData.setValue(forKey: key, to: newValue) }
        _$setValue(at: ownIndex(property), forKey: key, to: newValue)
    }

    /// Writes an optional to-one relationship and its inverse.
    public func setValue<Value: PersistentModel>(forKey key: KeyPath<Self, Value?>, to newValue: Value?) {
        guard let (_, property) = relationship(for: key) else { return persistentBackingData.setValue(forKey: key, to: newValue) }
        _$setValue(at: ownIndex(property), forKey: key, to: newValue)
    }

    /// Writes a to-many relationship and its inverses.
    public func setValue<Value: RelationshipCollection>(forKey key: KeyPath<Self, Value>, to newValue: Value) {
        guard let (_, property) = relationship(for: key) else { return persistentBackingData.setValue(forKey: key, to: newValue) }
        _$setValue(at: ownIndex(property), forKey: key, to: newValue)
    }

    /// An instance registered nowhere, holding declared defaults (or empty values): what a
    /// non-optional relationship whose row is gone reads as.
    static func _$detachedInstance() -> Self {
        let storage = ModelStorage<Self>(for: Self.self)
        if let layout = storage.layout, let values = storage.values {
            for property in layout.properties {
                if let value = property.fallbackValue { values.storeBoxed(property.index, value) }
            }
        }
        return Materialization.run(for: Self.self) { Self(backingData: storage) }
    }
}

/// The writes of relationship values by a model's initializer, through its init accessors
/// (used by the code `@Model` generates). The model cannot be named there yet, so inverses are
/// updated when it is next used (inserted, read or written through).
extension PersistentModel {
    /// Writes a non-optional to-one relationship from an initializer.
    public static func _$initializeValue<Value: PersistentModel>(
        _ data: inout any BackingData<Self>, at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>, to newValue: Value
    ) {
        guard _$prepareBackingData(&data) else { return }
        guard let (storage, property) = relationship(of: data, at: index) else { return data.setValue(forKey: key(), to: newValue) }
        storage.initializeRelationship(property, ToOneSlot.loaded(RelatedRef(newValue)))
    }

    /// Writes an optional to-one relationship from an initializer.
    public static func _$initializeValue<Value: PersistentModel>(
        _ data: inout any BackingData<Self>, at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value?>, to newValue: Value?
    ) {
        guard _$prepareBackingData(&data) else { return }
        guard let (storage, property) = relationship(of: data, at: index) else { return data.setValue(forKey: key(), to: newValue) }
        storage.initializeRelationship(property, ToOneSlot.loaded(newValue.map(RelatedRef.init)))
    }

    /// Writes a to-many relationship from an initializer.
    public static func _$initializeValue<Value: RelationshipCollection>(
        _ data: inout any BackingData<Self>, at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>, to newValue: Value
    ) {
        guard _$prepareBackingData(&data) else { return }
        guard let (storage, property) = relationship(of: data, at: index) else { return data.setValue(forKey: key(), to: newValue) }
        storage.initializeRelationship(property, ToManySlot.loaded(RelatedRef.list(newValue)))
    }

    /// Writes a to-many relationship of a `Codable` model type from an initializer.
    public static func _$initializeValue<Value: RelationshipCollection & Encodable>(
        _ data: inout any BackingData<Self>, at index: Int, forKey key: @autoclosure () -> KeyPath<Self, Value>, to newValue: Value
    ) {
        func collection<C: RelationshipCollection>(_ key: KeyPath<Self, C>, _ value: C) {
            _$initializeValue(&data, at: index, forKey: key, to: value)
        }
        collection(key(), newValue)
    }

    private static func relationship(of data: any BackingData<Self>, at index: Int) -> (AnyModelStorage, PropertyLayout)? {
        guard let storage = (data as AnyObject) as? AnyModelStorage else { return nil }
        return storage.relationshipProperty(at: storage.position(of: index, declaredIn: ObjectIdentifier(Self.self))).map { (storage, $0) }
    }
}
