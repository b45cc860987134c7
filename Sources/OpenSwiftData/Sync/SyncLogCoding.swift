import Foundation
import GRDB
import OpenSwiftDataSyncProtocol

/// The binary form of a sync log entry's changes, with integers as variable-length numbers.
///
/// Version 3 (written since the second round of capture work on issue 18): the format version,
/// a table of the names used (entities, fields, relationships), a table of field lists (per
/// entity, its synced fields' names and kinds, in column order), the change count, then each
/// change as one flags byte (kind, how the record id is written, whether a scope, a base
/// version and links follow, whether the change carries every field of its entity's list),
/// entity, record id, the optional parts, then the fields. A UUID record id is written as its 16
/// bytes, or, when shorter, as the difference of each of its two words from the entry's
/// previous UUID id (the ids a save makes for new rows differ by a few units: two or three bytes
/// instead of sixteen). A change with every field (an insert) carries only the values; other
/// changes list each field's name and kind with its value. The header is written last into room
/// left before the changes, so a save encodes each change as it writes the row (while its
/// values are at hand) into one buffer.
///
/// Version 4: version 3, where a listed field's kind code may carry ``deltaFlag``: its value is
/// a counter's contribution (the difference the save made), not the field's value.
///
/// Version 2: as version 3 with a byte each for kind, record id form, scope and base version
/// presence and field form, links after the fields, every UUID record id as 16 bytes. Version 1
/// (stores written before that): no field lists, every field with its name and kind, record ids
/// as text. Both are still read, so that a log written by an earlier version keeps its entries.
enum SyncLogCoding {
    static let formatVersion: UInt8 = 4
    /// Set on a listed field's kind code (version 4): the value is a counter's contribution.
    static let deltaFlag: UInt8 = 0x80
    /// Each field kind's code in the blob is its position here: fixed, as entries on disk use
    /// them (a new kind goes at the end).
    static let kinds: [SyncValueKind] = [.bool, .int, .double, .string, .date, .data, .uuid, .decimal, .url, .json, .reference]

    /// How a change's record id is written (versions 2 and 3).
    private enum IDTag: UInt8 {
        case text = 0
        case uuid = 1
        /// Version 3: the difference of each word from the previous UUID id (zigzag numbers).
        case uuidDelta = 2
    }

    /// How a change's fields are written (version 2).
    private enum FieldsTag: UInt8 {
        /// A count, then each field's name, kind and value.
        case listed = 0
        /// The values of every field of the entity's field list, in its order.
        case all = 1
    }

    /// The flags byte of a version 3 change: bits 0-1 the kind, bits 2-3 the `IDTag`, then
    /// whether a scope, a base version and links follow, and whether the fields are every field
    /// of the entity's list (else a count of listed fields).
    private enum Flag {
        static let kindMask: UInt8 = 0b11
        static let idShift: UInt8 = 2
        static let idMask: UInt8 = 0b1100
        static let scope: UInt8 = 1 << 4
        static let baseVersion: UInt8 = 1 << 5
        static let links: UInt8 = 1 << 6
        static let allFields: UInt8 = 1 << 7
    }

    /// Encodes changes as a save captures them, in version 3: each change (``change(_:entity:recordID:scope:baseVersion:links:allFields:fieldCount:)``
    /// then its values), with every name it uses declared first (``intern(_:)``,
    /// ``fieldList(entity:names:kindCodes:)``); the header is written by ``withEncoded(_:)``.
    final class Encoder {
        private var nameIndexes: [String: Int] = [:]
        private var names: [String] = []
        private var fieldLists: [(entity: Int, fields: [Int], kindCodes: [UInt8])] = []
        private let writer: HistoryCoding.ByteWriter
        /// The room left before the changes for the header (which usually fits: then the entry
        /// needs no copy).
        private static let headerRoom = 1024
        /// How many changes were written.
        private(set) var changeCount = 0
        /// The last UUID record id written, which the next one may be written against.
        private var lastUUID: (high: UInt64, low: UInt64)?

        /// An encoder whose buffer starts with room for `capacity` bytes of changes.
        init(capacity: Int = 4096) {
            writer = HistoryCoding.ByteWriter(capacity: Self.headerRoom + max(capacity, 64))
            writer.skip(Self.headerRoom)
        }

