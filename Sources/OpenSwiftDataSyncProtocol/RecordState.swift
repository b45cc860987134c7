import Foundation

/// A record as the server holds it: every field and link, its scope and version.
public struct RecordState: Hashable, Codable, Sendable {
    /// The entity's sync name.
    public var entity: SyncName
    /// The record's id.
    public var recordID: RecordID
    /// The scope the record is in.
    public var scope: ScopeID
    /// The server version of the record's last change.
    public var version: ServerVersion
    /// Whether the record is deleted (a tombstone).
    public var deleted: Bool
    /// Every field, by sync name.
    public var fields: [SyncName: SyncValue]
    /// Every to-many relationship's related records, by sync name, sorted.
    public var links: [SyncName: [RecordID]]

    /// Makes a record state.
    public init(
        entity: SyncName, recordID: RecordID, scope: ScopeID, version: ServerVersion, deleted: Bool = false, fields: [SyncName: SyncValue] = [:],
        links: [SyncName: [RecordID]] = [:]
    ) {
        self.entity = entity
        self.recordID = recordID
        self.scope = scope
        self.version = version
        self.deleted = deleted
        self.fields = fields
        self.links = links
    }
}
