/// The models of one entity registered in a context, by primary key.
///
/// A fetch into a fresh context appends its new models without hashing them: the lookup index
/// is built on the first lookup, in one pass and at its final size. (A dictionary grown row by
/// row rehashes itself again and again, which for a large fetch costs more memory traffic than
/// the models themselves; many contexts are dropped without a single lookup.)
struct RegistrationTable: ExpressibleByDictionaryLiteral {
    // A struct around a class: the identity map's `[name, default: [:]][key] = registration`
    // goes through a mutating setter, so the dictionary keeps the table it defaults to (with a
    // class value, only the getter would run, and the new table would be dropped). Copies share
    // the store: the context holds one table per entity, and a fetch fills it in place.
    private let store = RegistrationStore()

    init() {}

    /// An empty table (the only literal the context writes is `[:]`).
    init(dictionaryLiteral elements: (Int64, Registration)...) {
        for (key, registration) in elements { store[key] = registration }
    }

    /// Whether no model is registered.
    var isEmpty: Bool { store.isEmpty }

    /// The number of registered models.
    var count: Int { store.count }

    /// The registered models.
    var values: [Registration] { store.values }

    /// The primary keys of the registered models.
    var keys: [Int64] { store.keys }

    /// Registers a model under a key that no registration here holds yet, without a lookup.
    func appendNew(_ key: Int64, _ registration: consuming Registration) {
        store.appendNew(key, registration)
    }

    /// The registration of a primary key.
    subscript(key: Int64) -> Registration? {
        get { store[key] }
        set { store[key] = newValue }
    }
}

/// The storage of a ``RegistrationTable``.
///
/// A class, not `Sendable`: like the context that owns it, it is confined to one isolation.
final class RegistrationStore {
    /// The registered models in insertion order; nil where one was removed. Only the model is
    /// held (it holds its storage): a context that goes releases one reference per model, not
    /// two, and models that have left the cache are fetched from memory once, not twice.
    ///
    /// The properties are `@exclusivity(unchecked)`: the runtime's exclusivity check cost two
    /// calls per property per registered row, and no access here can overlap another: the
    /// store is confined to its context's isolation (not `Sendable`), no method calls a
    /// closure while it modifies a property, and what a modification can run (the deinit of a
    /// model it releases) never reaches the store.
    @exclusivity(unchecked) private var entries: [(any PersistentModel)?] = []
    @exclusivity(unchecked) private var entryKeys: [Int64] = []
    /// Position + 1 in `entries`, by open addressing on the key (0: empty). Covers the first
    /// `indexed` entries; nil until the first lookup.
    @exclusivity(unchecked) private var index: [Int32]?
    @exclusivity(unchecked) private var indexed = 0
    @exclusivity(unchecked) private var live = 0

    init() {}

    /// Whether no model is registered.
    var isEmpty: Bool { live == 0 }

    /// The number of registered models.
    var count: Int {
        updateIndex()
        return live
    }

    /// The registered models.
    var values: [Registration] {
        updateIndex()
        return entries.compactMap { $0.flatMap(Self.registration) }
    }

    /// A model's registration: the model and its storage (always OpenSwiftData's: only models
    /// whose storage is are registered).
    private static func registration(_ model: any PersistentModel) -> Registration? {
        func backingData<M: PersistentModel>(_ model: M) -> AnyObject { model.persistentBackingData as AnyObject }
        return (backingData(model) as? AnyModelStorage).map { Registration(model: model, storage: $0) }
    }

    /// The primary keys of the registered models.
    var keys: [Int64] {
        updateIndex()
        return entries.indices.compactMap { entries[$0] == nil ? nil : entryKeys[$0] }
    }

    /// Registers a model under a key that no registration here holds yet, without a lookup.
    /// (Two appends of one key before the next lookup: the later one stays, as with the
    /// subscript.)
    func appendNew(_ key: Int64, _ registration: consuming Registration) {
        entries.append(registration.model)
        entryKeys.append(key)
        live += 1
    }

    /// The registration of a primary key.
    subscript(key: Int64) -> Registration? {
        get {
            guard let position = position(of: key) else { return nil }
            return entries[position].flatMap(Self.registration)
        }
        set {
            if let position = position(of: key) {
                if entries[position] == nil, newValue != nil { live += 1 }
                if entries[position] != nil, newValue == nil { live -= 1 }
                entries[position] = newValue?.model
                if newValue == nil { compactIfSparse() }
            } else if let newValue {
                appendNew(key, newValue)
            }
        }
    }

    /// The position of a key's entry (live or removed), indexing what is not indexed yet.
    private func position(of key: Int64) -> Int? {
        updateIndex()
        guard let index else { return nil }
        let mask = index.count - 1
        var slot = Self.hash(key) & mask
        while true {
            let stored = Int(index[slot])
            if stored == 0 { return nil }
            if entryKeys[stored - 1] == key { return stored - 1 }
            slot = (slot + 1) & mask
        }
    }

    /// Drops the removed entries once they are most of the table (a context that enumerates a
    /// large table in batches unregisters each batch): the index is rebuilt on the next lookup.
    private func compactIfSparse() {
        guard entries.count >= 64, live < entries.count / 4 else { return }
        var keptEntries: [(any PersistentModel)?] = []
        var keptKeys: [Int64] = []
        keptEntries.reserveCapacity(live)
        keptKeys.reserveCapacity(live)
        for position in entries.indices where entries[position] != nil {
            keptEntries.append(entries[position])
            keptKeys.append(entryKeys[position])
        }
        entries = keptEntries
        entryKeys = keptKeys
        index = nil
        indexed = 0
    }

    /// Brings the index up to date with the entries appended since it was built, growing it
    /// (at most half full) when needed.
    private func updateIndex() {
        guard indexed < entries.count || index == nil else { return }
        var needed = 16
        while needed < entries.count * 2 { needed *= 2 }
        if index == nil || (index?.count ?? 0) < needed {
            index = [Int32](repeating: 0, count: needed)
            indexed = 0
        }
        guard var table = index else { return }
        index = nil
        let mask = table.count - 1
        for position in indexed..<entries.count {
            let key = entryKeys[position]
            var slot = Self.hash(key) & mask
            while table[slot] != 0 {
                let other = Int(table[slot]) - 1
                if entryKeys[other] == key {
                    // The same key appended twice: the later registration replaces the earlier.
                    if entries[other] != nil { live -= 1 }
                    entries[other] = nil
                    break
                }
                slot = (slot + 1) & mask
            }
            table[slot] = Int32(truncatingIfNeeded: position + 1)
        }
        indexed = entries.count
        index = table
    }

    /// A well-mixed slot number for a key (SplitMix64's finalizer).
    private static func hash(_ key: Int64) -> Int {
        var bits = UInt64(bitPattern: key)
        bits = (bits ^ (bits >> 30)) &* 0xBF58_476D_1CE4_E5B9
        bits = (bits ^ (bits >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: bits ^ (bits >> 31))
    }
}
