import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything the context and the store need to know about one persisted property, resolved
/// once per model type from its `schemaMetadata`. A class, so that the per-row loops that walk
/// the properties retain one reference instead of copying every field.
final class PropertyLayout: @unchecked Sendable {
    // @unchecked Sendable: immutable; `keyPath` is a Sendable key path object, `defaultValue` a
    // value built from a literal in the model declaration and never mutated.
    let name: String
    let index: Int
    let keyPath: AnyKeyPath
    let codec: ValueCodec
    /// The schema's description of the property: a ``Schema/Attribute`` or a
    /// ``Schema/Relationship``.
    let schemaProperty: any SchemaProperty
    /// Set for relationships.
    let relationship: RelationshipLayout?
    let defaultValue: Any?
    /// The column index among the entity's stored columns, or nil for ephemeral attributes and
    /// relationships stored elsewhere (the inverse's foreign key, a join table).
    let columnIndex: Int?
    /// Whether the property is a `let` of the class: a stored property of the model object itself,
    /// set by the class's initializer, copied into the backing data on insert and never written
    /// afterwards (its key path is not writable).
    let isConstant: Bool
    /// Whether the property's large values live in files beside the store: an attribute
    /// declared `.externalStorage` whose type is `Data` or `Data?` (other types keep the option
    /// recorded and their values in the row). See ``StoreAttachments``.
    let isExternallyStored: Bool

    init(
        name: String, index: Int, keyPath: AnyKeyPath, codec: ValueCodec, schemaProperty: any SchemaProperty, relationship: RelationshipLayout?,
        defaultValue: Any?, columnIndex: Int?, isConstant: Bool = false
    ) {
        self.name = name
        self.index = index
        self.keyPath = keyPath
        self.codec = codec
        self.schemaProperty = schemaProperty
        self.relationship = relationship
        self.defaultValue = defaultValue
        self.columnIndex = columnIndex
        self.isConstant = isConstant
        self.isExternallyStored =
            (schemaProperty as? Schema.Attribute)?.options.contains(.externalStorage) == true
            && (codec.slot.type == Data.self || codec.slot.type == Data?.self)
    }

    /// The attribute description (nil for relationships).
    var attribute: Schema.Attribute? { schemaProperty as? Schema.Attribute }

    /// The value a property starts with when no row supplies one (an ephemeral property of a
    /// fetched model, a model whose row has vanished): its declared default, else nil, zero or
    /// empty for its type. For relationships: the slot's "not loaded" or "none" state.
    var fallbackValue: Any? { relationship == nil ? (defaultValue ?? codec.emptyValue) : codec.emptyValue }
}

/// The type and byte offset of one value slot.
@usableFromInline
struct SlotInfo {
    @usableFromInline let type: ObjectIdentifier
    @usableFromInline let offset: Int
}

/// The runtime description of one model type: its persisted properties with their codecs, its
/// columns, uniqueness constraints and indexes. Built once per type and shared by every
/// container; immutable afterwards.
@usableFromInline
final class EntityLayout: @unchecked Sendable {
    // @unchecked Sendable: every stored property is a `let` of immutable values, set in init.
    let name: String
    let modelType: any PersistentModel.Type
    let properties: [PropertyLayout]
    /// The properties that have a column, in column order.
    let columns: [PropertyLayout]
    /// Uniqueness constraints as property indexes (one array per constraint).
    let uniquenessConstraints: [[Int]]
    /// Indexes as property indexes (one array per index).
    let indices: [[Int]]
    /// Where each property sits in a model's value buffer.
    let slots: SlotLayout
    /// The type and offset of each slot, as plain values that a property read can use without
    /// retaining anything. Allocated once; layouts live as long as the process (the registry
    /// keeps them).
    @usableFromInline let slotInfo: UnsafeMutablePointer<SlotInfo>
    @usableFromInline let slotCount: Int
    /// The offset of the first "initialized" flag byte (``SlotLayout/flagsOffset``).
    @usableFromInline let flagsOffset: Int
    /// How a value buffer destroys its values (``SlotRelease/plan(_:)``), allocated once like
    /// `slotInfo`.
    let releasePlan: UnsafeMutablePointer<SlotRelease>
    let releaseCount: Int
    /// The relationship properties.
    let relationships: [PropertyLayout]
    /// The properties declared with `let` (``PropertyLayout/isConstant``).
    let constants: [PropertyLayout]
    /// The columns whose values a deletion's tombstone keeps (`.preserveValueOnDeletion`).
    let preservedColumns: [PropertyLayout]
    private let keyPaths: [AnyKeyPath]
    /// The layout of the superclass, when it is a model: its properties come first here, at the
    /// same positions, followed by this class's own.
    let superLayout: EntityLayout?
    /// Where this class's own properties start (the number of inherited ones): the position
    /// `@Model` gives a property counts from the class's first own property.
    @usableFromInline let ownIndexBase: Int
    /// Each model class of the hierarchy down to this one, root first, with where its own
    /// properties start.
    let ancestry: [(type: ObjectIdentifier, base: Int)]
    /// The key paths of the inherited properties as the superclass names them (`\Vehicle.name`,
    /// where ``keyPaths`` has `\Car.name`), so that both find the property.
    private let inheritedKeyPaths: [AnyKeyPath]

