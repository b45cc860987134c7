import Foundation
import HTTPTypes
import Hummingbird
import OpenSwiftDataSyncProtocol

/// The blob endpoints (`/v1/blobs/{digest}`): an upload's state (`POST`), a part of it
/// (`PATCH`, streamed to storage as it arrives), and reads (`GET`, whole or one byte range,
/// streamed from storage).
package struct BlobRoutes: Sendable {
    let service: SyncService
    let verifier: TokenVerifier

    static let length = HTTPField.Name(BlobHeader.length)!
    static let offset = HTTPField.Name(BlobHeader.offset)!

    func add<Context: RequestContext>(to router: RouteCollection<Context>) {
        router.post("/v1/blobs/:digest") { request, context in
            let user = try await authenticate(request)
            let reference = try reference(request, context)
            return JSONBody.response(try await service.blobUpload(user: user, reference: reference))
        }
        router.patch("/v1/blobs/:digest") { request, context in
            let user = try await authenticate(request)
            let reference = try reference(request, context)
            guard let text = request.headers[Self.offset], let offset = Int64(text), offset >= 0, offset <= reference.size else {
                throw SyncServiceError.malformed("a part of an upload names where it starts, 0 to the blob's size, in \(BlobHeader.offset)")
            }
            let state = try await service.appendBlob(user: user, reference: reference, offset: offset, body: request.body)
            return JSONBody.response(state)
        }
        router.get("/v1/blobs/:digest") { request, context in
            let user = try await authenticate(request)
            let digest = try digest(context)
            let size = try await service.readableBlob(user: user, digest: digest)
            guard let blobs = service.blobs else { throw SyncServiceError(404, .notFound, "this server keeps no blobs") }
            var status = HTTPResponse.Status.ok
            var range: Range<Int64> = 0..<size
            var headers: HTTPFields = [.contentType: "application/octet-stream", .acceptRanges: "bytes", .cacheControl: "private"]
            if let header = request.headers[.range] {
                switch Self.byteRange(header, size: size) {
                case .whole: break
                case .unsatisfiable:
                    return Response(
                        status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(size)"],
                        body: ResponseBody(byteBuffer: ByteBuffer()))
                case .part(let asked):
                    range = asked
                    status = .partialContent
                    headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
                }
            }
            let chosen = range
            return Response(
                status: status, headers: headers,
                body: ResponseBody(contentLength: Int(chosen.count)) { writer in
                    try await blobs.read(digest, range: chosen) { chunk in try await writer.write(chunk) }
                    try await writer.finish(nil)
                })
        }
    }

    private func authenticate(_ request: Request) async throws -> String {
        try await verifier.user(authorization: request.headers[.authorization])
    }

    private func digest(_ context: some RequestContext) throws -> String {
        guard let digest = context.parameters.get("digest"), BlobReference.isDigest(digest) else {
            throw SyncServiceError.malformed("a blob is named by its SHA-256: 64 lowercase hexadecimal digits")
        }
        return digest
    }

    private func reference(_ request: Request, _ context: some RequestContext) throws -> BlobReference {
        let digest = try digest(context)
        guard let text = request.headers[Self.length], let size = Int64(text), let reference = BlobReference(digest: digest, size: size) else {
            throw SyncServiceError.malformed("an upload names the blob's size in bytes in \(BlobHeader.length)")
        }
        return reference
    }

    /// What a `Range` header asks of a blob of `size` bytes.
    package enum RangeAnswer: Equatable {
        /// The whole blob: a header that is not one byte range (another unit, several ranges,
        /// malformed) is ignored, as HTTP says.
        case whole
        /// One byte range, `a-b`, `a-` or `-n` (the last n bytes), within the blob.
        case part(Range<Int64>)
        /// A byte range that starts past the blob's end, or a suffix of none of its bytes.
        case unsatisfiable
    }

    /// What `header` asks of a blob of `size` bytes.
    package static func byteRange(_ header: String, size: Int64) -> RangeAnswer {
        guard header.hasPrefix("bytes=") else { return .whole }
        let spec = header.dropFirst("bytes=".count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        func number(_ text: String) -> Int64? { text.utf8.allSatisfy { (0x30...0x39).contains($0) } ? Int64(text) : nil }
        if first.isEmpty {
            guard let count = number(last) else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - min(count, size))..<size)
        }
        guard let start = number(first) else { return .whole }
        guard start < size else { return .unsatisfiable }
        if last.isEmpty { return .part(start..<size) }
        guard let end = number(last), end >= start else { return .whole }
        // `end` may be any number: the range stops at the blob's end.
        return .part(start..<(end >= size - 1 ? size : end + 1))
    }
}
