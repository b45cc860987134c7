import Foundation
import OpenSwiftDataSyncProtocol

/// Reads a pull page's JSON into a ``PullResponse`` in one pass over the bytes, without
/// `JSONDecoder`'s per-value containers: a first download is mostly this decoding.
///
/// It reads what `osd-server` writes (and any other valid JSON of the same shape, keys in any
/// order, unknown keys skipped). Anything it does not expect (a value of another type, a
/// malformed number or string, invalid UTF-8) makes it return nil, and the caller decodes
/// with `JSONDecoder`, which names the fault: the two agree on every page this one accepts.
struct PullPageReader {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    private init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The page in `data`, or nil when it is not a pull page this reader accepts.
    static func read(_ data: Data) -> PullResponse? {
        data.withUnsafeBytes { buffer -> PullResponse? in
            var reader = PullPageReader(buffer)
            guard let page = reader.response() else { return nil }
            reader.skipSpace()
            return reader.index == buffer.count ? page : nil
        }
    }

    // MARK: Grammar

    private struct Fail: Error {}

    private mutating func response() -> PullResponse? {
        var version: Int?
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
        do {
            try object { reader, key in
                switch key {
                case "protocolVersion": version = Int(try reader.integer())
                case "changes": changes = try reader.changes()
                case "cursor": cursor = try reader.string()
                case "hasMore": hasMore = try reader.bool()
                case "consistent": consistent = try reader.bool()
                case "lastMutationID": lastMutationID = try reader.integer()
                case "reset":
                    if try reader.null() { break }
                    guard let reason = ResetReason(rawValue: try reader.string()) else { throw Fail() }
                    reset = reason
                case "revokedScopes": revoked = try reader.strings().map(ScopeID.init(rawValue:))
                case "cursorScopes":
                    if try reader.null() { break }
                    cursorScopes = try reader.strings().map(ScopeID.init(rawValue:))
                case "snapshotScopes":
                    if try reader.null() { break }
                    snapshotScopes = try reader.strings().map(ScopeID.init(rawValue:))
                case "progress":
                    if try reader.null() { break }
                    var received: Int64?
                    var total: Int64?
                    try reader.object { reader, key in
                        switch key {
                        case "received": received = try reader.integer()
                        case "total": total = try reader.integer()
                        default: try reader.skipValue()
                        }
                    }
                    guard let received, let total else { throw Fail() }
                    progress = PullProgress(received: Int(received), total: Int(total))
                case "serverStamp":
                    guard let value = UInt64(try reader.string()) else { throw Fail() }
                    stamp = HLCTimestamp(rawValue: value)
                default: try reader.skipValue()
                }
            }
        } catch {
            return nil
        }
        guard let version, let changes, let cursor, let hasMore, let consistent, let lastMutationID, let revoked, let stamp else { return nil }
        return PullResponse(
            protocolVersion: ProtocolVersion(rawValue: version), changes: changes, cursor: cursor, hasMore: hasMore, consistent: consistent,
            lastMutationID: lastMutationID, reset: reset, revokedScopes: revoked, progress: progress, serverStamp: stamp,
            snapshotScopes: snapshotScopes, cursorScopes: cursorScopes)
    }

    private mutating func changes() throws -> [PulledChange] {
        var changes: [PulledChange] = []
        try array { reader in changes.append(try reader.change()) }
        return changes
    }

    private mutating func change() throws -> PulledChange {
        var version: Int64?
        var op: RecordOperation?
        var entity: String?
        var recordID: String?
        var scope: String?
        var fields: [SyncName: SyncValue]?
        var links: [SyncName: LinkChange]?
        var clientID: String?
        var mutationID: Int64?
        try object { reader, key in
            switch key {
            case "version": version = try reader.integer()
            case "op":
                guard let value = RecordOperation(rawValue: try reader.string()) else { throw Fail() }
                op = value
            case "entity": entity = try reader.string()
            case "recordID": recordID = try reader.string()
            case "scope": scope = try reader.string()
            case "fields":
                var values: [SyncName: SyncValue] = [:]
                try reader.object { reader, name in values[name] = try reader.value() }
                fields = values
            case "links":
                var changes: [SyncName: LinkChange] = [:]
                try reader.object { reader, name in changes[name] = try reader.link() }
                links = changes
            case "clientID": clientID = try reader.null() ? nil : try reader.string()
            case "mutationID": mutationID = try reader.null() ? nil : try reader.integer()
            default: try reader.skipValue()
            }
        }
        guard let version, let op, let entity, let recordID, let scope, let fields, let links else { throw Fail() }
        return PulledChange(
            version: version, op: op, entity: entity, recordID: recordID, scope: ScopeID(rawValue: scope), fields: fields, links: links,
            clientID: clientID, mutationID: mutationID)
    }

    private mutating func link() throws -> LinkChange {
        var added: [String]?
        var removed: [String]?
        try object { reader, key in
            switch key {
            case "added": added = try reader.strings()
            case "removed": removed = try reader.strings()
            default: try reader.skipValue()
            }
        }
        guard let added, let removed else { throw Fail() }
        return LinkChange(added: added, removed: removed)
    }

