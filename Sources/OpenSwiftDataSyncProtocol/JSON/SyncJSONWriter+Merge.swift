/// Contributions to merged fields, byte for byte as `JSONEncoder` writes them with sorted keys.
extension SyncJSONWriter {
    /// Contributions by field name: `{"name": {"counter": value} | {"set": {...}} | {"text": {...}}}`.
    @inlinable
    package mutating func fieldMerges(_ merges: [SyncName: FieldMerge]) throws {
        try object(merges) { writer, merge in
            switch merge {
            case let .counter(delta):
                writer.raw("{\"counter\":")
                try writer.syncValue(delta)
                writer.byte("}")
            case let .set(change):
                writer.raw("{\"set\":{\"add\":")
                writer.stringArray(change.add)
                writer.raw(",\"remove\":")
                writer.stringArray(change.remove)
                writer.raw("}}")
            case let .text(change):
                writer.textChange(change)
            }
        }
    }

    /// `{"text":{"del":[[start,count],...],"ins":[[id,left|null,right|null,content],...]}}`.
    @inlinable
    package mutating func textChange(_ change: TextChange) {
        raw("{\"text\":{\"del\":[")
        for (index, deletion) in change.deletions.enumerated() {
            if index > 0 { byte(",") }
            byte("[")
            string(deletion.start)
            byte(",")
            int(Int64(deletion.count))
            byte("]")
        }
        raw("],\"ins\":[")
        for (index, insertion) in change.insertions.enumerated() {
            if index > 0 { byte(",") }
            byte("[")
            string(insertion.id)
            byte(",")
            if let left = insertion.left { string(left) } else { raw("null") }
            byte(",")
            if let right = insertion.right { string(right) } else { raw("null") }
            byte(",")
            string(insertion.content)
            byte("]")
        }
        raw("]}}")
    }
}
