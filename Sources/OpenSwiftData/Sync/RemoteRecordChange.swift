import Foundation
import OpenSwiftDataSyncProtocol

/// What the server did to a merged text (`.text`), as the sync engine hands it with a record's
/// change: applied to the device's document of the text, inside the batch's transaction, so that
/// the text keeps this device's saves made meanwhile.
package enum RemoteTextChange: Sendable, Hashable {
    /// Insertions and deletions by identity (another device's edit, or this one's own coming
    /// back, which changes nothing).
    case edits(TextChange)
    /// The server's whole document (its encoded state), with this device's edits the server has
    /// not applied yet, re-applied onto it in order.
    case state(Data, pending: [TextChange])
    /// The server's text without a state (written before the field merged, or inserted whole):
    /// its value as replica 0's one run, with this device's pending edits on top.
    case value(String, pending: [TextChange])
}

/// One record's change from the server, as the sync engine hands it to
/// ``ModelContainer/applyRemoteChanges(_:)``.
package struct RemoteRecordChange: Sendable, Hashable {
    /// What to do with the record.
    public enum Kind: Sendable, Hashable {
        /// Create the record, or update it when it is local (by record id, or by its unique
        /// attribute's value, which is its record id).
        case upsert
        /// Delete the record when it is local.
        case delete
    }

    /// What to do.
    public var kind: Kind
    /// The entity's name.
    public var entity: String
    /// The record's global id.
    public var recordID: String
    /// The server's version of the record after this change: kept as the record's base version
    /// for the local changes that follow.
    public var serverVersion: Int64
    /// The record's scope on the server (upserts); nil keeps the local record's scope.
    public var scope: String?
    /// The fields to set (upserts): stored values with their kinds; references hold the target's
    /// record id.
    public var fields: [SyncField]
    /// Many-to-many links to add and remove, per relationship, by record id.
    public var links: [SyncLinkChange]
    /// Merged texts' changes, by field name (upserts). The text's field value, when `fields`
    /// has it, is the server's; the column gets what the device's document reads after the
    /// change. An upsert with texts and no fields or links changes a local record only.
    public var texts: [String: RemoteTextChange] = [:]

    /// A change.
    public init(
        kind: Kind, entity: String, recordID: String, serverVersion: Int64, scope: String? = nil, fields: [SyncField] = [],
        links: [SyncLinkChange] = []
    ) {
        self.kind = kind
        self.entity = entity
        self.recordID = recordID
        self.serverVersion = serverVersion
        self.scope = scope
        self.fields = fields
        self.links = links
    }

    /// An insert or update.
    public static func upsert(
        _ entity: String, recordID: String, serverVersion: Int64, scope: String? = nil, fields: [SyncField], links: [SyncLinkChange] = []
    ) -> RemoteRecordChange {
        RemoteRecordChange(
            kind: .upsert, entity: entity, recordID: recordID, serverVersion: serverVersion, scope: scope, fields: fields, links: links)
    }

    /// A deletion.
    public static func delete(_ entity: String, recordID: String, serverVersion: Int64) -> RemoteRecordChange {
        RemoteRecordChange(kind: .delete, entity: entity, recordID: recordID, serverVersion: serverVersion)
    }
}

/// What ``ModelContainer/applyRemoteChanges(_:)`` did.
package struct RemoteApplyResult: Sendable, Hashable {
    /// Records created locally.
    public var inserted: Int = 0
    /// Local records updated.
    public var updated: Int = 0
    /// Local records deleted (deletions of records not present locally count nothing).
    public var deleted: Int = 0
    /// References that now wait for their record (this batch's and earlier ones').
    public var pendingReferences: Int = 0
    /// Earlier pending references that this batch linked.
    public var resolvedReferences: Int = 0
}