        /// Makes room for `bytes` more bytes of changes at once.
        func reserve(_ bytes: Int) {
            writer.ensureCapacity(writer.count + bytes)
        }

        func intern(_ name: String) -> Int {
            if let index = nameIndexes[name] { return index }
            nameIndexes[name] = names.count
            names.append(name)
            return names.count - 1
        }

        /// Declares an entity's field list (names and kind codes in column order); returns the
        /// entity's interned name and its fields'.
        func fieldList(entity: String, names fieldNames: [String], kindCodes: [UInt8]) -> (entity: Int, fields: [Int]) {
            let entityIndex = intern(entity)
            let fields = fieldNames.map(intern)
            fieldLists.append((entityIndex, fields, kindCodes))
            return (entityIndex, fields)
        }

        /// The code a field kind has in the blob (its position in ``SyncLogCoding/kinds``).
        static func code(of kind: SyncValueKind) -> UInt8 {
            UInt8(SyncLogCoding.kinds.firstIndex(of: kind) ?? 0)
        }

        /// How many bytes `value` takes as a variable-length number.
        @inline(__always)
        private static func varintSize(_ value: UInt64) -> Int {
            (64 - value.leadingZeroBitCount + 6) / 7 + (value == 0 ? 1 : 0)
        }

        @inline(__always)
        private static func zigzag(_ value: UInt64) -> UInt64 {
            let signed = Int64(bitPattern: value)
            return UInt64(bitPattern: (signed << 1) ^ (signed >> 63))
        }

        /// Starts a change, links (their relationship names declared or not) included. With
        /// `allFields`, what follows are one ``value(_:)`` per field of the entity's field list;
        /// otherwise `fieldCount` calls of ``field(name:kindCode:value:)``.
        func change(
            _ kind: SyncChange.Kind, entity: Int, recordID: CapturedRecordID, scope: String?, baseVersion: Int64?,
            links: [SyncLinkChange], allFields: Bool, fieldCount: Int
        ) {
            changeCount += 1
            var flags = kind.rawValue & Flag.kindMask
            var delta: (high: UInt64, low: UInt64)?
            switch recordID {
            case let .uuid(high, low):
                if let last = lastUUID {
                    let high = Self.zigzag(high &- last.high)
                    let low = Self.zigzag(low &- last.low)
                    if Self.varintSize(high) + Self.varintSize(low) < 16 { delta = (high, low) }
                }
                lastUUID = (high, low)
                flags |= (delta == nil ? IDTag.uuid : IDTag.uuidDelta).rawValue << Flag.idShift
            case .text:
                flags |= IDTag.text.rawValue << Flag.idShift
            }
            if scope != nil { flags |= Flag.scope }
            if baseVersion != nil { flags |= Flag.baseVersion }
            if !links.isEmpty { flags |= Flag.links }
            if allFields { flags |= Flag.allFields }
            writer.byte(flags)
            writer.unsigned(UInt64(entity))
            switch recordID {
            case let .uuid(high, low):
                if let delta {
                    writer.unsigned(delta.high)
                    writer.unsigned(delta.low)
                } else {
                    writer.bigEndian(high)
                    writer.bigEndian(low)
                }
            case let .text(text):
                writer.string(text)
            }
            if let scope { writer.string(scope) }
            if let baseVersion { writer.signed(baseVersion) }
            if !links.isEmpty {
                writer.unsigned(UInt64(links.count))
                for link in links {
                    writer.unsigned(UInt64(intern(link.relationship)))
                    writer.unsigned(UInt64(link.added.count))
                    for id in link.added { writer.string(id) }
                    writer.unsigned(UInt64(link.removed.count))
                    for id in link.removed { writer.string(id) }
                }
            }
            if !allFields { writer.unsigned(UInt64(fieldCount)) }
        }

        /// One listed field of the current change: its interned name, its kind's code, its value.
        @inline(__always)
        func field(name: Int, kindCode: UInt8, value: DatabaseValue) {
            writer.unsigned(UInt64(name))
            writer.byte(kindCode)
            writer.value(value)
        }

