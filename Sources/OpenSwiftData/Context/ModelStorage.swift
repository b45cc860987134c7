import Foundation
import GRDB

/// The backing data of one model instance: its persisted values, the values last read from or
/// written to the store (for rollback and change tracking), and its registration state.
///
/// Not `Sendable`: like the model that owns it, it is confined to its context's isolation.
@usableFromInline
class AnyModelStorage: RowIdentified {
    enum State: UInt8 {
        /// Created, not inserted in any context.
        case unregistered
        /// Inserted, not yet saved.
        case inserted
        /// Saved or fetched, registered in a context.
        case registered
        /// Marked for deletion at the next save.
        case deleted
        /// Deleted, and the deletion saved: the row is gone.
        case removed
    }

    /// The entity layout (nil for a placeholder or a model type that cannot be stored).
    final let layout: EntityLayout?
    /// Current values (nil for a placeholder or a model type that cannot be stored).
    final var values: ValueBuffer?
    /// The values last read from or written to the store; shares `values` until the first change.
    final var committed: ValueBuffer?
    /// Indexes of the properties changed since the last save.
    final var changedProperties: Set<Int> = []
    final var state: State = .unregistered
    /// The container's save generation (truncated) when the values were last read from the
    /// store. Declared next to `state`, it fits in that field's padding.
    final var loadedGeneration: UInt32 = 0
    /// The context the model is registered in, through the link all of its models share.
    final var context: ModelContext? {
        get { contextLink?.context }
        set { contextLink = newValue?.link }
    }
    final var contextLink: ContextLink?
    /// The container of the context that registered the model: relationships of a model whose
    /// context is gone still load through it.
    final var container: ModelContainer?
    final var primaryKey: Int64?
    /// The identifier of the model's store: its container's (no copy per model), or one set
    /// on a model without a container (a placeholder for a vanished row).
    final var storeIdentifier: String? {
        get { container?.store.identifier ?? extras?.storeIdentifier }
        set {
            guard newValue != container?.store.identifier else { return }
            if newValue == nil, extras == nil { return }
            extensions().storeIdentifier = newValue
        }
    }
    /// Rarely used state, allocated on demand.
    final var extras: Extras?

    /// State that most models never need.
    final class Extras {
        /// The temporary identifier of a model not saved yet, once asked for.
        var temporaryID: UUID?
        /// The store identifier of a model without a container.
        var storeIdentifier: String?
        /// Values for key paths the layout does not know (a model type that cannot be stored).
        var looseValues: [AnyKeyPath: Any] = [:]
        /// Relationships set by the class's initializer, before the model itself could be
        /// named: their inverses are updated when the model is next used (see
        /// ``AnyModelStorage/applyPendingInverses(owner:)``).
        var pendingInverses: [Int] = []
        /// The context that loads relationships once the registering context is gone.
        var loadingContext: ModelContext?
    }

    /// The context that loads this model's relationships: its own, or, when that is gone, a
    /// private context of the same container (related models then load as separate instances).
    final func loadingContext() -> ModelContext? {
        if let context { return context }
        if let existing = extras?.loadingContext { return existing }
        guard let container else { return nil }
        let created = ModelContext(container)
        extensions().loadingContext = created
        return created
    }

    /// The primary key, unless the row is being or has been deleted.
    final var rowKey: Int64? {
        switch state {
        case .deleted, .removed: return nil
        case .unregistered, .inserted, .registered: return primaryKey
        }
    }

    init(layout: EntityLayout?, values: ValueBuffer?) {
        self.layout = layout
        self.values = values
    }

    final var entityName: String { layout?.name ?? "" }

    final var hasChanges: Bool {
        switch state {
        case .inserted, .deleted: return true
        case .registered: return !changedProperties.isEmpty
        case .unregistered, .removed: return false
        }
    }

    final var temporaryID: UUID? {
        get { extras?.temporaryID }
        set {
            if extras == nil, newValue == nil { return }
            extensions().temporaryID = newValue
        }
    }

    final func extensions() -> Extras {
        if let extras { return extras }
        let created = Extras()
        extras = created
        return created
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
        // A change after an undo is a change of its own (see `ModelContext.registerUndo`).
        if let context, !context.undoneModels.isEmpty { context.undoneModels.remove(ObjectIdentifier(self)) }
        let first = changedProperties.isEmpty
        changedProperties.insert(index)
        if first { context?.storageDidChange(self) }
    }

    /// The value buffer, copied first if it is shared with the committed values.
    final func writableValues() -> ValueBuffer? {
        if !isKnownUniquelyReferenced(&values) { values = values?.copy() }
        return values
    }

    /// Puts back the values last read from or written to the store.
    final func revert() {
        if let committed { values = committed }
        changedProperties.removeAll()
    }