    init(modelType: any PersistentModel.Type) throws {
        let name = Schema.entityName(of: modelType)
        self.name = name
        self.modelType = modelType
        var properties: [PropertyLayout] = []
        var columnCount = 0
        // A superclass that is a model: its properties are inherited, under key paths rooted at
        // this class (`_$inheritedKeyPaths`, which `@Model` generates).
        let superLayout = try (_getSuperclass(modelType) as? any PersistentModel.Type).map { try EntityLayout.of($0) }
        self.superLayout = superLayout
        if let superLayout {
            let rerooted = modelType._$inheritedKeyPaths
            guard rerooted.count == superLayout.properties.count else {
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "\(name) inherits from \(superLayout.name), but its inherited properties do not match the superclass's (\(rerooted.count) key paths for \(superLayout.properties.count) properties); is the superclass a @Model class?",
                    entity: name)
            }
            for (inherited, keyPath) in zip(superLayout.properties, rerooted) {
                properties.append(
                    PropertyLayout(
                        name: inherited.name, index: inherited.index, keyPath: keyPath, codec: inherited.codec,
                        schemaProperty: inherited.schemaProperty, relationship: inherited.relationship,
                        defaultValue: inherited.defaultValue, columnIndex: inherited.columnIndex, isConstant: inherited.isConstant
                    ))
            }
            columnCount = superLayout.columns.count
        }
        let base = properties.count
        self.ownIndexBase = base
        self.ancestry = (superLayout?.ancestry ?? []) + [(ObjectIdentifier(modelType), base)]
        self.inheritedKeyPaths = superLayout.map { $0.keyPaths + $0.inheritedKeyPaths } ?? []
        let inheritedNames = Set(properties.map(\.name))
        for (position, metadata) in modelType.schemaMetadata.enumerated() {
            let index = base + position
            if inheritedNames.contains(metadata.name) {
                throw SwiftDataError(
                    .loadIssueModelContainer, "\(name).\(metadata.name) has the name of a property \(name) inherits", entity: name,
                    property: metadata.name)
            }
            let valueType = type(of: metadata.keypath).valueType
            if Self.reservedNames.contains(metadata.name.lowercased()) {
                throw SwiftDataError(
                    .loadIssueModelContainer, "\(name).\(metadata.name) uses a name reserved for the store's own columns", entity: name,
                    property: metadata.name)
            }
            let isConstant = !Self.isWritable(metadata.keypath, of: modelType)
            if let shape = RelationshipShape(valueType) {
                if isConstant {
                    throw SwiftDataError(
                        .loadIssueModelContainer,
                        "\(name).\(metadata.name) is a relationship declared with 'let'; a relationship changes with its inverse, so declare it with 'var'",
                        entity: name, property: metadata.name)
                }
                let relationship = try RelationshipLayout(
                    entity: name, property: metadata, shape: shape,
                    declared: metadata.metadata as? Schema.Relationship, modelType: modelType
                )
                let hasColumn = relationship.storage == .foreignKey
                properties.append(
                    PropertyLayout(
                        name: metadata.name, index: index, keyPath: metadata.keypath,
                        codec: hasColumn ? .foreignKey() : .unstoredRelationship(toMany: shape.isToMany),
                        schemaProperty: relationship.description, relationship: relationship, defaultValue: nil,
                        columnIndex: hasColumn ? columnCount : nil
                    ))
                if hasColumn { columnCount += 1 }
                continue
            }
            if metadata.metadata is Schema.Relationship {
                throw SwiftDataError(
                    .loadIssueModelContainer,
                    "\(name).\(metadata.name) is marked @Relationship but its type \(valueType) is not a model, an optional model or an array of models",
                    entity: name, property: metadata.name)
            }
            guard let codec = ValueCodec.make(for: valueType) else {
                throw SwiftDataError(
                    .loadIssueModelContainer, "\(name).\(metadata.name) has type \(valueType), which cannot be stored", entity: name,
                    property: metadata.name)
            }
            let declared = metadata.metadata as? Schema.Attribute ?? Schema.Attribute()
            let attribute = declared.completed(
                name: metadata.name, valueType: valueType, defaultValue: metadata.defaultValue, storedAsJSON: codec.kind == .json)
            let columnIndex: Int?
            if attribute.isTransient {
                columnIndex = nil
            } else {
                columnIndex = columnCount
                columnCount += 1
            }
            properties.append(
                PropertyLayout(
                    name: metadata.name, index: index, keyPath: metadata.keypath, codec: codec,
                    schemaProperty: attribute, relationship: nil, defaultValue: metadata.defaultValue, columnIndex: columnIndex,
                    isConstant: isConstant
                ))
        }
        self.properties = properties
        self.columns = properties.filter { $0.columnIndex != nil }
        self.relationships = properties.filter { $0.relationship != nil }
        self.constants = properties.filter(\.isConstant)
        self.preservedColumns = self.columns.filter { $0.attribute?.options.contains(.preserveValueOnDeletion) == true }
        self.keyPaths = properties.map(\.keyPath)
        self.slots = SlotLayout(witnesses: properties.map(\.codec.slot))
        self.slotCount = slots.count
        self.flagsOffset = slots.flagsOffset
        self.slotInfo = UnsafeMutablePointer<SlotInfo>.allocate(capacity: max(slots.count, 1))
        for index in 0..<slots.count {
            (slotInfo + index).initialize(to: SlotInfo(type: ObjectIdentifier(slots.witnesses[index].type), offset: slots.offsets[index]))
        }
        let plan = SlotRelease.plan(slots)
        self.releaseCount = plan.count
        self.releasePlan = UnsafeMutablePointer<SlotRelease>.allocate(capacity: max(plan.count, 1))
        releasePlan.initialize(from: plan, count: plan.count)

