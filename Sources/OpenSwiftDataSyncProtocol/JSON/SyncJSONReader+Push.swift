import Foundation

/// Values and push requests: the shapes `JSONEncoder.syncProtocol()` and ``SyncJSONWriter``
/// write, keys in their order where the hot paths read them. Anything else (another key order
/// inside a value, an unknown or repeated key, a schema) is a mismatch, left to `JSONDecoder`
/// and the error messages it gives.
extension SyncJSONReader {
    /// A push request in `bytes`, or nil when it is not one this reader takes.
    @inlinable
    package static func pushRequest(_ bytes: UnsafeRawBufferPointer) -> PushRequest? {
        read(bytes) { try $0.pushRequest() }
    }

    /// A ``SyncValue``: `null` or `{"t": kind, "v": value}`. The encoders write the kind first;
    /// a value before its kind (`JSONEncoder` without sorted keys) is read by coming back to it.
    @inlinable
    package mutating func syncValue() throws -> SyncValue {
        if try null() { return .null }
        try expect(UInt8(ascii: "{"))
        let (firstKey, _) = try memberKey()
        if isKey(firstKey, "t") {
            let kind = try valueKind()
            try expect(UInt8(ascii: ","))
            let (valueKey, _) = try memberKey()
            guard isKey(valueKey, "v") else { throw Mismatch() }
            let value = try self.value(of: kind)
            try expect(UInt8(ascii: "}"))
            return value
        }
        guard isKey(firstKey, "v") else { throw Mismatch() }
        // Every kind's value is a scalar: anything else is left to the decoder.
        guard try peek() != UInt8(ascii: "{"), try peek() != UInt8(ascii: "[") else { throw Mismatch() }
        let deferred = offset
        try skipValue()
        try expect(UInt8(ascii: ","))
        let (typeKey, _) = try memberKey()
        guard isKey(typeKey, "t") else { throw Mismatch() }
        let kind = try valueKind()
        try expect(UInt8(ascii: "}"))
        let end = offset
        rewind(to: deferred)
        let value = try self.value(of: kind)
        rewind(to: end)
        return value
    }

    /// A value kind's name.
    @inlinable
    mutating func valueKind() throws -> SyncValueKind {
        let (range, escaped) = try rawString()
        guard !escaped, let kind = kind(range) else { throw Mismatch() }
        return kind
    }

    /// The `v` of a value of `kind`.
    @inlinable
    mutating func value(of kind: SyncValueKind) throws -> SyncValue {
        switch kind {
        case .bool: return .bool(try bool())
        case .int: return .int(try int64())
        case .double:
            guard try peek() == UInt8(ascii: "\"") else { return .double(try double()) }
            switch try string() {
            case "nan": return .double(.nan)
            case "inf": return .double(.infinity)
            case "-inf": return .double(-.infinity)
            default: throw Mismatch()
            }
        case .date: return .date(try double())
        case .string: return .string(try string())
        case .url: return .url(try string())
        case .json: return .json(try string())
        case .reference: return .reference(try string())
        case .blob:
            guard let reference = BlobReference(try string()) else { throw Mismatch() }
            return .blob(reference)
        case .data:
            guard let data = Data(base64Encoded: try string()) else { throw Mismatch() }
            return .data(data)
        case .uuid:
            guard let uuid = UUID(uuidString: try string()) else { throw Mismatch() }
            return .uuid(uuid)
        case .decimal:
            let text = try string()
            // The check `SyncValue`'s decoder makes.
            guard SyncValue.isDecimalText(text) else { throw Mismatch() }
            return .decimal(text)
        }
    }

    /// Values by field name.
    @inlinable
    package mutating func syncValues() throws -> [SyncName: SyncValue] {
        var values: [SyncName: SyncValue] = [:]
        if try beginObject() {
            repeat {
                let (name, escaped) = try memberKey()
                guard values.updateValue(try syncValue(), forKey: try text(name, escaped: escaped)) == nil else { throw Mismatch() }
            } while try nextMember()
        }
        return values
    }