    /// Reads the columns a partially fetched model lacks from its row, into the current and the
    /// committed values; false when there is nothing to read (no row, no missing column) or the
    /// read fails (the value then falls back to its default, as for a vanished row).
    final func loadMissingColumns() -> Bool {
        guard let layout, let values, let primaryKey, let container, state == .registered || state == .deleted else { return false }
        let missing = layout.columns.filter { !values.isInitialized($0.index) }
        guard !missing.isEmpty else { return false }
        let query = SelectBuilder.columns(missing.map(\.name), of: layout.table, primaryKey: primaryKey)
        let buffers = committed.map { $0 === values ? [values] : [values, $0] } ?? [values]
        do {
            return try container.store.read { db in
                let statement = try db.makeStatement(sql: query.sql)
                statement.setUncheckedArguments(query.arguments)
                let cursor = try Row.fetchCursor(statement)
                guard try cursor.next() != nil else { return false }
                for buffer in buffers {
                    for (offset, property) in missing.enumerated() where !buffer.isInitialized(property.index) {
                        try buffer.withSlot(property.index) { slot in
                            try property.codec.readIntoSlot(statement.sqliteStatement, CInt(offset), slot)
                        }
                        buffer.markInitialized(property.index)
                    }
                }
                return true
            }
        } catch {
            return false
        }
    }

    /// Takes the values of `columns` from a freshly read row (for a model without unsaved
    /// changes, whose current and committed values are one buffer), resets loaded to-many
    /// relationships so they load again, and returns the properties whose value changed.
    final func refresh(from fresh: ValueBuffer, columns: [PropertyLayout]) -> [PropertyLayout] {
        guard let layout, let values else { return [] }
        var changed: [PropertyLayout] = []
        let slots = layout.slots
        for property in columns where fresh.isInitialized(property.index) {
            let same: Bool
            if values.isInitialized(property.index) {
                let old = values.withSlot(property.index) { try? property.codec.encodeSlot(UnsafeRawPointer($0)) }
                let new = fresh.withSlot(property.index) { try? property.codec.encodeSlot(UnsafeRawPointer($0)) }
                same = old != nil && old == new
            } else {
                same = false
            }
            guard !same else { continue }
            let witness = slots.witnesses[property.index]
            values.withSlot(property.index) { destination in
                if values.isInitialized(property.index) { witness.destroy(destination) }
                fresh.withSlot(property.index) { source in witness.copy(UnsafeRawPointer(source), destination) }
            }
            values.markInitialized(property.index)
            changed.append(property)
        }
        for property in layout.relationships where property.relationship?.isToMany == true && values.isInitialized(property.index) {
            if case .loaded = toManySlot(property) {
                values.store(property.index, ToManySlot.notLoaded)
                changed.append(property)
            }
        }
        committed = values
        return changed
    }

    /// Makes the current values the committed ones after a successful save.
    final func commit() {
        committed = values
        changedProperties.removeAll()
    }
}

/// The ``BackingData`` implementation of OpenSwiftData.
@usableFromInline
final class ModelStorage<Model: PersistentModel>: AnyModelStorage, BackingData {
    /// The shared stand-in a model holds before its first value is set: writes are ignored.
    private let isPlaceholder: Bool

    @usableFromInline
    var _isInert: Bool { isPlaceholder }

    @usableFromInline
    init(for modelType: Model.Type) {
        isPlaceholder = false
        let layout = try? EntityLayout.of(Model.self)
        super.init(layout: layout, values: layout.map(ValueBuffer.make))
    }

    /// The shared stand-in (see ``PersistentModel/_$makeInertBackingData()``).
    init(inertFor modelType: Model.Type) {
        isPlaceholder = true
        super.init(layout: nil, values: nil)
    }

    /// The storage of a fetched row.
    @usableFromInline
    init(layout: EntityLayout, values: ValueBuffer) {
        isPlaceholder = false
        super.init(layout: layout, values: values)
        committed = values
    }

    @usableFromInline
    var persistentModelID: PersistentIdentifier? {
        get {
            // The shared stand-in is never mutated: it has no identity of its own.
            if isPlaceholder { return PersistentIdentifier(storeIdentifier: nil, entityName: Schema.entityName(of: Model.self), key: .temporary(UUID())) }
            return ensureIdentifier()
        }
        set {
            guard let newValue, !isPlaceholder else { return }
            if let row = newValue.rowID {
                primaryKey = row
                storeIdentifier = newValue.storeIdentifier
            } else if case let .temporary(uuid) = newValue.id.key {
                temporaryID = uuid
            }
        }
    }

    @usableFromInline
    var metadata: Any { layout as Any }

    @usableFromInline
    func getValue<Value: Decodable>(forKey key: KeyPath<Model, Value>) -> Value {
        if let layout, let index = layout.propertyIndex(of: key) {
            return _getValue(at: index, forKey: key)
        }
        return slowValue(forKey: key, at: nil)
    }

    @usableFromInline
    func setValue<Value: Encodable>(forKey key: KeyPath<Model, Value>, to newValue: Value) {
        guard !isPlaceholder else { return }
        guard let layout, let index = layout.propertyIndex(of: key) else {
            extensions().looseValues[key] = newValue
            return
        }
        _setValue(at: index, forKey: key, to: newValue)
    }

