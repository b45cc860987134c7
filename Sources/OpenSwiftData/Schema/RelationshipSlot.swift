import GRDB
import GRDBSQLite

/// Storage that knows the primary key of its row, once it has one. The context's model storage
/// conforms; the schema layer only needs the key to encode a foreign key.
protocol RowIdentified: AnyObject {
    /// The row's primary key, or nil before the first save.
    var rowKey: Int64? { get }
}

/// A related model and its storage, as a relationship slot holds it.
@usableFromInline
struct RelatedRef {
    @usableFromInline let model: any PersistentModel
    let storage: any RowIdentified

    /// Whether two references name the same model instance.
    func isSame(as other: RelatedRef) -> Bool { storage === other.storage }
}

/// The value slot of a to-one relationship.
enum ToOneSlot {
    /// Read from the row: the related row's primary key (nil: no related model), not yet
    /// turned into a model.
    case fault(Int64?)
    /// Not known until the store is asked (the side of a one-to-one without the foreign key).
    case notLoaded
    /// The related model, or nil.
    case loaded(RelatedRef?)
}

/// The value slot of a to-many relationship.
enum ToManySlot {
    /// Not known until the store is asked.
    case notLoaded
    /// The related models, or nil for the `nil` of an optional collection.
    case loaded([RelatedRef]?)
}

extension ValueCodec {
    /// The storage name of a foreign-key column's codec.
    static let foreignKeyStorageName = "reference"

    /// The codec of a foreign-key column: an `INTEGER` (NULL for no related model) read into a
    /// ``ToOneSlot/fault(_:)`` and written from the related storage's primary key.
    static func foreignKey() -> ValueCodec {
        let typed = TypedCodec<ToOneSlot>(
            columnType: .integer, kind: .foreignKey, storageName: foreignKeyStorageName, sortsLikeSwift: false,
            encode: { slot in
                switch slot {
                case let .fault(key): return key?.databaseValue ?? .null
                case .notLoaded, .loaded(nil): return .null
                case let .loaded(ref?):
                    // No key: a model being deleted, or one whose row the same save writes later
                    // (the context sets the column once that row exists).
                    return ref.storage.rowKey?.databaseValue ?? .null
                }
            },
            read: { statement, index in
                if sqlite3_column_type(statement, index) == SQLITE_NULL { return .fault(nil) }
                return .fault(try SQLiteColumn.int64(statement, index))
            }
        )
        return ValueCodec(typed, isOptional: true, emptyValue: .loaded(nil))
    }

    /// The codec of a relationship without a column of its own: its slot starts unloaded.
    static func unstoredRelationship(toMany: Bool) -> ValueCodec {
        if toMany {
            let typed = TypedCodec<ToManySlot>(
                columnType: .integer, kind: .relationship, storageName: "relationship",
                encode: { _ in .null },
                read: { _, _ in .notLoaded }
            )
            return ValueCodec(typed, isOptional: true, emptyValue: .notLoaded)
        }
        let typed = TypedCodec<ToOneSlot>(
            columnType: .integer, kind: .relationship, storageName: "relationship",
            encode: { _ in .null },
            read: { _, _ in .notLoaded }
        )
        return ValueCodec(typed, isOptional: true, emptyValue: .notLoaded)
    }
}
