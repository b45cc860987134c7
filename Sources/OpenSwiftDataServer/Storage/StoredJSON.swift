import Foundation
import OpenSwiftDataMerge
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
/// and `SyncJSONWriter` writes the same). The protocol's reader takes the common shapes
/// without Foundation's decoder; any shape it does not expect (keys in another order, unknown
/// keys) falls back to `JSONDecoder`, so the accepted language is exactly what it was.
enum StoredJSON {
    /// Reads a record's stored fields.
    static func fields(_ data: Data) throws -> [SyncName: StoredField] {
        if let fast = SyncJSONReader.read(data, { try $0.storedFields() }) { return fast }
        do {
            return try JSONDecoder().decode([SyncName: StoredField].self, from: data)
        } catch {
            throw StoredDataError(column: "osd_records.fields", reason: "\(error)")
        }
    }

    /// Reads a log entry's payload.
    static func payload(_ data: Data) throws -> ChangePayload {
        if let fast = SyncJSONReader.read(data, { try $0.changePayload() }) { return fast }
        do {
            return try JSONDecoder().decode(ChangePayload.self, from: data)
        } catch {
            throw StoredDataError(column: "osd_changes.payload", reason: "\(error)")
        }
    }
}

/// The stored columns' shapes, read with the protocol's reader.
extension SyncJSONReader {
    // The two hot shapes below read their members in a loop rather than through `members`,
    // whose closure would box every local it assigns.

    private mutating func storedField() throws -> StoredField {
        var value: SyncValue?
        var kind: SyncValueKind?
        var stamp: HLCTimestamp?
        var client: ClientID?
        var merge: MergeKind?
        var set: SetState?
        var text: Data?
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                guard !escaped, key.count == 1 else { throw Mismatch() }
                switch byte(at: key.lowerBound) {
                case UInt8(ascii: "v"): value = try syncValue()
                case UInt8(ascii: "k"):
                    if try !null() {
                        let (range, escaped) = try rawString()
                        guard !escaped, let parsed = self.kind(range) else { throw Mismatch() }
                        kind = parsed
                    }
                case UInt8(ascii: "s"): stamp = try self.stamp()
                case UInt8(ascii: "c"): client = try string()
                case UInt8(ascii: "m"):
                    guard let parsed = MergeKind(rawValue: try string()) else { throw Mismatch() }
                    merge = parsed
                case UInt8(ascii: "t"): set = try setState()
                case UInt8(ascii: "x"):
                    guard let state = Data(base64Encoded: try string()) else { throw Mismatch() }
                    text = state
                default: throw Mismatch()
                }
            } while try nextMember()
        }
        guard let value, let stamp, let client else { throw Mismatch() }
        return StoredField(value: value, kind: kind, stamp: stamp, client: client, merge: merge, set: set, text: text)
    }

    /// A merged set's tags, `{element: {client: [version, index(, mutation)]}}`.
    private mutating func setState() throws -> SetState {
        var tags: [String: [String: SetState.Tag]] = [:]
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                let element = try text(key, escaped: escaped)
                var clients: [String: SetState.Tag] = [:]
                if try beginObject() {
                    repeat {
                        let (clientKey, clientEscaped) = try memberKey()
                        let client = try text(clientKey, escaped: clientEscaped)
                        let pair = try array { try $0.int64() }
                        guard pair.count == 2 || pair.count == 3,
                            clients.updateValue(
                                SetState.Tag(version: pair[0], index: pair[1], mutation: pair.count == 3 ? pair[2] : nil), forKey: client) == nil
                        else {
                            throw Mismatch()
                        }
                    } while try nextMember()
                }
                guard tags.updateValue(clients, forKey: element) == nil else { throw Mismatch() }
            } while try nextMember()
        }
        return SetState(tags: tags)
    }

    /// `[SyncName: StoredField]`.
    mutating func storedFields() throws -> [SyncName: StoredField] {
        var fields: [SyncName: StoredField] = [:]
        if try beginObject() {
            repeat {
                let (key, escaped) = try memberKey()
                let name = try text(key, escaped: escaped)
                guard fields.updateValue(try storedField(), forKey: name) == nil else { throw Mismatch() }
            } while try nextMember()
        }
        return fields
    }

    /// A ``ChangePayload``.
    mutating func changePayload() throws -> ChangePayload {
        var fields: [SyncName: SyncValue]?
        var links: [SyncName: LinkChange]?
        var merge: [SyncName: FieldMerge]?
        var textStates: [SyncName: String]?
        try members { reader, key, escaped in
            guard !escaped, key.count == 1 else { throw Mismatch() }
            switch reader.byte(at: key.lowerBound) {
            case UInt8(ascii: "f"): fields = try reader.syncValues()
            case UInt8(ascii: "l"): links = try reader.linkChanges()
            case UInt8(ascii: "m"): merge = try reader.fieldMerges()
            case UInt8(ascii: "x"):
                var states: [SyncName: String] = [:]
                try reader.members { reader, name, escaped in
                    guard states.updateValue(try reader.string(), forKey: try reader.text(name, escaped: escaped)) == nil else { throw Mismatch() }
                }
                textStates = states
            default: throw Mismatch()
            }
        }
        guard let fields, let links else { throw Mismatch() }
        return ChangePayload(fields: fields, links: links, merge: merge, textStates: textStates)
    }
}

/// What a log entry stores besides its columns.
package struct ChangePayload: Codable, Sendable {
    /// The fields set.
    package var fields: [SyncName: SyncValue]
    /// The link changes.
    package var links: [SyncName: LinkChange]
    /// The merged texts' edits that made the change (nil: none).
    package var merge: [SyncName: FieldMerge]?
    /// The merged texts' states, for an insert of a record whose texts have edits (nil: none).
    package var textStates: [SyncName: String]?

    /// Makes a payload.
    package init(
        fields: [SyncName: SyncValue], links: [SyncName: LinkChange], merge: [SyncName: FieldMerge]? = nil, textStates: [SyncName: String]? = nil
    ) {
        self.fields = fields
        self.links = links
        self.merge = merge
        self.textStates = textStates
    }

    /// A change's payload.
    package init(_ change: PulledChange) {
        self.init(fields: change.fields, links: change.links, merge: change.merge, textStates: change.textStates)
    }

    private enum CodingKeys: String, CodingKey { case fields = "f", links = "l", merge = "m", textStates = "x" }
}