        // An empty group (`#Unique<T>([\.a], [])`) constrains nothing, as in SwiftData: it is
        // left out, so no index is made over no columns.
        func resolve(_ groups: [[AnyKeyPath]], _ what: String) throws -> [[Int]] {
            try groups.filter { !$0.isEmpty }.map { group in
                try group.map { keyPath in
                    let inherited = superLayout.flatMap { $0.propertyIndex(of: keyPath) }
                    guard let index = properties.firstIndex(where: { $0.keyPath == keyPath }) ?? inherited, properties[index].columnIndex != nil
                    else {
                        throw SwiftDataError(.unsupportedKeyPath, "a \(what) of \(name) names a key path that is not a stored property", entity: name)
                    }
                    return index
                }
            }
        }
        var unique = try resolve(modelType._$uniquenessConstraints, "#Unique constraint")
        for property in properties where property.schemaProperty.isUnique {
            guard property.columnIndex != nil else {
                throw SwiftDataError(
                    .loadIssueModelContainer, "\(name).\(property.name) cannot be both .unique and .ephemeral", entity: name, property: property.name)
            }
            unique.insert([property.index], at: 0)
        }
        var seen = Set<[Int]>()
        self.uniquenessConstraints = unique.filter { seen.insert($0).inserted }
        self.indices = try resolve(modelType._$indices, "#Index")
    }

    /// Whether a property's key path can write it: false for a `let` of the class (a plain
    /// `KeyPath`), true for the properties `@Model` turns into computed ones with a setter.
    static func isWritable(_ keyPath: AnyKeyPath, of modelType: any PersistentModel.Type) -> Bool {
        func open<M: PersistentModel>(_: M.Type) -> Bool {
            func typed<V>(_: V.Type) -> Bool { keyPath is ReferenceWritableKeyPath<M, V> }
            return _openExistential(type(of: keyPath).valueType, do: typed)
        }
        return open(modelType)
    }

    /// The names the store uses for its own columns and tables.
    static let reservedNames: Set<String> = ["_pk", "rowid", "oid", "_rowid_"]

    /// The index of the property a key path names, comparing identity first (cheap for the
    /// literal key paths the macro generates) and equality second.
    deinit {
        slotInfo.deallocate()
        releasePlan.deallocate()
    }

    @inline(__always)
    func propertyIndex(of keyPath: AnyKeyPath) -> Int? {
        for index in keyPaths.indices where keyPaths[index] === keyPath { return index }
        for index in keyPaths.indices where keyPaths[index] == keyPath { return index }
        if !inheritedKeyPaths.isEmpty, let index = superLayout?.propertyIndex(of: keyPath) { return index }
        return nil
    }

    /// Where the own properties of `type` start, when it is this layout's class or one of its
    /// model superclasses.
    @usableFromInline
    func indexBase(of type: ObjectIdentifier) -> Int? {
        for level in ancestry.reversed() where level.type == type { return level.base }
        return nil
    }

    // MARK: The layout registry

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [ObjectIdentifier: EntityLayout] = [:]
    // nonisolated(unsafe): only read and written while holding `registryLock`.

    /// The threads building a layout right now, by model type.
    nonisolated(unsafe) private static var builders: [ObjectIdentifier: [pthread_t]] = [:]
    // nonisolated(unsafe): only read and written while holding `registryLock`.

    /// Whether a layout of a model class that inherits from `layout`'s has been built (every
    /// model class of a container's schema has, once the container exists).
    static func hasSubclassLayouts(_ layout: EntityLayout) -> Bool {
        let type = ObjectIdentifier(layout.modelType)
        registryLock.lock()
        defer { registryLock.unlock() }
        return registry.values.contains { $0 !== layout && $0.ancestry.contains { $0.type == type } }
    }

    /// The layout of a model type, built on first use.
    ///
    /// Building a layout reads `schemaMetadata`, its own and its relationships' destinations',
    /// and that evaluates the properties' default values: a default that constructs a model
    /// (`var settings = Settings()`) asks for that model's layout, which may be the one this
    /// thread is building (`Settings` has an inverse to the owner whose metadata is being read).
    /// Such a request throws instead of building again forever; `ModelStorage.make(for:)` then
    /// gives the default model storage without a layout (values kept by key path), which is all
    /// a default value needs.
    static func of(_ type: any PersistentModel.Type) throws -> EntityLayout {
        let key = ObjectIdentifier(type)
        let thread = pthread_self()
        registryLock.lock()
        if let layout = registry[key] {
            registryLock.unlock()
            return layout
        }
        if builders[key, default: []].contains(where: { pthread_equal($0, thread) != 0 }) {
            registryLock.unlock()
            throw SwiftDataError(
                .loadIssueModelContainer, "the layout of \(type) is asked for while it is being built (a property default that constructs a model)",
                entity: Schema.entityName(of: type))
        }
        builders[key, default: []].append(thread)
        registryLock.unlock()
        defer {
            registryLock.lock()
            if let index = builders[key]?.firstIndex(where: { pthread_equal($0, thread) != 0 }) { builders[key]?.remove(at: index) }
            if builders[key]?.isEmpty == true { builders[key] = nil }
            registryLock.unlock()
        }
        let layout = try EntityLayout(modelType: type)
        registryLock.lock()
        defer { registryLock.unlock() }
        if let existing = registry[key] { return existing }
        registry[key] = layout
        return layout
    }
}

extension Schema {
    /// The entity name of a model type: its unqualified class name.
    static func entityName(of type: any PersistentModel.Type) -> String {
        let full = String(describing: type)
        return full.split(separator: ".").last.map(String.init) ?? full
    }
}
