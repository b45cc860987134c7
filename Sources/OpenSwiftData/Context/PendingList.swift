/// A model registered in a context, with its storage.
struct Registration {
    let model: any PersistentModel
    let storage: AnyModelStorage
}

/// An insertion-ordered set of registrations, keyed by storage identity.
struct PendingList {
    private var items: [Registration?] = []
    private var positions: [ObjectIdentifier: Int] = [:]

    var count: Int { positions.count }
    var isEmpty: Bool { positions.isEmpty }

    /// The registrations, in the order they were added.
    var all: [Registration] { items.compactMap { $0 } }

    mutating func add(_ registration: Registration) {
        let key = ObjectIdentifier(registration.storage)
        guard positions[key] == nil else { return }
        positions[key] = items.count
        items.append(registration)
    }

    mutating func remove(_ storage: AnyModelStorage) {
        guard let position = positions.removeValue(forKey: ObjectIdentifier(storage)) else { return }
        items[position] = nil
        if positions.isEmpty { items.removeAll(keepingCapacity: true) }
    }

    /// Whether any registration satisfies `predicate`, without collecting them.
    func contains(where predicate: (Registration) -> Bool) -> Bool {
        items.contains { $0.map(predicate) ?? false }
    }

    func contains(_ storage: AnyModelStorage) -> Bool { positions[ObjectIdentifier(storage)] != nil }

    mutating func removeAll() {
        items.removeAll()
        positions.removeAll()
    }
}
