import Foundation
import OpenSwiftDataSyncProtocol

/// Stored data the SQLite storage cannot read: a column whose bytes are not the form it
/// writes. Thrown instead of a `DecodingError`, naming the table and column.
struct StoredDataError: Error, CustomStringConvertible {
    /// Where the bytes came from (`osd_records.fields`).
    var column: String
    /// What is wrong with them.
    var reason: String

    var description: String { "the stored \(column) is malformed: \(reason)" }
}

// MARK: Reading

/// The stored JSON columns (`osd_records.fields`, `osd_changes.payload`), read by hand.
///
/// The columns are the JSON `JSONEncoder` writes for `[SyncName: StoredField]` and
/// ``ChangePayload`` (stores written before the hand-written encoder hold exactly that form,
/// and ``SyncJSONWriter`` writes the same). The fast path reads the common shapes without
/// Foundation's decoder; any shape it does not expect (a value kind it leaves to `SyncValue`'s
/// own decoding, keys in another order, unknown keys) falls back to `JSONDecoder`, so the
/// accepted language is exactly what it was.
enum StoredJSON {
    /// Reads a record's stored fields.
    static func fields(_ data: Data) throws -> [SyncName: StoredField] {
        let fast: [SyncName: StoredField]? = data.withUnsafeBytes { bytes in
            var scanner = StoredJSONScanner(bytes: bytes)
            return try? scanner.storedFields()
        }
        if let fast { return fast }
        do {
            return try JSONDecoder().decode([SyncName: StoredField].self, from: data)
        } catch {
            throw StoredDataError(column: "osd_records.fields", reason: "\(error)")
        }
    }

    /// Reads a log entry's payload.
    static func payload(_ data: Data) throws -> ChangePayload {
        let fast: ChangePayload? = data.withUnsafeBytes { bytes in
            var scanner = StoredJSONScanner(bytes: bytes)
            return try? scanner.changePayload()
        }
        if let fast { return fast }
        do {
            return try JSONDecoder().decode(ChangePayload.self, from: data)
        } catch {
            throw StoredDataError(column: "osd_changes.payload", reason: "\(error)")
        }
    }
}

/// A forward-only reader over JSON bytes for the stored columns' shapes. Every `throw` means
/// "not the expected shape": the caller falls back to `JSONDecoder`.
///
/// Safety: `bytes` is only read at `position` after checking `position < bytes.count` (in
/// `peek`, `next` and the scanning loops), and ranges handed out lie within
/// `0..<bytes.count`; the buffer outlives the scanner (it is used only inside
/// `Data.withUnsafeBytes`).
struct StoredJSONScanner {
    struct Mismatch: Error {}

    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    // MARK: Tokens

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private mutating func peek() throws -> UInt8 {
        skipWhitespace()
        guard position < bytes.count else { throw Mismatch() }
        return bytes[position]
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard try peek() == byte else { throw Mismatch() }
        position += 1
    }

    private mutating func consume(_ byte: UInt8) throws -> Bool {
        guard try peek() == byte else { return false }
        position += 1
        return true
    }

    private mutating func literal(_ text: StaticString) throws {
        skipWhitespace()
        let matches = text.withUTF8Buffer { expected in
            bytes.count - position >= expected.count && expected.indices.allSatisfy { bytes[position + $0] == expected[$0] }
        }
        guard matches else { throw Mismatch() }
        position += text.utf8CodeUnitCount
    }

    /// The end of input, after whitespace.
    private mutating func end() throws {
        skipWhitespace()
        guard position == bytes.count else { throw Mismatch() }
    }