    // Relationship access through the backing data alone: the model is not at hand, so a write's
    // inverses are updated when the model is next used (as for initializers).

    @usableFromInline
    func getValue<Value: PersistentModel>(forKey key: KeyPath<Model, Value>) -> Value {
        if let property = relationshipProperty(for: key), let model = relatedOne(property)?.model as? Value { return model }
        return Value._$detachedInstance()
    }

    @usableFromInline
    func getValue<Value: PersistentModel>(forKey key: KeyPath<Model, Value?>) -> Value? {
        relationshipProperty(for: key).flatMap { relatedOne($0)?.model as? Value }
    }

    @usableFromInline
    func getValue<Value: RelationshipCollection>(forKey key: KeyPath<Model, Value>) -> Value {
        let refs = relationshipProperty(for: key).flatMap { storedMany($0) }
        return Value(_$models: refs.map { RelatedRef.models($0, of: Value.PersistentElement.self) })
    }

    @usableFromInline
    func setValue<Value: PersistentModel>(forKey key: KeyPath<Model, Value>, to newValue: Value) {
        guard let property = relationshipProperty(for: key) else { return }
        initializeRelationship(property, ToOneSlot.loaded(RelatedRef(newValue)))
    }

    @usableFromInline
    func setValue<Value: PersistentModel>(forKey key: KeyPath<Model, Value?>, to newValue: Value?) {
        guard let property = relationshipProperty(for: key) else { return }
        initializeRelationship(property, ToOneSlot.loaded(newValue.map(RelatedRef.init)))
    }

    @usableFromInline
    func setValue<Value: RelationshipCollection>(forKey key: KeyPath<Model, Value>, to newValue: Value) {
        guard let property = relationshipProperty(for: key) else { return }
        initializeRelationship(property, ToManySlot.loaded(RelatedRef.list(newValue)))
    }

    // `index` is the property's position in `Model.schemaMetadata`, which `@Model` generates
    // from the same member list as the accessors that pass it; the layout keeps that order, and
    // the slot's type is checked before it is used.

    /// The slot at `index` when it holds values of type `Value`.
    @inline(__always)
    private func slot<Value>(_ index: Int, of type: Value.Type) -> SlotInfo? {
        guard let layout, index >= 0, index < layout.slotCount else { return nil }
        let slot = layout.slotInfo[index]
        return slot.type == ObjectIdentifier(Value.self) ? slot : nil
    }

    @usableFromInline
    func _getValue<Value: Decodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Model, Value>) -> Value {
        if let values, let layout, let slot = slot(index, of: Value.self),
           values.isInitialized(index, flagsOffset: layout.slots.flagsOffset) {
            return values.load(offset: slot.offset, as: Value.self)
        }
        // A model fetched with `propertiesToFetch`: read the columns it lacks, then the slot.
        if let layout, let slot = slot(index, of: Value.self), loadMissingColumns(), let values,
           values.isInitialized(index, flagsOffset: layout.slots.flagsOffset) {
            return values.load(offset: slot.offset, as: Value.self)
        }
        return slowValue(forKey: key(), at: index)
    }

    @usableFromInline
    func _slotAddress(at index: Int, type: ObjectIdentifier) -> UnsafeRawPointer? {
        guard let values, let layout, index >= 0, index < layout.slotCount else { return nil }
        let slot = layout.slotInfo[index]
        guard slot.type == type, values.isInitialized(index, flagsOffset: layout.slots.flagsOffset) else { return nil }
        // A managed buffer's elements never move while it lives; `values` keeps it alive until
        // the next write, which replaces or mutates it (the protocol's stated validity).
        return values.withUnsafeMutablePointerToElements { UnsafeRawPointer($0) + slot.offset }
    }

    @usableFromInline
    func _setValue<Value: Encodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Model, Value>, to newValue: Value) {
        guard !isPlaceholder else { return }
        guard slot(index, of: Value.self) != nil, let values = writableValues() else {
            extensions().looseValues[key()] = newValue
            return
        }
        values.store(index, newValue)
        noteChange(index)
    }

    /// A value that is not in its slot: a loose value, the declared default, or nil.
    private func slowValue<Value>(forKey key: KeyPath<Model, Value>, at index: Int?) -> Value {
        if let value = extras?.looseValues[key] as? Value { return value }
        if let index, let layout, index >= 0, index < layout.properties.count {
            if let value = layout.properties[index].defaultValue as? Value { return value }
            if let value = layout.properties[index].codec.emptyValue as? Value { return value }
        }
        if let none = (Value.self as? any _OptionalType.Type)?._none as? Value { return none }
        // Swift's definite initialization runs every property's init accessor before the model
        // can be read, and fetched models get every value decoded, so no read reaches this line.
        fatalError("OpenSwiftData: \(Model.self).\(key) was read before it was given a value")
    }
}