    /// A ``LinkChange``.
    @inlinable
    package mutating func linkChange() throws -> LinkChange {
        var added: [RecordID]?
        var removed: [RecordID]?
        try members { reader, key, escaped in
            guard !escaped else { throw Mismatch() }
            if reader.isKey(key, "added"), added == nil {
                added = try reader.strings()
            } else if reader.isKey(key, "removed"), removed == nil {
                removed = try reader.strings()
            } else {
                throw Mismatch()
            }
        }
        guard let added, let removed else { throw Mismatch() }
        return LinkChange(added: added, removed: removed)
    }

    /// A set's contribution, `{"add": [...], "remove": [...]}`.
    @inlinable
    package mutating func setChange() throws -> SetChange {
        var add: [String]?
        var remove: [String]?
        try members { reader, key, escaped in
            guard !escaped else { throw Mismatch() }
            if reader.isKey(key, "add"), add == nil {
                add = try reader.strings()
            } else if reader.isKey(key, "remove"), remove == nil {
                remove = try reader.strings()
            } else {
                throw Mismatch()
            }
        }
        return SetChange(add: add ?? [], remove: remove ?? [])
    }

    /// `{"del": [[start, count], ...], "ins": [[id, left|null, right|null, content], ...]}`.
    @inlinable
    mutating func textChange() throws -> TextChange {
        var insertions: [TextChange.Insertion]?
        var deletions: [TextChange.Deletion]?
        try members { reader, key, escaped in
            guard !escaped else { throw Mismatch() }
            if reader.isKey(key, "ins"), insertions == nil {
                insertions = try reader.array { reader in
                    try reader.expect(UInt8(ascii: "["))
                    let id = try reader.string()
                    try reader.expect(UInt8(ascii: ","))
                    let left = try reader.null() ? nil : try reader.string()
                    try reader.expect(UInt8(ascii: ","))
                    let right = try reader.null() ? nil : try reader.string()
                    try reader.expect(UInt8(ascii: ","))
                    let content = try reader.string()
                    try reader.expect(UInt8(ascii: "]"))
                    return TextChange.Insertion(id: id, left: left, right: right, content: content)
                }
            } else if reader.isKey(key, "del"), deletions == nil {
                deletions = try reader.array { reader in
                    try reader.expect(UInt8(ascii: "["))
                    let start = try reader.string()
                    try reader.expect(UInt8(ascii: ","))
                    guard let count = UInt32(exactly: try reader.int64()) else { throw Mismatch() }
                    try reader.expect(UInt8(ascii: "]"))
                    return TextChange.Deletion(start: start, count: count)
                }
            } else {
                throw Mismatch()
            }
        }
        return TextChange(insertions: insertions ?? [], deletions: deletions ?? [])
    }

    /// Contributions to merged fields by field name, each `{"counter": value}`,
    /// `{"set": {"add": [...], "remove": [...]}}` or `{"text": {"del": [...], "ins": [...]}}`.
    @inlinable
    package mutating func fieldMerges() throws -> [SyncName: FieldMerge] {
        var merges: [SyncName: FieldMerge] = [:]
        if try beginObject() {
            repeat {
                let (name, escaped) = try memberKey()
                guard try beginObject() else { throw Mismatch() }
                let (kind, kindEscaped) = try memberKey()
                guard !kindEscaped else { throw Mismatch() }
                let merge: FieldMerge
                if isKey(kind, "counter") {
                    merge = .counter(try syncValue())
                } else if isKey(kind, "set") {
                    merge = .set(try setChange())
                } else if isKey(kind, "text") {
                    merge = .text(try textChange())
                } else {
                    throw Mismatch()
                }
                guard try !nextMember() else { throw Mismatch() }
                guard merges.updateValue(merge, forKey: try text(name, escaped: escaped)) == nil else { throw Mismatch() }
            } while try nextMember()
        }
        return merges
    }

    /// Link changes by relationship name.
    @inlinable
    package mutating func linkChanges() throws -> [SyncName: LinkChange] {
        var changes: [SyncName: LinkChange] = [:]
        if try beginObject() {
            repeat {
                let (name, escaped) = try memberKey()
                guard changes.updateValue(try linkChange(), forKey: try text(name, escaped: escaped)) == nil else { throw Mismatch() }
            } while try nextMember()
        }
        return changes
    }

