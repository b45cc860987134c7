import Foundation

/// Writes protocol messages by hand, byte for byte as `JSONEncoder.syncProtocol()` writes them
/// (sorted keys, no whitespace, slashes unescaped, doubles as their shortest text without a
/// trailing `.0`, optionals left out when nil): the engine's push requests, the server's
/// answers, and (through extensions of the server's) its stored columns.
///
/// Byte identity matters for the mutation hashes (a replay is recognised by the hash of the
/// mutation's encoding, and stores hold hashes made by `JSONEncoder`); `SyncJSONWriterTests`
/// compares every writer here with `JSONEncoder` on the same values, so a change to a
/// protocol type's `Codable` shows up there.
package struct SyncJSONWriter {
    /// The bytes written so far.
    package var bytes: [UInt8] = []

    /// A writer whose buffer has room for `capacity` bytes.
    @inlinable
    package init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// The bytes written, as `Data`.
    @inlinable package var data: Data { Data(bytes) }

    @usableFromInline static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Bytes written as they are.
    @inlinable
    package mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// One ASCII byte.
    @inlinable
    package mutating func byte(_ ascii: Unicode.Scalar) {
        bytes.append(UInt8(ascii: ascii))
    }

    // MARK: Scalars

    /// A JSON string: `"` and `\` escaped, control characters as `\b \f \n \r \t` or `\u00xx`,
    /// everything else (slashes, non-ASCII) as its UTF-8 bytes.
    @inlinable
    package mutating func string(_ text: String) {
        byte("\"")
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0x08: raw("\\b")
            case 0x0C: raw("\\f")
            case 0..<0x20:
                raw("\\u00")
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        byte("\"")
    }

    /// An integer.
    @inlinable
    package mutating func int(_ value: Int64) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// An integer.
    @inlinable
    package mutating func int(_ value: Int) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// `true` or `false`.
    @inlinable
    package mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    /// A finite double: its shortest round-tripping text, without a trailing `.0` (`1`,
    /// `0.1`, `1e-07`, `-0`). Throws for a non-finite one, as `JSONEncoder` does.
    @inlinable
    package mutating func double(_ value: Double) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: [], debugDescription: "\(value) is not a JSON number"))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A ``HLCTimestamp``: its decimal digits in a string.
    @inlinable
    package mutating func stamp(_ stamp: HLCTimestamp) {
        byte("\"")
        bytes.append(contentsOf: String(stamp.rawValue).utf8)
        byte("\"")
    }

    /// An object's key (ASCII without escapes) and its colon.
    @inlinable
    package mutating func key(_ name: StaticString) {
        byte("\"")
        raw(name)
        raw("\":")
    }

    /// An array of strings.
    @inlinable
    package mutating func stringArray(_ values: [String]) {
        byte("[")
        for (index, value) in values.enumerated() {
            if index > 0 { byte(",") }
            string(value)
        }
        byte("]")
    }

    /// Whether `a`'s UTF-8 bytes sort before `b`'s (`JSONEncoder`'s `.sortedKeys` order on
    /// Linux), compared with `memcmp`.
    ///
    /// Safety: `withUTF8` hands out buffers valid for the closure, `memcmp` reads `common`
    /// bytes, no more than either buffer holds, and a buffer without a base address is empty.
    @inlinable
    static func precedesInUTF8(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let common = Swift.min(x.count, y.count)
                if common > 0, let p = x.baseAddress, let q = y.baseAddress {
                    let order = memcmp(p, q, common)
                    if order != 0 { return order < 0 }
                }
                return x.count < y.count
            }
        }
    }

    /// A dictionary with string keys, in the order of their UTF-8 bytes: `JSONEncoder`'s
    /// `.sortedKeys` order on Linux (`String`'s `<` differs for text that is not in NFC).
    @inlinable
    package mutating func object<Value>(_ dictionary: [String: Value], _ value: (inout SyncJSONWriter, Value) throws -> Void) rethrows {
        byte("{")
        if dictionary.count == 1, let only = dictionary.first {
            string(only.key)
            byte(":")
            try value(&self, only.value)
        } else {
            for (index, name) in dictionary.keys.sorted(by: Self.precedesInUTF8).enumerated() {
                guard let element = dictionary[name] else { continue }
                if index > 0 { byte(",") }
                string(name)
                byte(":")
                try value(&self, element)
            }
        }
        byte("}")
    }

    // MARK: Protocol values

    /// A ``SyncValue``: `null` or `{"t": kind, "v": value}`.
    @inlinable
    package mutating func syncValue(_ value: SyncValue) throws {
        guard let kind = value.kind else {
            raw("null")
            return
        }
        raw("{\"t\":")
        string(kind.rawValue)
        raw(",\"v\":")
        switch value {
        case .null: break
        case .bool(let flag): bool(flag)
        case .int(let number): int(number)
        case .double(let number):
            if number.isNaN {
                raw("\"nan\"")
            } else if number.isInfinite {
                if number < 0 { raw("\"-inf\"") } else { raw("\"inf\"") }
            } else {
                try double(number)
            }
        case .date(let seconds): try double(seconds)
        case .string(let text), .decimal(let text), .url(let text), .json(let text), .reference(let text): string(text)
        case .data(let data): string(data.base64EncodedString())
        case .uuid(let uuid): string(uuid.uuidString)
        case .blob(let reference): string(reference.description)
        }
        byte("}")
    }

    /// Values by field name.
    @inlinable
    package mutating func values(_ fields: [SyncName: SyncValue]) throws {
        try object(fields) { writer, value in try writer.syncValue(value) }
    }

    /// A ``LinkChange``.
    @inlinable
    package mutating func linkChange(_ change: LinkChange) {
        raw("{\"added\":")
        stringArray(change.added)
        raw(",\"removed\":")
        stringArray(change.removed)
        byte("}")
    }

    /// Link changes by relationship name.
    @inlinable
    package mutating func linkChanges(_ links: [SyncName: LinkChange]) {
        object(links) { writer, change in writer.linkChange(change) }
    }

    /// A ``RecordChange`` (fields and links left out when empty, as its `encode(to:)` does).
    @inlinable
    package mutating func recordChange(_ change: RecordChange) throws {
        byte("{")
        if let base = change.baseVersion {
            key("baseVersion")
            int(base)
            byte(",")
        }
        key("entity")
        string(change.entity)
        if !change.fields.isEmpty {
            raw(",\"fields\":")
            try values(change.fields)
        }
        if !change.links.isEmpty {
            raw(",\"links\":")
            linkChanges(change.links)
        }
        if !change.merge.isEmpty {
            raw(",\"merge\":")
            try fieldMerges(change.merge)
        }
        raw(",\"op\":")
        string(change.op.rawValue)
        raw(",\"recordID\":")
        string(change.recordID)
        raw(",\"scope\":")
        string(change.scope.rawValue)
        byte("}")
    }

    /// A ``Mutation``.
    @inlinable
    package mutating func mutation(_ mutation: Mutation) throws {
        raw("{\"changes\":[")
        for (index, change) in mutation.changes.enumerated() {
            if index > 0 { byte(",") }
            try recordChange(change)
        }
        raw("],\"id\":")
        int(mutation.id)
        raw(",\"stamp\":")
        stamp(mutation.stamp)
        byte("}")
    }

    /// A ``RecordState``.
    @inlinable
    package mutating func recordState(_ state: RecordState) throws {
        raw("{\"deleted\":")
        bool(state.deleted)
        raw(",\"entity\":")
        string(state.entity)
        raw(",\"fields\":")
        try values(state.fields)
        raw(",\"links\":")
        object(state.links) { writer, targets in writer.stringArray(targets) }
        raw(",\"recordID\":")
        string(state.recordID)
        raw(",\"scope\":")
        string(state.scope.rawValue)
        raw(",\"version\":")
        int(state.version)
        byte("}")
    }

    /// A ``PushRequest`` without a schema (the engine sends a schema rarely, through
    /// `JSONEncoder`): throws for one with a schema.
    @inlinable
    package mutating func pushRequest(_ request: PushRequest) throws {
        guard request.schema == nil else {
            throw EncodingError.invalidValue(
                request, EncodingError.Context(codingPath: [], debugDescription: "a push request with a schema is written by JSONEncoder"))
        }
        raw("{\"clientID\":")
        string(request.clientID)
        if let cursor = request.cursor {
            raw(",\"cursor\":")
            string(cursor)
        }
        raw(",\"mutations\":[")
        for (index, mutation) in request.mutations.enumerated() {
            if index > 0 { byte(",") }
            try self.mutation(mutation)
        }
        byte("]")
        if let predecessors = request.predecessors {
            raw(",\"predecessors\":")
            object(predecessors) { writer, id in writer.int(id) }
        }
        raw(",\"protocolVersion\":")
        int(request.protocolVersion.rawValue)
        byte("}")
    }

    /// A ``MutationResult``.
    @inlinable
    package mutating func mutationResult(_ result: MutationResult) throws {
        raw("{\"id\":")
        int(result.id)
        if let message = result.message {
            raw(",\"message\":")
            string(message)
        }
        if let reason = result.reason {
            raw(",\"reason\":")
            string(reason.rawValue)
        }
        if let records = result.serverRecords {
            raw(",\"serverRecords\":[")
            for (index, record) in records.enumerated() {
                if index > 0 { byte(",") }
                try recordState(record)
            }
            byte("]")
        }
        raw(",\"status\":")
        string(result.status.rawValue)
        byte("}")
    }

    /// A ``PushResponse``.
    @inlinable
    package mutating func pushResponse(_ response: PushResponse) throws {
        raw("{\"lastMutationID\":")
        int(response.lastMutationID)
        raw(",\"protocolVersion\":")
        int(response.protocolVersion.rawValue)
        raw(",\"results\":[")
        for (index, result) in response.results.enumerated() {
            if index > 0 { byte(",") }
            try mutationResult(result)
        }
        raw("],\"serverStamp\":")
        stamp(response.serverStamp)
        byte("}")
    }

    /// A ``PulledChange``.
    @inlinable
    package mutating func pulledChange(_ change: PulledChange) throws {
        byte("{")
        if let client = change.clientID {
            key("clientID")
            string(client)
            byte(",")
        }
        key("entity")
        string(change.entity)
        raw(",\"fields\":")
        try values(change.fields)
        raw(",\"links\":")
        linkChanges(change.links)
        if let merge = change.merge {
            raw(",\"merge\":")
            try fieldMerges(merge)
        }
        if let mutation = change.mutationID {
            raw(",\"mutationID\":")
            int(mutation)
        }
        raw(",\"op\":")
        string(change.op.rawValue)
        raw(",\"recordID\":")
        string(change.recordID)
        raw(",\"scope\":")
        string(change.scope.rawValue)
        if let states = change.textStates {
            raw(",\"textStates\":")
            object(states) { writer, state in writer.string(state) }
        }
        raw(",\"version\":")
        int(change.version)
        byte("}")
    }

    /// A ``PullResponse``.
    @inlinable
    package mutating func pullResponse(_ response: PullResponse) throws {
        raw("{\"changes\":[")
        for (index, change) in response.changes.enumerated() {
            if index > 0 { byte(",") }
            try pulledChange(change)
        }
        raw("],\"consistent\":")
        bool(response.consistent)
        raw(",\"cursor\":")
        string(response.cursor)
        if let scopes = response.cursorScopes {
            raw(",\"cursorScopes\":")
            stringArray(scopes.map(\.rawValue))
        }
        raw(",\"hasMore\":")
        bool(response.hasMore)
        raw(",\"lastMutationID\":")
        int(response.lastMutationID)
        if let progress = response.progress {
            raw(",\"progress\":{\"received\":")
            int(progress.received)
            raw(",\"total\":")
            int(progress.total)
            byte("}")
        }
        raw(",\"protocolVersion\":")
        int(response.protocolVersion.rawValue)
        if let reset = response.reset {
            raw(",\"reset\":")
            string(reset.rawValue)
        }
        raw(",\"revokedScopes\":")
        stringArray(response.revokedScopes.map(\.rawValue))
        raw(",\"serverStamp\":")
        stamp(response.serverStamp)
        if let scopes = response.snapshotScopes {
            raw(",\"snapshotScopes\":")
            stringArray(scopes.map(\.rawValue))
        }
        byte("}")
    }
}
