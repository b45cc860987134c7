import Foundation
import OpenSwiftDataSyncProtocol

/// Why sync capture or a remote batch was refused. Nothing is written when one is thrown.
package enum SyncCaptureError: DescriptiveError, Sendable, Hashable, CustomStringConvertible {
    /// An entity cannot sync because its records would have no stable identity: it has a
    /// compound `#Unique` constraint or several unique attributes.
    case unsupportedIdentity(entity: String, reason: String)
    /// The entity is not part of the container's schema, or does not sync.
    case unknownEntity(String)
    /// The entity has no such stored property or relationship.
    case unknownProperty(entity: String, property: String)
    /// A value's kind or stored form does not fit the property.
    case wrongKind(entity: String, property: String, expected: SyncValueKind, got: SyncValueKind)
    /// A save changed the unique attribute that is a synced record's id.
    case recordIDChanged(entity: String, recordID: String)
    /// A remote record's id differs from the canonical text of its unique attribute.
    case recordIDMismatch(entity: String, recordID: String, uniqueValue: String)
    /// A value could not be turned into the property's type.
    case undecodableValue(entity: String, property: String, reason: String)
    /// Two synced properties of an entity would sync under one name: a property renamed with
    /// `originalName:` syncs under its original name, which another property now has.
    case duplicateSyncName(entity: String, name: String, properties: [String])
    /// A synced to-one relationship is the inverse of several collections of its destination
    /// whose delete rules differ: a synced reference carries one delete rule, and which
    /// collection holds a model is not part of the reference.
    case sharedInverseDeleteRules(entity: String, property: String, collections: [String])
    /// A merged field is declared with a kind that does not fit the property (a `.counter` on a
    /// `Bool`, a `.text` on an `Int`), or on a property that cannot merge (optional, the record
    /// id, not synced).
    case mergeKindMismatch(entity: String, property: String, kind: MergeKind, reason: String)
    /// A merged field is declared with a kind this version does not merge yet (`.text`).
    case mergeNotSupported(entity: String, property: String, kind: MergeKind)
    /// A save would take a counter past the range of its integer type.
    case counterOverflow(entity: String, property: String)
    /// Sync capture is not enabled on this container.
    case notEnabled
    /// A sync log entry cannot be read.
    case corruptLogEntry(sequence: Int64)

    /// A readable explanation.
    public var description: String {
        switch self {
        case let .unsupportedIdentity(entity, reason):
            return "\(entity) cannot sync: \(reason); a synced entity has no uniqueness constraint or exactly one single-property .unique attribute"
        case let .unknownEntity(entity): return "\(entity) is not a synced entity of this container"
        case let .unknownProperty(entity, property): return "\(entity) has no synced property \(property)"
        case let .wrongKind(entity, property, expected, got): return "\(entity).\(property) holds \(expected) values, not \(got)"
        case let .recordIDChanged(entity, recordID):
            return "\(entity) record \(recordID): its unique attribute is its sync record id and cannot change after insert"
        case let .recordIDMismatch(entity, recordID, uniqueValue):
            return "\(entity) record \(recordID) carries unique value \(uniqueValue); a record's id is its unique value"
        case let .undecodableValue(entity, property, reason): return "\(entity).\(property) cannot take the value: \(reason)"
        case let .duplicateSyncName(entity, name, properties):
            return
                "\(entity) cannot sync: its properties \(properties.joined(separator: " and ")) would both sync as \(name) (a property renamed with originalName: syncs under its original name); give the new property another name"
        case let .sharedInverseDeleteRules(entity, property, collections):
            return
                "\(entity) cannot sync: \(entity).\(property) is the inverse of \(collections.joined(separator: " and ")), whose delete rules differ; a synced reference has one delete rule, so give those relationships the same delete rule"
        case let .mergeKindMismatch(entity, property, kind, reason): return "\(entity).\(property) cannot merge as a \(kind.rawValue): \(reason)"
        case let .mergeNotSupported(entity, property, kind):
            return
                "\(entity).\(property) is declared to merge as a \(kind.rawValue), which this version does not support yet; .counter and .set merge"
        case let .counterOverflow(entity, property): return "saving \(entity).\(property) would overflow the counter"
        case .notEnabled: return "sync capture is not enabled on this container"
        case let .corruptLogEntry(sequence): return "sync log entry \(sequence) is corrupt and cannot be read"
        }
    }
}
