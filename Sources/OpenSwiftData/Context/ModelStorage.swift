import Foundation
import GRDB

/// The registration state and bookkeeping of one model's storage, kept in the header of the
/// storage object (whose tail holds the model's values).
@usableFromInline
struct StorageHeader {
    /// The entity layout (nil for a placeholder or a model type that cannot be stored).
    @usableFromInline let layout: EntityLayout?
    /// Where the values last read from or written to the store are.
    var committed: AnyModelStorage.Committed
    var changedProperties: Set<Int> = []
    var contextLink: ContextLink?
    var container: ModelContainer?
    var primaryKey: Int64?
    var extras: AnyModelStorage.Extras?
    var loadedGeneration: UInt32 = 0
    var state: AnyModelStorage.State = .unregistered
    let isPlaceholder: Bool
}

/// The backing data of one model instance: its persisted values, the values last read from or
/// written to the store (for rollback and change tracking), and its registration state.
///
/// One allocation per model: the state sits in the header of a managed buffer, the current
/// values in its tail, laid out by the entity's ``SlotLayout``. (A subclass of a managed buffer
/// cannot add stored properties: everything lives in ``StorageHeader``.)
///
/// Not `Sendable`: like the model that owns it, it is confined to its context's isolation.
@usableFromInline
class AnyModelStorage: ManagedBuffer<StorageHeader, UInt64>, RowIdentified, SlotBuffer {
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

    /// The header, through its address: stable while the storage lives, and reached without
    /// the exclusivity bookkeeping of the `header` property.
    @inline(__always)
    private final var state_: UnsafeMutablePointer<StorageHeader> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    /// The entity layout (nil for a placeholder or a model type that cannot be stored).
    final var layout: EntityLayout? { state_.pointee.layout }

    /// Whether this is the shared stand-in a model holds before its first value is set.
    final var isPlaceholder: Bool { state_.pointee.isPlaceholder }

    /// The current values: this storage's own slots (nil for a placeholder or a model type that
    /// cannot be stored).
    final var values: AnyModelStorage? { layout == nil ? nil : self }

    /// Where the values last read from or written to the store are.
    enum Committed {
        /// Nowhere: the model has not been saved.
        case none
        /// In the current slots: nothing changed since.
        case current
        /// In a copy, made by the first write since (``writableValues()``).
        case copy(ValueBuffer)
    }

    /// Where the values last read from or written to the store are.
    final var committed: Committed {
        get { state_.pointee.committed }
        set { state_.pointee.committed = newValue }
    }

    /// The values last read from or written to the store, as they were before the current
    /// changes (nil when there are none, or when they are the current values).
    final var committedCopy: ValueBuffer? {
        if case let .copy(saved) = committed { return saved }
        return nil
    }

    /// Indexes of the properties changed since the last save.
    final var changedProperties: Set<Int> {
        get { state_.pointee.changedProperties }
        _modify { yield &state_.pointee.changedProperties }
    }

    final var state: State {
        get { state_.pointee.state }
        set { state_.pointee.state = newValue }
    }

    /// The container's save generation (truncated) when the values were last read from the store.
    final var loadedGeneration: UInt32 {
        get { state_.pointee.loadedGeneration }
        set { state_.pointee.loadedGeneration = newValue }
    }

    final var contextLink: ContextLink? {
        get { state_.pointee.contextLink }
        set { state_.pointee.contextLink = newValue }
    }

    /// The container of the context that registered the model: relationships of a model whose
    /// context is gone still load through it.
    final var container: ModelContainer? {
        get { state_.pointee.container }
        set { state_.pointee.container = newValue }
    }

    final var primaryKey: Int64? {
        get { state_.pointee.primaryKey }
        set { state_.pointee.primaryKey = newValue }
    }

    /// Rarely used state, allocated on demand.
    final var extras: Extras? {
        get { state_.pointee.extras }
        _modify { yield &state_.pointee.extras }
    }

    /// A storage of the dynamic class `self` with every slot empty (`committed` is `.current`
    /// for a fetched row: what it is about to read is what the store holds).
    static func makeStorage(layout: EntityLayout?, placeholder: Bool = false, committed: Committed = .none) -> Self {
        let made = create(minimumCapacity: layout?.slots.wordCount ?? 0) { _ in
            StorageHeader(layout: layout, committed: committed, isPlaceholder: placeholder)
        }
        // `create` makes an instance of the class it is called on.
        let storage = unsafeDowncast(made, to: self)
        if let layout { storage.withSlotBase { SlotMemory.clearFlags($0, layout) } }
        return storage
    }

    deinit {
        if let layout { withSlotBase { SlotMemory.destroyValues($0, layout) } }
    }