        /// The value of the current change's next field, in its entity's field list order.
        @inline(__always)
        func value(_ value: DatabaseValue) {
            writer.value(value)
        }

        /// Calls `body` with the encoded entry, header first (valid only during the call).
        func withEncoded<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            let header = HistoryCoding.ByteWriter(capacity: 64 + names.reduce(0) { $0 + $1.utf8.count + 2 } + 12 * fieldLists.count)
            header.byte(SyncLogCoding.formatVersion)
            header.unsigned(UInt64(names.count))
            for name in names { header.string(name) }
            header.unsigned(UInt64(fieldLists.count))
            for list in fieldLists {
                header.unsigned(UInt64(list.entity))
                header.unsigned(UInt64(list.fields.count))
                for (field, code) in zip(list.fields, list.kindCodes) {
                    header.unsigned(UInt64(field))
                    header.byte(code)
                }
            }
            header.unsigned(UInt64(changeCount))
            let start = Self.headerRoom - header.count
            if writer.overwrite(at: start, with: header) {
                return try writer.withBytes(from: start, body)
            }
            // A header larger than the room: header and changes copied into one buffer.
            let whole = HistoryCoding.ByteWriter(capacity: header.count + writer.count)
            whole.append(header)
            writer.withBytes(from: Self.headerRoom) { whole.raw($0) }
            return try whole.withBytes(body)
        }