    /// A ``SyncValue``: `null` or `{"t": kind, "v": value}`.
    private mutating func value() throws -> SyncValue {
        if try null() { return .null }
        let start = index
        var kind: SyncValueKind?
        var text: String?
        var number: (integer: Int64?, double: Double)?
        var flag: Bool?
        try object { reader, key in
            switch key {
            case "t":
                guard let value = SyncValueKind(rawValue: try reader.string()) else { throw Fail() }
                kind = value
            case "v":
                reader.skipSpace()
                switch reader.peek() {
                case UInt8(ascii: "\""): text = try reader.string()
                case UInt8(ascii: "t"), UInt8(ascii: "f"): flag = try reader.bool()
                default: number = try reader.number()
                }
            default: try reader.skipValue()
            }
        }
        switch kind {
        case .bool?: if let flag { return .bool(flag) }
        case .int?: if let integer = number?.integer { return .int(integer) }
        case .double?:
            if let number { return .double(number.double) }
            switch text {
            case "nan"?: return .double(.nan)
            case "inf"?: return .double(.infinity)
            case "-inf"?: return .double(-.infinity)
            default: break
            }
        case .date?: if let number { return .date(number.double) }
        case .string?: if let text { return .string(text) }
        case .url?: if let text { return .url(text) }
        case .json?: if let text { return .json(text) }
        case .reference?: if let text { return .reference(text) }
        case .data?: if let text, let data = Data(base64Encoded: text) { return .data(data) }
        case .uuid?: if let text, let uuid = UUID(uuidString: text) { return .uuid(uuid) }
        case .decimal?:
            // Rare: its text check is the protocol's own, through its decoder.
            let slice = Data(bytes[start..<index])
            if let value = try? JSONDecoder().decode(SyncValue.self, from: slice) { return value }
        case nil: break
        }
        throw Fail()
    }

    // MARK: Tokens

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8) throws {
        skipSpace()
        guard peek() == byte else { throw Fail() }
        index += 1
    }

    private mutating func literal(_ text: String) throws {
        for byte in text.utf8 {
            guard peek() == byte else { throw Fail() }
            index += 1
        }
    }

    /// Consumes `null` if it is next.
    private mutating func null() throws -> Bool {
        skipSpace()
        guard peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    private mutating func bool() throws -> Bool {
        skipSpace()
        switch peek() {
        case UInt8(ascii: "t"):
            try literal("true")
            return true
        case UInt8(ascii: "f"):
            try literal("false")
            return false
        default: throw Fail()
        }
    }

    /// `{ "key": value, ... }`, calling `body` for each key with the reader before its value.
    private mutating func object(_ body: (inout PullPageReader, String) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        skipSpace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            let key = try string()
            try expect(UInt8(ascii: ":"))
            try body(&self, key)
            skipSpace()
            guard let next = peek() else { throw Fail() }
            index += 1
            if next == UInt8(ascii: "}") { return }
            guard next == UInt8(ascii: ",") else { throw Fail() }
        }
    }

    private mutating func array(_ body: (inout PullPageReader) throws -> Void) throws {
        try expect(UInt8(ascii: "["))
        skipSpace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            try body(&self)
            skipSpace()
            guard let next = peek() else { throw Fail() }
            index += 1
            if next == UInt8(ascii: "]") { return }
            guard next == UInt8(ascii: ",") else { throw Fail() }
        }
    }

    private mutating func strings() throws -> [String] {
        var values: [String] = []
        try array { reader in values.append(try reader.string()) }
        return values
    }

    private mutating func string() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        var escaped = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                index += 2
                continue
            }
            guard byte >= 0x20 else { throw Fail() }
            index += 1
        }
        guard index < bytes.count else { throw Fail() }
        let end = index
        index += 1
        if !escaped {
            guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self) else { throw Fail() }
            return text
        }
        guard let text = JSONBytes.unescape(bytes, start..<end) else { throw Fail() }
        return text
    }

    /// A JSON number: its exact integer value when it has no fraction or exponent (and fits),
    /// and its double value.
    private mutating func number() throws -> (integer: Int64?, double: Double) {
        skipSpace()
        let start = index
        var integral = true
        while index < bytes.count {
            let byte = bytes[index]
            if (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") {
                index += 1
            } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "+") {
                integral = false
                index += 1
            } else {
                break
            }
        }
        guard index > start, JSONBytes.isNumber(bytes, start..<index),
            let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        else { throw Fail() }
        guard let double = Double(text) else { throw Fail() }
        return (integral ? Int64(text) : nil, double)
    }

    private mutating func integer() throws -> Int64 {
        guard let integer = try number().integer else { throw Fail() }
        return integer
    }

    /// Skips any JSON value.
    private mutating func skipValue() throws {
        skipSpace()
        switch peek() {
        case UInt8(ascii: "{")?: try object { reader, _ in try reader.skipValue() }
        case UInt8(ascii: "[")?: try array { reader in try reader.skipValue() }
        case UInt8(ascii: "\"")?: _ = try string()
        case UInt8(ascii: "t")?, UInt8(ascii: "f")?: _ = try bool()
        case UInt8(ascii: "n")?: _ = try null()
        default: _ = try number()
        }
    }
}
