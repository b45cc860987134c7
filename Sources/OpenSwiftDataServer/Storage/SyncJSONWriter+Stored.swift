import Foundation
import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol

/// The stored columns' JSON (`osd_records.fields`, `osd_changes.payload`), written with the
/// protocol's writer, byte for byte as `JSONEncoder` writes the same values.
extension SyncJSONWriter {
    /// `[SyncName: StoredField]` as `{"name": {"c": client, "k": kind, "m": merge, "s": stamp,
    /// "t": set tags, "v": value, "x": text state}}` (the kind, merge, tags and state left out
    /// when nil), the form of `StoredField`'s `Codable`.
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
            if let text = field.text {
                writer.raw(",\"x\":")
                writer.string(text.base64EncodedString())
            }
            writer.byte("}")
        }
    }

    /// A ``ChangePayload`` as `{"f": {name: value}, "l": {name: {"added": [...], "removed": [...]}}}`.
    mutating func changePayload(_ payload: ChangePayload) throws {
        raw("{\"f\":")
        try values(payload.fields)
        raw(",\"l\":")
        linkChanges(payload.links)
        if let merge = payload.merge {
            raw(",\"m\":")
            try fieldMerges(merge)
        }
        if let states = payload.textStates {
            raw(",\"x\":")
            object(states) { writer, state in writer.string(state) }
        }
        byte("}")
    }
}