        /// The encoded entry, copied.
        func finish() -> Data { withEncoded { Data($0) } }
    }

    /// The changes of a blob, or nil when it is not a valid encoding.
    static func decode(_ data: Data) -> [SyncChange]? {
        var reader = HistoryCoding.ByteReader(bytes: [UInt8](data))
        guard let version = reader.byte(), (1...4).contains(version), let nameCount = reader.count() else { return nil }
        var names: [String] = []
        for _ in 0..<nameCount {
            guard let name = reader.string() else { return nil }
            names.append(name)
        }
        func name(_ index: Int?) -> String? {
            guard let index, index < names.count else { return nil }
            return names[index]
        }
        func optionalString() -> String?? {
            switch reader.byte() {
            case 0: return .some(nil)
            case 1: return reader.string().map { .some($0) }
            default: return nil
            }
        }
        func fieldKindOf(_ code: UInt8?) -> SyncValueKind? {
            guard let code, Int(code) < kinds.count else { return nil }
            return kinds[Int(code)]
        }
        // Versions 2 and 3: each entity's field list, by the entity's name index.
        var fieldLists: [Int: [(name: String, kind: SyncValueKind)]] = [:]
        if version >= 2 {
            guard let listCount = reader.count() else { return nil }
            for _ in 0..<listCount {
                guard let entity = reader.count(), entity < names.count, let fieldCount = reader.count() else { return nil }
                var fields: [(name: String, kind: SyncValueKind)] = []
                fields.reserveCapacity(fieldCount)
                for _ in 0..<fieldCount {
                    guard let field = name(reader.count()), let fieldKind = fieldKindOf(reader.byte()) else { return nil }
                    fields.append((field, fieldKind))
                }
                fieldLists[entity] = fields
            }
        }
        guard let count = reader.count() else { return nil }
        var changes: [SyncChange] = []
        changes.reserveCapacity(count)
        func readLinks() -> [SyncLinkChange]? {
            guard let linkCount = reader.count() else { return nil }
            var links: [SyncLinkChange] = []
            for _ in 0..<linkCount {
                guard let relationship = name(reader.count()) else { return nil }
                var lists: [[String]] = []
                for _ in 0..<2 {
                    guard let idCount = reader.count() else { return nil }
                    var ids: [String] = []
                    for _ in 0..<idCount {
                        guard let id = reader.string() else { return nil }
                        ids.append(id)
                    }
                    lists.append(ids)
                }
                links.append(SyncLinkChange(relationship: relationship, added: lists[0], removed: lists[1]))
            }
            return links
        }
        var deltas: [SyncField] = []
        func readFields(_ tag: FieldsTag?, entity entityIndex: Int) -> [SyncField]? {
            var fields: [SyncField] = []
            deltas = []
            switch tag {
            case .listed?:
                guard let fieldCount = reader.count() else { return nil }
                fields.reserveCapacity(fieldCount)
                for _ in 0..<fieldCount {
                    guard let field = name(reader.count()), let code = reader.byte() else { return nil }
                    let isDelta = version >= 4 && code & deltaFlag != 0
                    guard let fieldKind = fieldKindOf(isDelta ? code & ~deltaFlag : code), let value = reader.value(), let stored = value else {
                        return nil
                    }
                    let read = SyncField(name: field, value: SyncFieldValue(kind: fieldKind, stored: SyncStoredValue(stored)))
                    if isDelta { deltas.append(read) } else { fields.append(read) }
                }
            case .all?:
                guard let list = fieldLists[entityIndex] else { return nil }
                fields.reserveCapacity(list.count)
                for (field, fieldKind) in list {
                    guard let value = reader.value(), let stored = value else { return nil }
                    fields.append(SyncField(name: field, value: SyncFieldValue(kind: fieldKind, stored: SyncStoredValue(stored))))
                }
            case nil:
                return nil
            }
            return fields
        }
        var lastUUID: (high: UInt64, low: UInt64)?
        func readRecordID(_ tag: IDTag?) -> String? {
            switch tag {
            case .text?:
                return reader.string()
            case .uuid?:
                guard let high = reader.bigEndian(), let low = reader.bigEndian() else { return nil }
                lastUUID = (high, low)
                return RandomRecordID.format(high: high, low: low)
            case .uuidDelta?:
                guard let last = lastUUID, let highDelta = reader.signed(), let lowDelta = reader.signed() else { return nil }
                let high = last.high &+ UInt64(bitPattern: highDelta)
                let low = last.low &+ UInt64(bitPattern: lowDelta)
                lastUUID = (high, low)
                return RandomRecordID.format(high: high, low: low)
            case nil:
                return nil
            }
        }
        for _ in 0..<count {
            if version >= 3 {
                guard let flags = reader.byte(), let kind = SyncChange.Kind(rawValue: flags & Flag.kindMask),
                    let entityIndex = reader.count(), let entity = name(entityIndex),
                    let recordID = readRecordID(IDTag(rawValue: (flags & Flag.idMask) >> Flag.idShift))
                else { return nil }
                var scope: String?
                if flags & Flag.scope != 0 {
                    guard let text = reader.string() else { return nil }
                    scope = text
                }
                var baseVersion: Int64?
                if flags & Flag.baseVersion != 0 {
                    guard let version = reader.signed() else { return nil }
                    baseVersion = version
                }
                var links: [SyncLinkChange] = []
                if flags & Flag.links != 0 {
                    guard let read = readLinks() else { return nil }
                    links = read
                }
                guard let fields = readFields(flags & Flag.allFields != 0 ? .all : .listed, entity: entityIndex) else { return nil }
                changes.append(
                    SyncChange(
                        kind: kind, entity: entity, recordID: recordID, scope: scope, baseVersion: baseVersion, fields: fields, links: links,
                        counterDeltas: deltas))
                continue
            }
            guard let kind = reader.byte().flatMap(SyncChange.Kind.init(rawValue:)), let entityIndex = reader.count(),
                let entity = name(entityIndex)
            else { return nil }
            let recordID: String
            if version == 1 {
                guard let text = reader.string() else { return nil }
                recordID = text
            } else {
                let tag = reader.byte().flatMap(IDTag.init(rawValue:))
                guard tag != .uuidDelta, let id = readRecordID(tag) else { return nil }
                recordID = id
            }
            guard let scope = optionalString() else { return nil }
            let baseVersion: Int64?
            switch reader.byte() {
            case 0: baseVersion = nil
            case 1:
                guard let version = reader.signed() else { return nil }
                baseVersion = version
            default: return nil
            }
            let tag: FieldsTag? = version == 1 ? .listed : reader.byte().flatMap(FieldsTag.init(rawValue:))
            guard let fields = readFields(tag, entity: entityIndex), let links = readLinks() else { return nil }
            changes.append(
                SyncChange(kind: kind, entity: entity, recordID: recordID, scope: scope, baseVersion: baseVersion, fields: fields, links: links))
        }
        return reader.isAtEnd ? changes : nil
    }
}
