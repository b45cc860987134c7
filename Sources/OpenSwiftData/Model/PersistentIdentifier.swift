import Foundation

/// The identity of a model: its store, its entity and its primary key.
///
/// A model gets a temporary identifier when it is created and a permanent one when its first
/// save writes its row. Identifiers are `Sendable`: pass them between actors and load the model
/// on the other side with ``ModelContext/model(for:)``. A decoded identifier equals the live one.
public struct PersistentIdentifier: Hashable, Identifiable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The opaque value identity of a ``PersistentIdentifier``.
    public struct ID: Hashable, Comparable, Codable, Sendable {
        let storeIdentifier: String?
        let entityName: String
        let key: Key

        /// Orders by store, then entity, then key.
        public static func < (lhs: ID, rhs: ID) -> Bool {
            if lhs.storeIdentifier != rhs.storeIdentifier {
                return (lhs.storeIdentifier ?? "") < (rhs.storeIdentifier ?? "")
            }
            if lhs.entityName != rhs.entityName { return lhs.entityName < rhs.entityName }
            return lhs.key < rhs.key
        }
    }

    /// A primary key, or a temporary key for a model that has not been saved yet.
    enum Key: Hashable, Comparable, Codable, Sendable {
        case temporary(UUID)
        case row(Int64)

        static func < (lhs: Key, rhs: Key) -> Bool {
            switch (lhs, rhs) {
            case let (.row(a), .row(b)): return a < b
            case let (.temporary(a), .temporary(b)): return a.uuidString < b.uuidString
            case (.row, .temporary): return true
            case (.temporary, .row): return false
            }
        }
    }

    /// The identity value.
    public let id: ID

    init(storeIdentifier: String?, entityName: String, key: Key) {
        self.id = ID(storeIdentifier: storeIdentifier, entityName: entityName, key: key)
    }

    /// The name of the model's entity.
    public var entityName: String { id.entityName }

    /// The identifier of the store the model lives in; nil while the identifier is temporary.
    public var storeIdentifier: String? { id.storeIdentifier }

    /// Whether the identifier is temporary (the model has not been saved yet).
    public var isTemporary: Bool {
        if case .temporary = id.key { return true }
        return false
    }

    /// The row's primary key, for a permanent identifier.
    var rowID: Int64? {
        if case let .row(value) = id.key { return value }
        return nil
    }

    /// Builds an identifier from its parts, for example one received from another process.
    /// The primary key must describe an integer row id.
    public static func identifier<T>(for storeIdentifier: String, entityName: String, primaryKey: T) throws -> PersistentIdentifier
    where T: Comparable, T: CustomStringConvertible, T: Decodable, T: Encodable, T: Hashable {
        guard let row = Int64(primaryKey.description) else {
            throw SwiftDataError(.unsupportedKeyPath, "primary key '\(primaryKey)' of \(entityName) is not an integer row id", entity: entityName)
        }
        return PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entityName, key: .row(row))
    }

    /// Orders by store, then entity, then key.
    public static func < (lhs: PersistentIdentifier, rhs: PersistentIdentifier) -> Bool { lhs.id < rhs.id }

    /// A readable form such as `Trip/3` or `Trip/temporary(…)`.
    public var description: String {
        switch id.key {
        case let .row(row): return "\(id.entityName)/\(row)"
        case let .temporary(uuid): return "\(id.entityName)/temporary(\(uuid.uuidString))"
        }
    }
}
