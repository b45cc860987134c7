import Foundation
import Hummingbird
import OpenSwiftDataSyncProtocol

extension SyncServiceError: HTTPResponseError {
    /// The HTTP status.
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: statusCode) }

    /// The `ErrorResponse` JSON answer.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONBody.response(ErrorResponse(error: error), status: status)
    }

    /// The error a framework-level HTTP error stands for.
    static func from(httpStatus status: HTTPResponse.Status, message: String?) -> SyncServiceError {
        switch status.code {
        case 404: SyncServiceError(404, .notFound, message ?? "no such route")
        case 405: SyncServiceError(405, .notFound, message ?? "this route does not take that method")
        case 413: SyncServiceError(413, .bodyTooLarge, message ?? "the body is larger than the server's limit")
        case 401: SyncServiceError(401, .unauthorized, message ?? "unauthorized")
        case 403: SyncServiceError(403, .forbidden, message ?? "forbidden")
        case 503: SyncServiceError(503, .unavailable, message ?? "the server cannot serve now")
        case 400..<500: SyncServiceError(status.code, .malformedRequest, message ?? "bad request")
        default: SyncServiceError(500, .internalError, "the server failed; the request may be retried")
        }
    }
}

/// JSON answers in the protocol's encoding.
enum JSONBody {
    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONEncoder.syncProtocol().encode(value)) ?? Data(#"{"error":{"code":"internalError","message":"encoding failed"}}"#.utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// A pull's answer, written by hand (the same bytes as `JSONEncoder.syncProtocol()`).
    static func response(_ value: PullResponse) -> Response {
        var writer = SyncJSONWriter(capacity: 256 + value.changes.count * 256)
        do { try writer.pullResponse(value) } catch { return response(value, status: .ok) }
        return response(bytes: writer.bytes)
    }

    /// A push's answer, written by hand (the same bytes as `JSONEncoder.syncProtocol()`).
    static func response(_ value: PushResponse) -> Response {
        var writer = SyncJSONWriter(capacity: 128 + value.results.count * 48)
        do { try writer.pushResponse(value) } catch { return response(value, status: .ok) }
        return response(bytes: writer.bytes)
    }

    private static func response(bytes: [UInt8]) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// Decodes a push: the common form (a supported version, no schema) read by hand, anything
    /// else through ``decode(_:from:)``'s `JSONDecoder` path and its error messages.
    static func decode(_ type: PushRequest.Type, from buffer: ByteBuffer) throws -> PushRequest {
        if let fast = buffer.withUnsafeReadableBytes({ SyncJSONReader.pushRequest($0) }) { return fast }
        return try decode(PushRequest.self, generic: buffer)
    }

    /// Decodes a protocol message, naming what is wrong: an unsupported version before
    /// anything else, an unknown operation, or the path of the malformed part.
    static func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        try decode(type, generic: buffer)
    }

    private static func decode<T: Decodable>(_ type: T.Type, generic buffer: ByteBuffer) throws -> T {
        let data = Data(buffer.readableBytesView)
        let decoder = JSONDecoder()
        let probe: VersionProbe
        do {
            probe = try decoder.decode(VersionProbe.self, from: data)
        } catch {
            throw SyncServiceError.malformed("the body is not a JSON object: \(describe(error))")
        }
        guard let version = probe.protocolVersion else {
            throw SyncServiceError.malformed("the body has no protocolVersion")
        }
        guard ProtocolVersion.supported.contains(ProtocolVersion(rawValue: version)) else {
            throw SyncServiceError.unsupportedVersion(ProtocolVersion(rawValue: version))
        }
        do {
            return try decoder.decode(T.self, from: data)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.last?.stringValue == "op" {
                throw SyncServiceError(
                    400, .unknownOperation,
                    "unknown operation at \(path(context.codingPath)); the operations are \(RecordOperation.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            throw SyncServiceError.malformed(describe(error))
        }
    }

    private struct VersionProbe: Decodable {
        var protocolVersion: Int?
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "the top level" : codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context): return "\(key.stringValue) is missing at \(path(context.codingPath))"
        case .typeMismatch(let type, let context): return "\(path(context.codingPath)) is not \(type): \(context.debugDescription)"
        case .valueNotFound(let type, let context): return "\(path(context.codingPath)) is null where \(type) is expected"
        case .dataCorrupted(let context): return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