    /// The address of the value in slot `index` when the slot holds a value of the type
    /// `type` identifies. Inlined into the model's module: with no call in between, reading a
    /// property does not retain the storage (the model holds it).
    @inlinable @inline(__always)
    final func slotAddress(at index: Int, type: ObjectIdentifier) -> UnsafeRawPointer? {
        guard let layout = withUnsafeMutablePointerToHeader({ $0.pointee.layout }),
            index >= 0, index < layout.slotCount
        else { return nil }
        let slot = layout.slotInfo[index]
        let flagsOffset = layout.flagsOffset
        return withUnsafeMutablePointerToElements { elements -> UnsafeRawPointer? in
            let base = UnsafeRawPointer(elements)
            guard slot.type == type, base.load(fromByteOffset: flagsOffset + index, as: UInt8.self) != 0 else { return nil }
            return base + slot.offset
        }
    }

    /// ``slotAddress(at:type:)`` for the property that `@Model` numbers `index` among the own
    /// properties of class `owner` (see ``position(of:declaredIn:)``), with the layout loaded
    /// once: a property read of a model without model superclass pays one compare of a field of
    /// the layout it loads anyway.
    @inlinable @inline(__always)
    final func slotAddress(ofOwn index: Int, declaredIn owner: ObjectIdentifier, type: ObjectIdentifier) -> UnsafeRawPointer? {
        guard let layout = withUnsafeMutablePointerToHeader({ $0.pointee.layout }) else { return nil }
        let position = layout.ownIndexBase == 0 ? index : index &+ (layout.indexBase(of: owner) ?? 0)
        guard position >= 0, position < layout.slotCount else { return nil }
        let slot = layout.slotInfo[position]
        let flagsOffset = layout.flagsOffset
        return withUnsafeMutablePointerToElements { elements -> UnsafeRawPointer? in
            let base = UnsafeRawPointer(elements)
            guard slot.type == type, base.load(fromByteOffset: flagsOffset + position, as: UInt8.self) != 0 else { return nil }
            return base + slot.offset
        }
    }

    /// The position in this storage's layout of the property that `@Model` numbers `index`
    /// among the own properties of class `type` (this storage's model class or one of its
    /// model superclasses): the inherited properties come first.
    @inlinable @inline(__always)
    final func position(of index: Int, declaredIn type: ObjectIdentifier) -> Int {
        guard let layout = withUnsafeMutablePointerToHeader({ $0.pointee.layout }) else { return index }
        if layout.ownIndexBase == 0 { return index }
        return index &+ (layout.indexBase(of: type) ?? 0)
    }

    /// Writes the value of a slot of type `Value` whatever the storage's model class (a
    /// superclass's property of a subclass instance); false, with nothing written, when the
    /// slot does not hold `Value`s.
    @usableFromInline
    final func setSlotOfAnyModel<Value>(at index: Int, to newValue: Value) -> Bool {
        guard !isPlaceholder else { return true }
        guard let layout, index >= 0, index < layout.slotCount, layout.slotInfo[index].type == ObjectIdentifier(Value.self),
            let values = writableValues()
        else { return false }
        values.store(index, newValue)
        noteChange(index)
        return true
    }

    /// The layout of the slots; only reached through ``values``, which exists with a layout.
    final var slotLayout: EntityLayout {
        // `values` is nil without a layout, so no slot operation reaches this without one.
        layout.unsafelyUnwrapped
    }

    @inline(__always)
    final func withSlotBase<R>(_ body: (UnsafeMutableRawPointer) throws -> R) rethrows -> R {
        try withUnsafeMutablePointerToElements { try body(UnsafeMutableRawPointer($0)) }
    }

