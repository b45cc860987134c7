import OpenSwiftDataSyncProtocol

/// A refused request: the protocol error to answer, and its HTTP status. Nothing of a request
/// that ends in this error is stored.
public struct SyncServiceError: Error, Sendable, CustomStringConvertible {
    /// The error body.
    public var error: SyncError
    /// The HTTP status code that carries it.
    public var statusCode: Int

    /// Makes an error.
    public init(
        _ status: Int, _ code: SyncErrorCode, _ message: String, lastMutationID: MutationID? = nil, supportedVersions: [ProtocolVersion]? = nil
    ) {
        self.statusCode = status
        self.error = SyncError(code, message, supportedVersions: supportedVersions, lastMutationID: lastMutationID)
    }

    /// The status and the protocol error, for logs.
    public var description: String { "\(statusCode) \(error)" }

    static func malformed(_ message: String) -> SyncServiceError { SyncServiceError(400, .malformedRequest, message) }

    static func unsupportedVersion(_ version: ProtocolVersion) -> SyncServiceError {
        SyncServiceError(
            400, .unsupportedProtocolVersion,
            "protocol version \(version.rawValue) is not supported; this server speaks \(ProtocolVersion.supported.map { "\($0.rawValue)" }.joined(separator: ", "))",
            supportedVersions: ProtocolVersion.supported)
    }

    static func forbidden(_ message: String) -> SyncServiceError { SyncServiceError(403, .forbidden, message) }
}
