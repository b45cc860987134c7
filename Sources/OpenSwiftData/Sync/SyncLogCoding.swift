import Foundation
import GRDB

/// The binary form of a sync log entry's changes, with integers as variable-length numbers.
///
/// Version 2 (written since the capture benchmark work of issue 18): the format version, a table
/// of the names used (entities, fields, relationships), a table of field lists (per entity, its
/// synced fields' names and kinds, in column order), the change count, then each change as kind,
/// entity, record id (a UUID's 16 bytes, or text), scope, base version, fields and links. A
/// change with every field of its entity (an insert) refers to its entity's field list and
/// carries only the values; other changes list each field's name and kind with its value. The
/// header comes first and is known before the changes are encoded, so a save writes the entry
/// into one buffer, sized once.
///
/// Version 1 (stores written before): no field lists, every field with its name and kind, record
/// ids as text. Still read, so that a log written by an earlier version keeps its entries.
enum SyncLogCoding {
    static let formatVersion: UInt8 = 2
    static let kinds = SyncFieldKind.allCases

    /// How a change's record id is written (version 2).
    private enum IDTag: UInt8 {
        case text = 0
        case uuid = 1
    }

    /// How a change's fields are written (version 2).
    private enum FieldsTag: UInt8 {
        /// A count, then each field's name, kind and value.
        case listed = 0
        /// The values of every field of the entity's field list, in its order.
        case all = 1
    }

    /// Encodes changes as a save captures them: first the header (``intern(_:)`` and
    /// ``fieldList(entity:names:kindCodes:)`` for every name the changes use, then
    /// ``begin(changeCount:)``), then each change.
    final class Encoder {
        private var nameIndexes: [String: Int] = [:]
        private var names: [String] = []
        private var fieldLists: [(entity: Int, fields: [Int], kindCodes: [UInt8])] = []
        private let writer: HistoryCoding.ByteWriter

        /// An encoder whose buffer starts with room for `capacity` bytes.
        init(capacity: Int = 4096) {
            writer = HistoryCoding.ByteWriter(capacity: capacity)
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

        /// The code a field kind has in the blob (its position in `SyncFieldKind.allCases`).
        static func code(of kind: SyncFieldKind) -> UInt8 {
            UInt8(SyncLogCoding.kinds.firstIndex(of: kind) ?? 0)
        }

        /// Writes the header: the names and field lists declared so far, and the change count.
        /// Every name the changes use must be declared before.
        func begin(changeCount: Int) {
            writer.byte(SyncLogCoding.formatVersion)
            writer.unsigned(UInt64(names.count))
            for name in names { writer.string(name) }
            writer.unsigned(UInt64(fieldLists.count))
            for list in fieldLists {
                writer.unsigned(UInt64(list.entity))
                writer.unsigned(UInt64(list.fields.count))
                for (field, code) in zip(list.fields, list.kindCodes) {
                    writer.unsigned(UInt64(field))
                    writer.byte(code)
                }
            }
            writer.unsigned(UInt64(changeCount))
        }

        /// Starts a change. With `allFields`, what follows are one ``value(_:)`` per field of the
        /// entity's field list; otherwise `fieldCount` calls of ``field(name:kindCode:value:)``.
        /// Then one of ``links(_:)``.
        func change(_ kind: SyncChange.Kind, entity: Int, recordID: CapturedRecordID, scope: String?, baseVersion: Int64?, allFields: Bool, fieldCount: Int) {
            writer.byte(kind.rawValue)
            writer.unsigned(UInt64(entity))
            switch recordID {
            case let .uuid(high, low):
                writer.byte(IDTag.uuid.rawValue)
                writer.bigEndian(high)
                writer.bigEndian(low)
            case let .text(text):
                writer.byte(IDTag.text.rawValue)
                writer.string(text)
            }
            if let scope {
                writer.byte(1)
                writer.string(scope)
            } else {
                writer.byte(0)
            }
            if let baseVersion {
                writer.byte(1)
                writer.signed(baseVersion)
            } else {
                writer.byte(0)
            }
            if allFields {
                writer.byte(FieldsTag.all.rawValue)
            } else {
                writer.byte(FieldsTag.listed.rawValue)
                writer.unsigned(UInt64(fieldCount))
            }
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

        /// Ends the current change with its link changes (their relationship names declared).
        func links(_ links: [SyncLinkChange]) {
            writer.unsigned(UInt64(links.count))
            for link in links {
                writer.unsigned(UInt64(intern(link.relationship)))
                writer.unsigned(UInt64(link.added.count))
                for id in link.added { writer.string(id) }
                writer.unsigned(UInt64(link.removed.count))
                for id in link.removed { writer.string(id) }
            }
        }

        /// Calls `body` with the encoded bytes (valid only during the call).
        func withEncoded<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            try writer.withBytes(body)
        }

        /// The encoded bytes, copied.
        func finish() -> Data { writer.data }
    }

    /// The changes of a blob, or nil when it is not a valid encoding.
    static func decode(_ data: Data) -> [SyncChange]? {
        var reader = HistoryCoding.ByteReader(bytes: [UInt8](data))
        guard let version = reader.byte(), version == 1 || version == 2, let nameCount = reader.count() else { return nil }
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
        func fieldKindOf(_ code: UInt8?) -> SyncFieldKind? {
            guard let code, Int(code) < kinds.count else { return nil }
            return kinds[Int(code)]
        }
        // Version 2: each entity's field list, by the entity's name index.
        var fieldLists: [Int: [(name: String, kind: SyncFieldKind)]] = [:]
        if version == 2 {
            guard let listCount = reader.count() else { return nil }
            for _ in 0..<listCount {
                guard let entity = reader.count(), entity < names.count, let fieldCount = reader.count() else { return nil }
                var fields: [(name: String, kind: SyncFieldKind)] = []
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
        for _ in 0..<count {
            guard let kind = reader.byte().flatMap(SyncChange.Kind.init(rawValue:)), let entityIndex = reader.count(),
                  let entity = name(entityIndex) else { return nil }
            let recordID: String
            if version == 1 {
                guard let text = reader.string() else { return nil }
                recordID = text
            } else {
                switch reader.byte().flatMap(IDTag.init(rawValue:)) {
                case .text?:
                    guard let text = reader.string() else { return nil }
                    recordID = text
                case .uuid?:
                    guard let high = reader.bigEndian(), let low = reader.bigEndian() else { return nil }
                    recordID = RandomRecordID.format(high: high, low: low)
                case nil:
                    return nil
                }
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
            var fields: [SyncField] = []
            let tag: FieldsTag? = version == 1 ? .listed : reader.byte().flatMap(FieldsTag.init(rawValue:))
            switch tag {
            case .listed?:
                guard let fieldCount = reader.count() else { return nil }
                fields.reserveCapacity(fieldCount)
                for _ in 0..<fieldCount {
                    guard let field = name(reader.count()), let fieldKind = fieldKindOf(reader.byte()),
                          let value = reader.value(), let stored = value else { return nil }
                    fields.append(SyncField(name: field, value: SyncFieldValue(kind: fieldKind, stored: SyncStoredValue(stored))))
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
            changes.append(SyncChange(kind: kind, entity: entity, recordID: recordID, scope: scope, baseVersion: baseVersion, fields: fields, links: links))
        }
        return reader.isAtEnd ? changes : nil
    }
}