    /// The context the model is registered in, through the link all of its models share.
    final var context: ModelContext? {
        get { contextLink?.context }
        set { contextLink = newValue?.link }
    }
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
        let context = self.context
        // A change after an undo is a change of its own (see `ModelContext.registerUndo`).
        if let context, !context.undoneModels.isEmpty { context.undoneModels.remove(ObjectIdentifier(self)) }
        let first = changedProperties.isEmpty
        changedProperties.insert(index)
        if first { context?.storageDidChange(self) }
    }

    /// The values, ready for a write: the first write since the values were last read from or
    /// written to the store keeps a copy of them first (for rollback, undo and the save's
    /// change tracking), and a write while a save runs has the save's journal copy them.
    final func writableValues() -> AnyModelStorage? {
        guard let values else { return nil }
        // A model fetched with `propertiesToFetch` reads the columns it lacks before the copy,
        // so that rollback and undo know every value the store held.
        if case .current = committed { _ = loadMissingColumns() }
        if let link = contextLink, link.isSaving { link.context?.journalWillChange(self, values: true) }
        if case .current = committed { committed = .copy(copyValues()) }
        return values
    }

    /// Copies the values of the model's `let` properties, which live in the model object itself
    /// (see ``PropertyLayout/isConstant``), into the slots the store writes from: when the model
    /// is inserted, after its initializer set them. They never change afterwards.
    final func captureConstants(of model: any PersistentModel) {
        guard let layout, !layout.constants.isEmpty, let values = writableValues() else { return }
        for property in layout.constants {
            if let value = model[keyPath: property.keyPath] { _ = values.storeBoxed(property.index, value) }
        }
    }

    /// Puts back the values last read from or written to the store.
    final func revert() {
        if let values, let saved = committedCopy {
            values.assignValues(from: saved)
            committed = .current
        }
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
        var buffers: [any SlotBuffer] = [values]
        if let saved = committedCopy { buffers.append(saved) }
        do {
            return try container.store.read { db in
                let statement = try db.makeStatement(sql: query.sql)
                statement.setUncheckedArguments(query.arguments)
                let cursor = try Row.fetchCursor(statement)
                guard try cursor.next() != nil else { return false }
                for buffer in buffers {
                    for (offset, property) in missing.enumerated() where !buffer.isInitialized(property.index) {
                        try buffer.withSlot(property.index) { slot in
                            if property.isExternallyStored,
                                try ExternalValueRead.read(
                                    statement.sqliteStatement, CInt(offset), into: slot, property: property, entity: layout.name, row: primaryKey,
                                    attachments: container.store.attachments)
                            {
                                return
                            }
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
        committed = .current
        return changed
    }

    /// Makes the current values the committed ones after a successful save.
    final func commit() {
        committed = values == nil ? .none : .current
        changedProperties.removeAll()
    }
}

/// The ``BackingData`` implementation of OpenSwiftData.
@usableFromInline
final class ModelStorage<Model: PersistentModel>: AnyModelStorage, BackingData, MadeByFactory {
    /// Whether `data` is the shared, inert stand-in a model holds before its first value is
    /// set (see ``PersistentModel/_$makeInertBackingData()``).
    @usableFromInline
    static func isInert(_ data: any BackingData<Model>) -> Bool {
        ((data as AnyObject) as? AnyModelStorage)?.isPlaceholder == true
    }

    /// Storage for a new model, with every value empty (``BackingData/init(for:)`` makes it).
    @usableFromInline
    static func make(for modelType: Model.Type) -> ModelStorage<Model> {
        makeStorage(layout: try? EntityLayout.of(Model.self))
    }

    /// The shared stand-in (see ``PersistentModel/_$makeInertBackingData()``).
    static func inert(for modelType: Model.Type) -> ModelStorage<Model> {
        makeStorage(layout: nil, placeholder: true)
    }

    /// The storage of a fetched row, before its values are read into it: what it will hold is
    /// what the store holds.
    @usableFromInline
    static func fetched(_ layout: EntityLayout) -> ModelStorage<Model> {
        makeStorage(layout: layout, committed: .current)
    }

    @usableFromInline
    var persistentModelID: PersistentIdentifier? {
        get {
            // The shared stand-in is never mutated: it has no identity of its own.
            if isPlaceholder {
                return PersistentIdentifier(storeIdentifier: nil, entityName: Schema.entityName(of: Model.self), key: .temporary(UUID()))
            }
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
        let refs = relationshipProperty(for: key).flatMap { relatedMany($0) }
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
        let type = ObjectIdentifier(Value.self)
        if let address = slotAddress(at: index, type: type) { return address.load(as: Value.self) }
        // A model fetched with `propertiesToFetch`: read the columns it lacks, then the slot.
        if slot(index, of: Value.self) != nil, loadMissingColumns(), let address = slotAddress(at: index, type: type) {
            return address.load(as: Value.self)
        }
        return slowValue(forKey: key(), at: index)
    }

    @usableFromInline
    func _setValue<Value: Encodable>(at index: Int, forKey key: @autoclosure () -> KeyPath<Model, Value>, to newValue: Value) {
        if !setSlot(at: index, to: newValue) { extensions().looseValues[key()] = newValue }
    }

    /// Writes the value of a slot of type `Value` (the fast path of the code `@Model`
    /// generates, called without going through the protocol); false, with nothing written,
    /// when the slot does not hold `Value`s.
    @usableFromInline
    func setSlot<Value>(at index: Int, to newValue: Value) -> Bool {
        guard !isPlaceholder else { return true }
        guard slot(index, of: Value.self) != nil, let values = writableValues() else { return false }
        values.store(index, newValue)
        noteChange(index)
        return true
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

/// A class whose instances are made by a factory method. A managed buffer's subclass has no
/// initializer of its own to write, so ``BackingData/init(for:)`` is this protocol's: an
/// initializer of a protocol extension may assign `self`.
@usableFromInline
protocol MadeByFactory {
    associatedtype Model: PersistentModel
    /// A new instance for a model type.
    static func make(for modelType: Model.Type) -> Self
}

extension MadeByFactory {
    /// A new instance for a model type, from ``make(for:)``.
    @usableFromInline
    init(for modelType: Model.Type) {
        self = Self.make(for: modelType)
    }
}