    /// A string token's contents: the byte range between the quotes, and whether it holds
    /// escapes.
    private mutating func rawString() throws -> (range: Range<Int>, escaped: Bool) {
        try expect(UInt8(ascii: "\""))
        let start = position
        var escaped = false
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let range = start..<position
                position += 1
                return (range, escaped)
            }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                position += 2
                continue
            }
            if byte < 0x20 { throw Mismatch() }
            position += 1
        }
        throw Mismatch()
    }

    private func isKey(_ range: Range<Int>, _ ascii: Unicode.Scalar) -> Bool {
        range.count == 1 && bytes[range.lowerBound] == UInt8(ascii: ascii)
    }

    private func text(_ range: Range<Int>, escaped: Bool) throws -> String {
        if !escaped {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
            // ASCII is valid UTF-8 as it is: decode it without the (generic, slower) validation.
            if slice.allSatisfy({ $0 < 0x80 }) { return String(decoding: slice, as: UTF8.self) }
            guard let text = String(validating: slice, as: UTF8.self) else { throw Mismatch() }
            return text
        }
        guard let text = JSONBytes.unescape(bytes, range) else { throw Mismatch() }
        return text
    }

    private mutating func string() throws -> String {
        let (range, escaped) = try rawString()
        return try text(range, escaped: escaped)
    }

    /// A number token's bytes.
    private mutating func numberRange() throws -> Range<Int> {
        skipWhitespace()
        let start = position
        while position < bytes.count {
            switch bytes[position] {
            case 0x30...0x39, UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): position += 1
            default:
                guard position > start else { throw Mismatch() }
                return start..<position
            }
        }
        guard position > start else { throw Mismatch() }
        return start..<position
    }

    private mutating func int64() throws -> Int64 {
        let range = try numberRange()
        guard JSONBytes.isNumber(bytes, range) else { throw Mismatch() }
        var index = range.lowerBound
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < range.upperBound else { throw Mismatch() }
        var value: Int64 = 0
        while index < range.upperBound {
            let byte = bytes[index]
            guard byte >= 0x30, byte <= 0x39 else { throw Mismatch() }
            let digit = Int64(byte - 0x30)
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { throw Mismatch() }
            value = next
            index += 1
        }
        return value
    }

    private mutating func double() throws -> Double {
        let range = try numberRange()
        guard JSONBytes.isNumber(bytes, range) else { throw Mismatch() }
        // JSON numbers are ASCII; `Double(_:)` reads the same grammar (and more, such as
        // "inf", which `numberRange` never hands it).
        guard let value = Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)), value.isFinite else {
            throw Mismatch()
        }
        return value
    }

    private mutating func stamp() throws -> HLCTimestamp {
        let (range, escaped) = try rawString()
        guard !escaped, !range.isEmpty, range.count <= 20 else { throw Mismatch() }
        var value: UInt64 = 0
        for index in range {
            let byte = bytes[index]
            guard byte >= 0x30, byte <= 0x39 else { throw Mismatch() }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times.addingReportingOverflow(UInt64(byte - 0x30))
            guard !overflow1, !overflow2 else { throw Mismatch() }
            value = next
        }
        return HLCTimestamp(rawValue: value)
    }

    /// Calls `body` for each member of an object, with the key's raw range.
    private mutating func members(_ body: (inout StoredJSONScanner, _ key: Range<Int>, _ escaped: Bool) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        if try consume(UInt8(ascii: "}")) { return }
        repeat {
            let (key, escaped) = try rawString()
            try expect(UInt8(ascii: ":"))
            try body(&self, key, escaped)
        } while try consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"))
    }

    // MARK: Shapes

    /// A `SyncValue`: `null` or `{"t": kind, "v": value}` (kind first, as the encoder writes
    /// it). Kinds whose checks live in `SyncValue`'s decoder (`decimal`) are a mismatch.
    mutating func syncValue() throws -> SyncValue {
        if try peek() == UInt8(ascii: "n") {
            try literal("null")
            return .null
        }
        try expect(UInt8(ascii: "{"))
        let (typeKey, _) = try rawString()
        guard isKey(typeKey, "t") else { throw Mismatch() }
        try expect(UInt8(ascii: ":"))
        let (kindRange, kindEscaped) = try rawString()
        guard !kindEscaped, let kind = kind(kindRange) else { throw Mismatch() }
        try expect(UInt8(ascii: ","))
        let (valueKey, _) = try rawString()
        guard isKey(valueKey, "v") else { throw Mismatch() }
        try expect(UInt8(ascii: ":"))
        let value: SyncValue
        switch kind {
        case .bool:
            if try peek() == UInt8(ascii: "t") {
                try literal("true")
                value = .bool(true)
            } else {
                try literal("false")
                value = .bool(false)
            }
        case .int: value = .int(try int64())
        case .double:
            if try peek() == UInt8(ascii: "\"") {
                switch try string() {
                case "nan": value = .double(.nan)
                case "inf": value = .double(.infinity)
                case "-inf": value = .double(-.infinity)
                default: throw Mismatch()
                }
            } else {
                value = .double(try double())
            }
        case .date: value = .date(try double())
        case .string: value = .string(try string())
        case .url: value = .url(try string())
        case .json: value = .json(try string())
        case .reference: value = .reference(try string())
        case .data:
            guard let data = Data(base64Encoded: try string()) else { throw Mismatch() }
            value = .data(data)
        case .uuid:
            guard let uuid = UUID(uuidString: try string()) else { throw Mismatch() }
            value = .uuid(uuid)
        case .decimal:
            throw Mismatch()
        }
        try expect(UInt8(ascii: "}"))
        return value
    }

    /// The kinds' names as bytes, to match a kind without making a `String` of it.
    private static let kinds: [(name: [UInt8], kind: SyncValueKind)] = SyncValueKind.allCases.map { (Array($0.rawValue.utf8), $0) }

    private func kind(_ range: Range<Int>) -> SyncValueKind? {
        for entry in Self.kinds where entry.name.count == range.count {
            if entry.name.indices.allSatisfy({ bytes[range.lowerBound + $0] == entry.name[$0] }) { return entry.kind }
        }
        return nil
    }

    /// Starts an object: true when it has members (the first key comes next), false when it
    /// was `{}`.
    private mutating func beginObject() throws -> Bool {
        try expect(UInt8(ascii: "{"))
        return try !consume(UInt8(ascii: "}"))
    }

    /// After a member's value: true when another member follows, false at the object's end.
    private mutating func nextMember() throws -> Bool {
        if try consume(UInt8(ascii: ",")) { return true }
        try expect(UInt8(ascii: "}"))
        return false
    }

    /// A member's key and the colon after it.
    private mutating func memberKey() throws -> (range: Range<Int>, escaped: Bool) {
        let key = try rawString()
        try expect(UInt8(ascii: ":"))
        return key
    }

    // The two hot shapes below read their members in a loop rather than through `members`,
    // whose closure would box every local it assigns.

    private mutating func storedField() throws -> StoredField {
        var value: SyncValue?
        var kind: SyncValueKind?
        var stamp: HLCTimestamp?
        var client: ClientID?
        var merge: MergeKind?
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped, key.count == 1 else { throw Mismatch() }
                switch bytes[key.lowerBound] {
                case UInt8(ascii: "v"): value = try syncValue()
                case UInt8(ascii: "k"):
                    if try peek() == UInt8(ascii: "n") {
                        try literal("null")
                    } else {
                        let (range, escaped) = try rawString()
                        guard !escaped, let parsed = self.kind(range) else { throw Mismatch() }
                        kind = parsed
                    }
                case UInt8(ascii: "s"): stamp = try self.stamp()
                case UInt8(ascii: "c"): client = try string()
                case UInt8(ascii: "m"):
                    guard let parsed = MergeKind(rawValue: try string()) else { throw Mismatch() }
                    merge = parsed
                default: throw Mismatch()
                }
            } while try nextMember()
        }
        guard let value, let stamp, let client else { throw Mismatch() }
        return StoredField(value: value, kind: kind, stamp: stamp, client: client, merge: merge)
    }

    /// `[SyncName: StoredField]`, the whole input.
    mutating func storedFields() throws -> [SyncName: StoredField] {
        var fields: [SyncName: StoredField] = [:]
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                let name = try text(key, escaped: escaped)
                guard fields.updateValue(try storedField(), forKey: name) == nil else { throw Mismatch() }
            } while try nextMember()
        }
        try end()
        return fields
    }

    // MARK: Requests

    private func isKey(_ range: Range<Int>, _ name: StaticString) -> Bool {
        name.withUTF8Buffer { expected in
            expected.count == range.count && expected.indices.allSatisfy { bytes[range.lowerBound + $0] == expected[$0] }
        }
    }

    /// An array, each element read by `element`.
    private mutating func array<Element>(_ element: (inout StoredJSONScanner) throws -> Element) throws -> [Element] {
        try expect(UInt8(ascii: "["))
        var result: [Element] = []
        if try consume(UInt8(ascii: "]")) { return result }
        repeat { result.append(try element(&self)) } while try consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"))
        return result
    }

    private mutating func recordChange() throws -> RecordChange {
        var op: RecordOperation?
        var entity: SyncName?
        var recordID: RecordID?
        var scope: ScopeID?
        var baseVersion: ServerVersion?
        var fields: [SyncName: SyncValue]?
        var links: [SyncName: LinkChange]?
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
                    var values: [SyncName: SyncValue] = [:]
                    if try beginObject() {
                        repeat {
                            let (name, nameEscaped) = try memberKey()
                            guard values.updateValue(try syncValue(), forKey: try text(name, escaped: nameEscaped)) == nil else { throw Mismatch() }
                        } while try nextMember()
                    }
                    fields = values
                } else if isKey(key, "links"), links == nil {
                    var changes: [SyncName: LinkChange] = [:]
                    if try beginObject() {
                        repeat {
                            let (name, nameEscaped) = try memberKey()
                            guard changes.updateValue(try linkChange(), forKey: try text(name, escaped: nameEscaped)) == nil else { throw Mismatch() }
                        } while try nextMember()
                    }
                    links = changes
                } else {
                    // A null, a repeated key or an unknown one: the decoder decides.
                    throw Mismatch()
                }
            } while try nextMember()
        }
        guard let op, let entity, let recordID, let scope else { throw Mismatch() }
        return RecordChange(
            op: op, entity: entity, recordID: recordID, scope: scope, baseVersion: baseVersion, fields: fields ?? [:], links: links ?? [:])
    }

    private mutating func mutation() throws -> Mutation {
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

    /// A ``PushRequest`` of a supported protocol version without a schema, the whole input.
    /// Anything else (a schema, an unsupported version, a malformed part) is a mismatch, left
    /// to `JSONDecoder` and the error messages it gives.
    mutating func pushRequest() throws -> PushRequest {
        var version: Int64?
        var clientID: ClientID?
        var mutations: [Mutation]?
        var cursor: String?
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
                } else {
                    throw Mismatch()
                }
            } while try nextMember()
        }
        try end()
        guard let version, let clientID, let mutations, let rawVersion = Int(exactly: version) else { throw Mismatch() }
        let protocolVersion = ProtocolVersion(rawValue: rawVersion)
        guard ProtocolVersion.supported.contains(protocolVersion) else { throw Mismatch() }
        return PushRequest(protocolVersion: protocolVersion, clientID: clientID, mutations: mutations, cursor: cursor)
    }

    private mutating func stringArray() throws -> [String] {
        try expect(UInt8(ascii: "["))
        var result: [String] = []
        if try consume(UInt8(ascii: "]")) { return result }
        repeat { result.append(try string()) } while try consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"))
        return result
    }

    private mutating func linkChange() throws -> LinkChange {
        var added: [RecordID]?
        var removed: [RecordID]?
        try members { scanner, key, escaped in
            guard !escaped else { throw Mismatch() }
            if scanner.isKey(key, "added"), added == nil {
                added = try scanner.stringArray()
            } else if scanner.isKey(key, "removed"), removed == nil {
                removed = try scanner.stringArray()
            } else {
                throw Mismatch()
            }
        }
        guard let added, let removed else { throw Mismatch() }
        return LinkChange(added: added, removed: removed)
    }

    /// A ``ChangePayload``, the whole input.
    mutating func changePayload() throws -> ChangePayload {
        var fields: [SyncName: SyncValue]?
        var links: [SyncName: LinkChange]?
        try members { scanner, key, escaped in
            guard !escaped, key.count == 1 else { throw Mismatch() }
            switch scanner.bytes[key.lowerBound] {
            case UInt8(ascii: "f"):
                var values: [SyncName: SyncValue] = [:]
                try scanner.members { scanner, key, escaped in
                    let name = try scanner.text(key, escaped: escaped)
                    guard values.updateValue(try scanner.syncValue(), forKey: name) == nil else { throw Mismatch() }
                }
                fields = values
            case UInt8(ascii: "l"):
                var changes: [SyncName: LinkChange] = [:]
                try scanner.members { scanner, key, escaped in
                    let name = try scanner.text(key, escaped: escaped)
                    guard changes.updateValue(try scanner.linkChange(), forKey: name) == nil else { throw Mismatch() }
                }
                links = changes
            default: throw Mismatch()
            }
        }
        try end()
        guard let fields, let links else { throw Mismatch() }
        return ChangePayload(fields: fields, links: links)
    }
}

/// What a log entry stores besides its columns.
struct ChangePayload: Codable, Sendable {
    var fields: [SyncName: SyncValue]
    var links: [SyncName: LinkChange]

    private enum CodingKeys: String, CodingKey { case fields = "f", links = "l" }
}
