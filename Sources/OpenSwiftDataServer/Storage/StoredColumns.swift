import Foundation
import OpenSwiftDataSyncProtocol

/// The JSON of the stored columns (record fields, log payloads, push results), written by
/// ``SyncJSONWriter`` and read by ``StoredJSON``: the same bytes for every storage of this
/// package, without going through Foundation's coders on the hot paths. `package`: for the
/// storages in other targets of this package (PostgreSQL), not part of the library's API.
package enum StoredColumns {
    /// A record's fields.
    package static func encodeFields(_ fields: [SyncName: StoredField]) throws -> [UInt8] {
        var writer = SyncJSONWriter()
        try writer.storedFields(fields)
        return writer.bytes
    }

    /// Reads a record's fields.
    package static func decodeFields(_ data: Data) throws -> [SyncName: StoredField] {
        try StoredJSON.fields(data)
    }

    /// A log entry's payload: the change's fields, links, texts' edits and texts' states.
    package static func encodePayload(of change: PulledChange) throws -> [UInt8] {
        var writer = SyncJSONWriter()
        try writer.changePayload(ChangePayload(change))
        return writer.bytes
    }

    /// Reads a log entry's payload.
    package static func decodePayload(_ data: Data) throws -> ChangePayload {
        try StoredJSON.payload(data)
    }

    /// A processed mutation's recorded answer.
    package static func encodeResult(_ result: MutationResult) throws -> [UInt8] {
        var writer = SyncJSONWriter(capacity: 64)
        try writer.mutationResult(result)
        return writer.bytes
    }
}
