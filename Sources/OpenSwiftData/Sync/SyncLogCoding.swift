import Foundation
import GRDB

/// The binary form of a sync log entry's changes: a table of the names used (entities, fields,
/// relationships), then each change as kind, entity, record id, scope, base version, fields
/// (name, kind, stored value) and links, with integers as variable-length numbers. Written
/// straight from the values a save binds (`SyncCapture`), read back into ``SyncChange``s.
enum SyncLogCoding {
    static let formatVersion: UInt8 = 1
    static let kinds = SyncFieldKind.allCases

    /// Encodes changes as a save captures them.
    final class Encoder {
        private var nameIndexes: [String: Int] = [:]
        private var names: [String] = []
        private let body = HistoryCoding.ByteWriter(capacity: 4096)
        private(set) var count = 0

        func intern(_ name: String) -> Int {
            if let index = nameIndexes[name] { return index }
            nameIndexes[name] = names.count
            names.append(name)
            return names.count - 1
        }

        /// The code a field kind has in the blob (its position in `SyncFieldKind.allCases`).
        static func code(of kind: SyncFieldKind) -> UInt8 {
            UInt8(SyncLogCoding.kinds.firstIndex(of: kind) ?? 0)
        }

        /// Starts a change: what follows are `fieldCount` calls of ``field(name:kindCode:value:)``
        /// and one of ``links(_:)``.
        func change(_ kind: SyncChange.Kind, entity: Int, recordID: String, scope: String?, baseVersion: Int64?, fieldCount: Int) {
            count += 1
            body.byte(kind.rawValue)
            body.unsigned(UInt64(entity))
            body.string(recordID)
            if let scope {
                body.byte(1)
                body.string(scope)
            } else {
                body.byte(0)
            }
            if let baseVersion {
                body.byte(1)
                body.signed(baseVersion)
            } else {
                body.byte(0)
            }
            body.unsigned(UInt64(fieldCount))
        }

        /// One field of the current change: its interned name, its kind's code, its stored value.
        @inline(__always)
        func field(name: Int, kindCode: UInt8, value: DatabaseValue) {
            body.unsigned(UInt64(name))
            body.byte(kindCode)
            body.value(value)
        }

        /// Ends the current change with its link changes.
        func links(_ links: [SyncLinkChange]) {
            body.unsigned(UInt64(links.count))
            for link in links {
                body.unsigned(UInt64(intern(link.relationship)))
                body.unsigned(UInt64(link.added.count))
                for id in link.added { body.string(id) }
                body.unsigned(UInt64(link.removed.count))
                for id in link.removed { body.string(id) }
            }
        }

        func finish() -> Data {
            let blob = HistoryCoding.ByteWriter(capacity: body.count + 16 * names.count + 32)
            blob.byte(SyncLogCoding.formatVersion)
            blob.unsigned(UInt64(names.count))
            for name in names { blob.string(name) }
            blob.unsigned(UInt64(count))
            blob.append(body)
            return blob.data
        }
    }

    /// The changes of a blob, or nil when it is not a valid encoding.
    static func decode(_ data: Data) -> [SyncChange]? {
        var reader = HistoryCoding.ByteReader(bytes: [UInt8](data))
        guard reader.byte() == formatVersion, let nameCount = reader.count() else { return nil }
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
        guard let count = reader.count() else { return nil }
        var changes: [SyncChange] = []
        changes.reserveCapacity(count)
        for _ in 0..<count {
            guard let kind = reader.byte().flatMap(SyncChange.Kind.init(rawValue:)),
                  let entity = name(reader.count()), let recordID = reader.string(),
                  let scope = optionalString() else { return nil }
            let baseVersion: Int64?
            switch reader.byte() {
            case 0: baseVersion = nil
            case 1:
                guard let version = reader.signed() else { return nil }
                baseVersion = version
            default: return nil
            }
            guard let fieldCount = reader.count() else { return nil }
            var fields: [SyncField] = []
            fields.reserveCapacity(fieldCount)
            for _ in 0..<fieldCount {
                guard let field = name(reader.count()), let code = reader.byte(), Int(code) < kinds.count,
                      let value = reader.value(), let stored = value else { return nil }
                fields.append(SyncField(name: field, value: SyncFieldValue(kind: kinds[Int(code)], stored: SyncStoredValue(stored))))
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
