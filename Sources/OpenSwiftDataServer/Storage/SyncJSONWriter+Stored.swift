import Foundation
import OpenSwiftDataSyncProtocol

/// The stored columns' JSON (`osd_records.fields`, `osd_changes.payload`), written with the
/// protocol's writer, byte for byte as `JSONEncoder` writes the same values.
extension SyncJSONWriter {
    /// `[SyncName: StoredField]` as `{"name": {"c": client, "k": kind, "m": merge, "s": stamp,
    /// "v": value}}` (the kind and merge left out when nil), the form of `StoredField`'s
    /// `Codable`.
    mutating func storedFields(_ fields: [SyncName: StoredField]) throws {
        try object(fields) { writer, field in
            writer.raw("{\"c\":")
            writer.string(field.client)
            if let kind = field.kind {
                writer.raw(",\"k\":")
                writer.string(kind.rawValue)
            }
            if let merge = field.merge {
                writer.raw(",\"m\":")
                writer.string(merge.rawValue)
            }
            writer.raw(",\"s\":")
            writer.stamp(field.stamp)
            writer.raw(",\"v\":")
            try writer.syncValue(field.value)
            writer.byte("}")
        }
    }

    /// A ``ChangePayload`` as `{"f": {name: value}, "l": {name: {"added": [...], "removed": [...]}}}`.
    mutating func changePayload(fields: [SyncName: SyncValue], links: [SyncName: LinkChange]) throws {
        raw("{\"f\":")
        try values(fields)
        raw(",\"l\":")
        linkChanges(links)
        byte("}")
    }
}
