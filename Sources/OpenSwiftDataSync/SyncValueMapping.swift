import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol

/// Between the store's stored form of a field (``SyncFieldValue``) and the wire's typed value
/// (``SyncValue``). Both are exact: a value makes the round trip bit for bit.
enum SyncValueMapping {
    /// The wire value of a stored field.
    static func wire(_ value: SyncFieldValue) -> SyncValue {
        switch (value.kind, value.stored) {
        case (_, .null): return .null
        case let (.bool, .integer(integer)): return .bool(integer != 0)
        case let (.int, .integer(integer)): return .int(integer)
        case let (.double, .real(double)): return .double(double)
        case let (.double, .integer(integer)): return .double(Double(integer))
        case let (.date, .real(double)): return .date(double)
        case let (.date, .integer(integer)): return .date(Double(integer))
        case let (.string, .text(text)): return .string(text)
        case let (.decimal, .text(text)): return .decimal(text)
        case let (.url, .text(text)): return .url(text)
        case let (.json, .text(text)): return .json(text)
        case let (.reference, .text(text)): return .reference(text)
        case let (.data, .blob(data)):
            // A reference to a file of an `.externalStorage` value travels as a blob.
            if let attachment = ModelContainer.syncAttachment(inStored: data),
                let blob = BlobReference(digest: attachment.digest, size: attachment.size)
            {
                return .blob(blob)
            }
            return .data(data)
        case let (.uuid, .blob(data)) where data.count == 16:
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &bytes) { $0.copyBytes(from: data) }
            return .uuid(UUID(uuid: bytes))
        // A stored form that does not fit its kind never leaves the store this way; carry it
        // as the nearest wire value so the server can refuse it by kind.
        case let (_, .integer(integer)): return .int(integer)
        case let (_, .real(double)): return .double(double)
        case let (_, .text(text)): return .string(text)
        case let (_, .blob(data)): return .data(data)
        }
    }

    /// The stored form of a wire value for `field`, or nil when the value's kind does not fit
    /// the field.
    static func stored(_ value: SyncValue, for field: SyncEntityField) -> SyncFieldValue? {
        let kind = field.kind
        let stored: SyncStoredValue
        switch (value, kind) {
        case (.null, _): stored = .null
        case let (.bool(bool), .bool): stored = .integer(bool ? 1 : 0)
        case let (.int(integer), .int): stored = .integer(integer)
        case let (.double(double), .double): stored = .real(double)
        case let (.date(double), .date): stored = .real(double)
        case let (.string(text), .string): stored = .text(text)
        case let (.decimal(text), .decimal): stored = .text(text)
        case let (.url(text), .url): stored = .text(text)
        case let (.json(text), .json): stored = .text(text)
        case let (.reference(id), .reference): stored = .text(id)
        case let (.data(data), .data): stored = .blob(data)
        case (.blob, .data) where !field.externalStorage:
            // A column that is not `.externalStorage` in this version of the app cannot wait for
            // bytes: the value reads as absent, as it does for a reader of protocol version 3.
            // The server keeps the blob for the versions that hold it.
            stored = field.optional ? .null : .blob(Data())
        case let (.blob(blob), .data):
            // Written as a remote reference: the bytes follow on their own.
            guard let attachment = SyncAttachment(digest: blob.digest, size: blob.size),
                let reference = ModelContainer.syncStoredValue(of: attachment)
            else { return nil }
            stored = .blob(reference)
        case let (.uuid(uuid), .uuid): stored = .blob(withUnsafeBytes(of: uuid.uuid) { Data($0) })
        default: return nil
        }
        return SyncFieldValue(kind: kind, stored: stored)
    }

    /// The wire form of a relationship's delete rule.
    static func deleteRule(_ rule: Schema.Relationship.DeleteRule) -> SyncDeleteRule {
        switch rule {
        case .nullify: .nullify
        case .cascade: .cascade
        case .deny: .deny
        case .noAction: .noAction
        }
    }
}
