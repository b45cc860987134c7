import Foundation

/// Pull pages: a first download is mostly this decoding. Keys come in any order and unknown
/// keys are skipped (a newer server may add some), as `JSONDecoder` does; values are read as
/// ``syncValue()`` reads them.
extension SyncJSONReader {
    /// The pull page in `data`, or nil when it is not one this reader takes (the caller decodes
    /// it with `JSONDecoder`, which names the fault).
    package static func pullResponse(_ data: Data) -> PullResponse? {
        read(data) { try $0.pullResponse() }
    }

    private mutating func optionalScopes() throws -> [ScopeID]? {
        try null() ? nil : try strings().map(ScopeID.init(rawValue:))
    }

    private mutating func pullResponse() throws -> PullResponse {
        var version: Int64?
        var changes: [PulledChange]?
        var cursor: String?
        var hasMore: Bool?
        var consistent: Bool?
        var lastMutationID: Int64?
        var reset: ResetReason?
        var revoked: [ScopeID]?
        var progress: PullProgress?
        var stamp: HLCTimestamp?
        var snapshotScopes: [ScopeID]?
        var cursorScopes: [ScopeID]?
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped else {
                    try skipValue()
                    continue
                }
                if isKey(key, "protocolVersion") {
                    version = try int64()
                } else if isKey(key, "changes") {
                    changes = try array { try $0.pulledChange() }
                } else if isKey(key, "cursor") {
                    cursor = try string()
                } else if isKey(key, "hasMore") {
                    hasMore = try bool()
                } else if isKey(key, "consistent") {
                    consistent = try bool()
                } else if isKey(key, "lastMutationID") {
                    lastMutationID = try int64()
                } else if isKey(key, "reset") {
                    if try !null() {
                        guard let reason = ResetReason(rawValue: try string()) else { throw Mismatch() }
                        reset = reason
                    }
                } else if isKey(key, "revokedScopes") {
                    revoked = try strings().map(ScopeID.init(rawValue:))
                } else if isKey(key, "cursorScopes") {
                    cursorScopes = try optionalScopes()
                } else if isKey(key, "snapshotScopes") {
                    snapshotScopes = try optionalScopes()
                } else if isKey(key, "progress") {
                    if try !null() { progress = try self.progress() }
                } else if isKey(key, "serverStamp") {
                    stamp = try self.stamp()
                } else {
                    try skipValue()
                }
            } while try nextMember()
        }
        guard let version, let rawVersion = Int(exactly: version), let changes, let cursor, let hasMore, let consistent, let lastMutationID,
            let revoked, let stamp
        else { throw Mismatch() }
        return PullResponse(
            protocolVersion: ProtocolVersion(rawValue: rawVersion), changes: changes, cursor: cursor, hasMore: hasMore, consistent: consistent,
            lastMutationID: lastMutationID, reset: reset, revokedScopes: revoked, progress: progress, serverStamp: stamp,
            snapshotScopes: snapshotScopes, cursorScopes: cursorScopes)
    }

    private mutating func progress() throws -> PullProgress {
        var received: Int64?
        var total: Int64?
        try members { reader, key, escaped in
            if !escaped, reader.isKey(key, "received") {
                received = try reader.int64()
            } else if !escaped, reader.isKey(key, "total") {
                total = try reader.int64()
            } else {
                try reader.skipValue()
            }
        }
        guard let received, let total, let count = Int(exactly: received), let whole = Int(exactly: total) else { throw Mismatch() }
        return PullProgress(received: count, total: whole)
    }

    private mutating func pulledChange() throws -> PulledChange {
        var version: Int64?
        var op: RecordOperation?
        var entity: String?
        var recordID: String?
        var scope: String?
        var fields: [SyncName: SyncValue]?
        var links: [SyncName: LinkChange]?
        var clientID: String?
        var mutationID: Int64?
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped else {
                    try skipValue()
                    continue
                }
                if isKey(key, "version") {
                    version = try int64()
                } else if isKey(key, "op") {
                    guard let value = RecordOperation(rawValue: try string()) else { throw Mismatch() }
                    op = value
                } else if isKey(key, "entity") {
                    entity = try string()
                } else if isKey(key, "recordID") {
                    recordID = try string()
                } else if isKey(key, "scope") {
                    scope = try string()
                } else if isKey(key, "fields") {
                    fields = try syncValues()
                } else if isKey(key, "links") {
                    links = try linkChanges()
                } else if isKey(key, "clientID") {
                    clientID = try null() ? nil : try string()
                } else if isKey(key, "mutationID") {
                    mutationID = try null() ? nil : try int64()
                } else {
                    try skipValue()
                }
            } while try nextMember()
        }
        guard let version, let op, let entity, let recordID, let scope, let fields, let links else { throw Mismatch() }
        return PulledChange(
            version: version, op: op, entity: entity, recordID: recordID, scope: ScopeID(rawValue: scope), fields: fields, links: links,
            clientID: clientID, mutationID: mutationID)
    }
}
