import Foundation

/// The version of the sync wire protocol that a request speaks.
///
/// Every request carries it (`protocolVersion` in a body, or the query parameter of the same
/// name for `GET` requests); a server answers a version it does not accept with
/// ``SyncErrorCode/unsupportedProtocolVersion`` and the versions it does accept.
public struct ProtocolVersion: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The version number.
    public var rawValue: Int

    /// Makes a version from its number.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The newest version this build of the protocol module speaks.
    public static let current = ProtocolVersion.blobs

    /// Version 1: every field is written whole (last writer wins, per field or per record).
    public static let plainFields = ProtocolVersion(rawValue: 1)

    /// Version 2: version 1, plus fields that merge (``RecordChange/merge``,
    /// ``FieldDescriptor/merge``). A client speaks it only when its schema declares a merged
    /// field, so that a client without one keeps working with servers that speak only version 1.
    public static let fieldMerges = ProtocolVersion(rawValue: 2)

    /// Version 3: version 2, plus texts that merge (``FieldMerge/text(_:)``,
    /// ``PulledChange/merge`` and ``PulledChange/textStates``). A client speaks it only when its
    /// schema declares a merged text, so that a server that does not know texts refuses it
    /// whole (`unsupportedProtocolVersion`) rather than one push at a time.
    public static let textMerges = ProtocolVersion(rawValue: 3)

    /// Version 4: version 3, plus blobs (``SyncValue/blob(_:)``, the blob endpoints). A client
    /// speaks it only when it sends or reads blobs; readers of earlier versions get a blob's
    /// field as nil.
    public static let blobs = ProtocolVersion(rawValue: 4)

    /// The versions this build can serve.
    public static let supported: [ProtocolVersion] = [.plainFields, .fieldMerges, .textMerges, .blobs]

    public static func < (lhs: ProtocolVersion, rhs: ProtocolVersion) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { "\(rawValue)" }
}
