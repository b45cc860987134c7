import Foundation

/// Pull pages: a first download is mostly this decoding. Keys come in any order and unknown
/// keys are skipped (a newer server may add some), as `JSONDecoder` does; values are read as
/// ``syncValue()`` reads them. A key written with escapes, or given twice, is left to
/// `JSONDecoder` (which unescapes keys and keeps a repeated key's first value).
extension SyncJSONReader {
    /// The pull page in `data`, or nil when it is not one this reader takes (the caller decodes
    /// it with `JSONDecoder`, which names the fault).
    @inlinable
    package static func pullResponse(_ data: Data) -> PullResponse? {
        read(data) { try $0.pullResponse() }
    }

    /// Marks key number `index` of an object as read: a key given twice is a mismatch.
    @inlinable
    static func first(_ seen: inout UInt32, _ index: UInt32) throws {
        let bit: UInt32 = 1 << index
        guard seen & bit == 0 else { throw Mismatch() }
        seen |= bit
    }

    @inlinable
    mutating func optionalScopes() throws -> [ScopeID]? {
        try null() ? nil : try strings().map(ScopeID.init(rawValue:))
    }

    @inlinable
    mutating func pullResponse() throws -> PullResponse {
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
        var seen: UInt32 = 0
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped else { throw Mismatch() }
                if isKey(key, "protocolVersion") {
                    try Self.first(&seen, 0)
                    version = try int64()
                } else if isKey(key, "changes") {
                    try Self.first(&seen, 1)
                    changes = try array { try $0.pulledChange() }
                } else if isKey(key, "cursor") {
                    try Self.first(&seen, 2)
                    cursor = try string()
                } else if isKey(key, "hasMore") {
                    try Self.first(&seen, 3)
                    hasMore = try bool()
                } else if isKey(key, "consistent") {
                    try Self.first(&seen, 4)
                    consistent = try bool()
                } else if isKey(key, "lastMutationID") {
                    try Self.first(&seen, 5)
                    lastMutationID = try int64()
                } else if isKey(key, "reset") {
                    try Self.first(&seen, 6)
                    if try !null() {
                        guard let reason = ResetReason(rawValue: try string()) else { throw Mismatch() }
                        reset = reason
                    }
                } else if isKey(key, "revokedScopes") {
                    try Self.first(&seen, 7)
                    revoked = try strings().map(ScopeID.init(rawValue:))
                } else if isKey(key, "cursorScopes") {
                    try Self.first(&seen, 8)
                    cursorScopes = try optionalScopes()
                } else if isKey(key, "snapshotScopes") {
                    try Self.first(&seen, 9)
                    snapshotScopes = try optionalScopes()
                } else if isKey(key, "progress") {
                    try Self.first(&seen, 10)
                    if try !null() { progress = try self.progress() }
                } else if isKey(key, "serverStamp") {
                    try Self.first(&seen, 11)
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

    @inlinable
    mutating func progress() throws -> PullProgress {
        var received: Int64?
        var total: Int64?
        try members { reader, key, escaped in
            guard !escaped else { throw Mismatch() }
            if reader.isKey(key, "received"), received == nil {
                received = try reader.int64()
            } else if reader.isKey(key, "total"), total == nil {
                total = try reader.int64()
            } else if reader.isKey(key, "received") || reader.isKey(key, "total") {
                throw Mismatch()
            } else {
                try reader.skipValue()
            }
        }
        guard let received, let total, let count = Int(exactly: received), let whole = Int(exactly: total) else { throw Mismatch() }
        return PullProgress(received: count, total: whole)
    }

    @inlinable
    mutating func pulledChange() throws -> PulledChange {
        var version: Int64?
        var op: RecordOperation?
        var entity: String?
        var recordID: String?
        var scope: String?
        var fields: [SyncName: SyncValue]?
        var links: [SyncName: LinkChange]?
        var clientID: String?
        var mutationID: Int64?
        var merge: [SyncName: FieldMerge]?
        var textStates: [SyncName: String]?
        var seen: UInt32 = 0
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped else { throw Mismatch() }
                if isKey(key, "version") {
                    try Self.first(&seen, 0)
                    version = try int64()
                } else if isKey(key, "op") {
                    try Self.first(&seen, 1)
                    guard let value = RecordOperation(rawValue: try string()) else { throw Mismatch() }
                    op = value
                } else if isKey(key, "entity") {
                    try Self.first(&seen, 2)
                    entity = try string()
                } else if isKey(key, "recordID") {
                    try Self.first(&seen, 3)
                    recordID = try string()
                } else if isKey(key, "scope") {
                    try Self.first(&seen, 4)
                    scope = try string()
                } else if isKey(key, "fields") {
                    try Self.first(&seen, 5)
                    fields = try syncValues()
                } else if isKey(key, "links") {
                    try Self.first(&seen, 6)
                    links = try linkChanges()
                } else if isKey(key, "clientID") {
                    try Self.first(&seen, 7)
                    clientID = try null() ? nil : try string()
                } else if isKey(key, "mutationID") {
                    try Self.first(&seen, 8)
                    mutationID = try null() ? nil : try int64()
                } else if isKey(key, "merge") {
                    try Self.first(&seen, 9)
                    merge = try null() ? nil : try fieldMerges()
                } else if isKey(key, "textStates") {
                    try Self.first(&seen, 10)
                    if try !null() {
                        var states: [SyncName: String] = [:]
                        try members { reader, name, escaped in
                            guard states.updateValue(try reader.string(), forKey: try reader.text(name, escaped: escaped)) == nil else {
                                throw Mismatch()
                            }
                        }
                        textStates = states
                    }
                } else {
                    try skipValue()
                }
            } while try nextMember()
        }
        guard let version, let op, let entity, let recordID, let scope, let fields, let links else { throw Mismatch() }
        return PulledChange(
            version: version, op: op, entity: entity, recordID: recordID, scope: ScopeID(rawValue: scope), fields: fields, links: links,
            clientID: clientID, mutationID: mutationID, merge: merge, textStates: textStates)
    }
}
