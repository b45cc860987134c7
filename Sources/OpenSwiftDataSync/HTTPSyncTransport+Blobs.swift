import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OpenSwiftDataSyncProtocol

/// The blob endpoints over HTTP: bodies stream from and to files, a part at a time.
extension HTTPSyncTransport {
    /// The bytes read from a file and sent per part of a request body.
    static let blobChunk = 1 << 20

    /// Starts or resumes an upload.
    public func blobUploadState(_ blob: BlobReference) async throws -> BlobUploadState {
        let path = Self.blobPath(blob.digest)
        let answer = try await blobRequest(.POST, path, headers: [(BlobHeader.length, String(blob.size))], body: nil)
        return try Self.uploadState(answer, path: path)
    }

    /// Sends a file's bytes from `offset`.
    public func uploadBlob(
        _ blob: BlobReference, from path: String, offset: Int64, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> BlobUploadState {
        let route = Self.blobPath(blob.digest)
        guard offset >= 0, offset <= blob.size else {
            throw SyncTransportError.malformedResponse("\(route): an upload cannot start at \(offset), outside the blob's \(blob.size) bytes")
        }
        let length = blob.size - offset
        let chunks = FileChunks(path: path, offset: offset, length: length, progress: progress)
        let answer = try await blobRequest(
            .PATCH, route, headers: [(BlobHeader.length, String(blob.size)), (BlobHeader.offset, String(offset))],
            body: .stream(chunks, length: .known(length)))
        return try Self.uploadState(answer, path: route)
    }

    /// Downloads a blob into a file, continuing a start of it.
    public func downloadBlob(_ blob: BlobReference, to path: String, progress: @escaping @Sendable (Int64) -> Void) async throws {
        let route = Self.blobPath(blob.digest)
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw SyncTransportError.malformedResponse("cannot create \(path) for the blob \(blob)")
            }
        }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw SyncTransportError.malformedResponse("cannot write \(path) for the blob \(blob)")
        }
        defer { try? handle.close() }
        let held = Int64((try? handle.seekToEnd()) ?? 0)
        var request = HTTPClientRequest(url: base + route)
        request.method = .GET
        request.headers.add(name: "Authorization", value: "Bearer \(try await token())")
        if held > 0, held < blob.size { request.headers.add(name: "Range", value: "bytes=\(held)-") }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: blobTimeout)
        } catch {
            throw SyncTransportError.unreachable("\(error)")
        }
        let status = Int(response.status.code)
        var written: Int64
        switch status {
        case 206 where held > 0 && held < blob.size:
            written = held
        case 200:
            try handle.truncate(atOffset: 0)
            written = 0
        default:
            let body = (try? await response.body.collect(upTo: 1 << 20)).map { Data($0.readableBytesView) } ?? Data()
            throw Self.refusal(status: status, body: body)
        }
        do {
            for try await part in response.body {
                try handle.write(contentsOf: Data(part.readableBytesView))
                written += Int64(part.readableBytes)
                progress(written)
            }
        } catch {
            throw SyncTransportError.unreachable("the download of \(blob) broke off after \(written) bytes: \(error)")
        }
        guard written == blob.size else {
            throw SyncTransportError.unreachable("the download of \(blob) ended after \(written) bytes")
        }
    }

    /// `/v1/blobs/{digest}`.
    static func blobPath(_ digest: String) -> String { SyncEndpoint.blobs + "/" + digest }

    /// How long one blob request may take: the request timeout, but at least an hour, since a
    /// large blob's body takes long on a slow link.
    private var blobTimeout: TimeAmount { max(timeout, .hours(1)) }

    /// Sends a blob request (asking for a new token once after a 401 when the body can be sent
    /// again) and returns the status and body.
    private func blobRequest(
        _ method: HTTPMethod, _ path: String, headers: [(String, String)], body: HTTPClientRequest.Body?
    ) async throws -> (status: Int, body: Data) {
        func once() async throws -> (status: Int, body: Data) {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer \(try await token())")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = body }
            do {
                let response = try await client.execute(request, timeout: blobTimeout)
                let bytes = try await response.body.collect(upTo: 1 << 20)
                return (Int(response.status.code), Data(bytes.readableBytesView))
            } catch {
                throw SyncTransportError.unreachable("\(error)")
            }
        }
        var answer = try await once()
        if answer.status == 401 { answer = try await once() }
        return answer
    }

    private static func uploadState(_ answer: (status: Int, body: Data), path: String) throws -> BlobUploadState {
        guard answer.status == 200 else { throw refusal(status: answer.status, body: answer.body) }
        do {
            return try JSONDecoder().decode(BlobUploadState.self, from: answer.body)
        } catch {
            throw SyncTransportError.malformedResponse("\(path): \(error)")
        }
    }

    /// The error of an answer other than success.
    static func refusal(status: Int, body: Data) -> SyncTransportError {
        let error =
            (try? JSONDecoder().decode(ErrorResponse.self, from: body))?.error
            ?? SyncError(status >= 500 ? .internalError : .malformedRequest, "HTTP \(status): \(String(decoding: body.prefix(200), as: UTF8.self))")
        return .refused(status: status, error: error)
    }
}

/// A file's bytes from an offset, as the parts of a request body, read as they are sent.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let path: String
    let offset: Int64
    let length: Int64
    let progress: @Sendable (Int64) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        let path: String
        var sent: Int64
        let end: Int64
        let progress: @Sendable (Int64) -> Void

        mutating func next() async throws -> ByteBuffer? {
            guard sent < end else { return nil }
            guard let handle else { throw SyncTransportError.malformedResponse("cannot read \(path) to upload it") }
            let count = Int(Swift.min(Int64(HTTPSyncTransport.blobChunk), end - sent))
            guard let part = try handle.read(upToCount: count), !part.isEmpty else {
                throw SyncTransportError.malformedResponse("\(path) ended before the blob's size: it changed while uploading")
            }
            sent += Int64(part.count)
            progress(sent)
            return ByteBuffer(bytes: part)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        let handle = FileHandle(forReadingAtPath: path)
        _ = try? handle?.seek(toOffset: UInt64(offset))
        return AsyncIterator(handle: handle, path: path, sent: offset, end: offset + length, progress: progress)
    }
}
