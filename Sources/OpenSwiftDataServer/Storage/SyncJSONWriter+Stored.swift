import Foundation
import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol

/// The stored columns' JSON (`osd_records.fields`, `osd_changes.payload`), written with the
/// protocol's writer, byte for byte as `JSONEncoder` writes the same values.
extension SyncJSONWriter {
    /// `[SyncName: StoredField]` as `{"name": {"c": client, "k": kind, "m": merge, "s": stamp,
    /// "t": set tags, "v": value}}` (the kind, merge and tags left out when nil), the form of
    /// `StoredField`'s `Codable`.
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
            if let set = field.set {
                writer.raw(",\"t\":")
                writer.object(set.tags) { writer, clients in
                    writer.object(clients) { writer, tag in
                        writer.byte("[")
                        writer.int(tag.version)
                        writer.byte(",")
                        writer.int(tag.index)
                        if let mutation = tag.mutation {
                            writer.byte(",")
                            writer.int(mutation)
                        }
                        writer.byte("]")
                    }
                }
            }
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