    @inlinable
    mutating func recordChange() throws -> RecordChange {
        var op: RecordOperation?
        var entity: SyncName?
        var recordID: RecordID?
        var scope: ScopeID?
        var baseVersion: ServerVersion?
        var fields: [SyncName: SyncValue]?
        var links: [SyncName: LinkChange]?
        var merge: [SyncName: FieldMerge]?
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped else { throw Mismatch() }
                if isKey(key, "op"), op == nil {
                    guard let parsed = RecordOperation(rawValue: try string()) else { throw Mismatch() }
                    op = parsed
                } else if isKey(key, "entity"), entity == nil {
                    entity = try string()
                } else if isKey(key, "recordID"), recordID == nil {
                    recordID = try string()
                } else if isKey(key, "scope"), scope == nil {
                    scope = ScopeID(rawValue: try string())
                } else if isKey(key, "baseVersion"), baseVersion == nil {
                    baseVersion = try int64()
                } else if isKey(key, "fields"), fields == nil {
                    fields = try syncValues()
                } else if isKey(key, "links"), links == nil {
                    links = try linkChanges()
                } else if isKey(key, "merge"), merge == nil {
                    merge = try fieldMerges()
                } else {
                    // A null, a repeated key or an unknown one: the decoder decides.
                    throw Mismatch()
                }
            } while try nextMember()
        }
        guard let op, let entity, let recordID, let scope else { throw Mismatch() }
        return RecordChange(
            op: op, entity: entity, recordID: recordID, scope: scope, baseVersion: baseVersion, fields: fields ?? [:], links: links ?? [:],
            merge: merge ?? [:])
    }

    @inlinable
    mutating func mutation() throws -> Mutation {
        var id: MutationID?
        var stamp: HLCTimestamp?
        var changes: [RecordChange]?
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped else { throw Mismatch() }
                if isKey(key, "id"), id == nil {
                    id = try int64()
                } else if isKey(key, "stamp"), stamp == nil {
                    stamp = try self.stamp()
                } else if isKey(key, "changes"), changes == nil {
                    changes = try array { try $0.recordChange() }
                } else {
                    throw Mismatch()
                }
            } while try nextMember()
        }
        guard let id, let stamp, let changes else { throw Mismatch() }
        return Mutation(id: id, stamp: stamp, changes: changes)
    }

    /// A ``PushRequest`` of a supported protocol version without a schema. Anything else (a
    /// schema, an unsupported version, a malformed part) is a mismatch.
    @inlinable
    mutating func pushRequest() throws -> PushRequest {
        var version: Int64?
        var clientID: ClientID?
        var mutations: [Mutation]?
        var cursor: String?
        var predecessors: [ClientID: MutationID]?
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped else { throw Mismatch() }
                if isKey(key, "protocolVersion"), version == nil {
                    version = try int64()
                } else if isKey(key, "clientID"), clientID == nil {
                    clientID = try string()
                } else if isKey(key, "cursor"), cursor == nil {
                    cursor = try string()
                } else if isKey(key, "mutations"), mutations == nil {
                    mutations = try array { try $0.mutation() }
                } else if isKey(key, "predecessors"), predecessors == nil {
                    var ids: [ClientID: MutationID] = [:]
                    if try beginObject() {
                        repeat {
                            let (client, clientEscaped) = try memberKey()
                            guard ids.updateValue(try int64(), forKey: try text(client, escaped: clientEscaped)) == nil else { throw Mismatch() }
                        } while try nextMember()
                    }
                    predecessors = ids
                } else {
                    throw Mismatch()
                }
            } while try nextMember()
        }
        guard let version, let clientID, let mutations, let rawVersion = Int(exactly: version) else { throw Mismatch() }
        let protocolVersion = ProtocolVersion(rawValue: rawVersion)
        guard ProtocolVersion.supported.contains(protocolVersion) else { throw Mismatch() }
        return PushRequest(protocolVersion: protocolVersion, clientID: clientID, mutations: mutations, cursor: cursor, predecessors: predecessors)
    }
}
