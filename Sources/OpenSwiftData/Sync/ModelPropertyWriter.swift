import Foundation

/// Sets a model's properties through their key paths, as the app's own code would: the
/// generated setters record the change, tell Observation and keep inverses.
enum ModelPropertyWriter {
    /// Sets an attribute or to-one relationship to a boxed value of the property's type (a
    /// model, or nil, for a to-one). False when the value does not fit.
    static func set(_ model: any PersistentModel, _ keyPath: AnyKeyPath, to value: Any?) -> Bool {
        func open<M: PersistentModel>(_ model: M) -> Bool {
            func typed<V>(_ type: V.Type) -> Bool {
                guard let keyPath = keyPath as? ReferenceWritableKeyPath<M, V> else { return false }
                let converted: V?
                if let value {
                    converted = value as? V
                } else {
                    converted = (Optional<Any>.none as Any) as? V
                }
                guard let converted else { return false }
                model[keyPath: keyPath] = converted
                return true
            }
            return _openExistential(Swift.type(of: keyPath).valueType, do: typed)
        }
        return open(model)
    }

    /// Adds and removes related models of a to-many relationship.
    static func editLinks(_ model: any PersistentModel, _ keyPath: AnyKeyPath, adding: [any PersistentModel], removing: [any PersistentModel]) -> Bool
    {
        func open<M: PersistentModel>(_ model: M) -> Bool {
            func typed<V>(_ type: V.Type) -> Bool {
                guard let keyPath = keyPath as? ReferenceWritableKeyPath<M, V>,
                    let collection = model[keyPath: keyPath] as? any RelationshipCollection,
                    let edited = edit(collection, adding: adding, removing: removing) as? V
                else { return false }
                model[keyPath: keyPath] = edited
                return true
            }
            return _openExistential(Swift.type(of: keyPath).valueType, do: typed)
        }
        return open(model)
    }

    /// The related models of a to-many relationship (nil when the key path names none).
    static func linkedModels(_ model: any PersistentModel, _ keyPath: AnyKeyPath) -> [any PersistentModel]? {
        func open<M: PersistentModel>(_ model: M) -> [any PersistentModel]? {
            guard let collection = model[keyPath: keyPath] as? any RelationshipCollection else { return nil }
            return models(of: collection)
        }
        return open(model)
    }

    private static func models<C: RelationshipCollection>(of collection: C) -> [any PersistentModel] {
        (collection._$models ?? []).map { $0 as any PersistentModel }
    }

    /// Sets a to-many relationship to its empty value (`[]`, or nil for an optional collection).
    static func setEmptyCollection(_ model: any PersistentModel, _ keyPath: AnyKeyPath) -> Bool {
        guard let collection = Swift.type(of: keyPath).valueType as? any RelationshipCollection.Type else { return false }
        func empty<C: RelationshipCollection>(_ type: C.Type) -> Any { C(_$models: nil) }
        return set(model, keyPath, to: empty(collection))
    }

    private static func edit<C: RelationshipCollection>(_ collection: C, adding: [any PersistentModel], removing: [any PersistentModel]) -> Any {
        var models = collection._$models ?? []
        let removed = Set(removing.map { ObjectIdentifier($0 as AnyObject) })
        models.removeAll { removed.contains(ObjectIdentifier($0 as AnyObject)) }
        var present = Set(models.map { ObjectIdentifier($0 as AnyObject) })
        for case let model as C.PersistentElement in adding where present.insert(ObjectIdentifier(model as AnyObject)).inserted {
            models.append(model)
        }
        return C(_$models: models)
    }

    /// A new model's storage for an entity's layout, every slot empty: its values are decoded
    /// into the slots before ``makeModel(_:storage:)`` gives it its model (as a fetch fills a
    /// fetched model's storage).
    static func makeStorage(_ layout: EntityLayout) -> AnyModelStorage {
        func make<M: PersistentModel>(_ type: M.Type) -> AnyModelStorage {
            ModelStorage<M>.makeStorage(layout: layout)
        }
        return make(layout.modelType)
    }

    /// A new model of a type around a storage ``makeStorage(_:)`` made for the type's layout,
    /// ready to be filled further and inserted; nil when the storage is of another model type.
    static func makeModel(_ type: any PersistentModel.Type, storage: AnyModelStorage) -> (any PersistentModel)? {
        func make<M: PersistentModel>(_ type: M.Type) -> (any PersistentModel)? {
            guard let typed = storage as? ModelStorage<M> else { return nil }
            return M(backingData: typed)
        }
        return make(type)
    }
}
