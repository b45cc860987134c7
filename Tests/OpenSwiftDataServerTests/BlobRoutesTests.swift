import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

/// Bytes that are the same for a seed, and their reference.
func blob(_ count: Int, seed: UInt8 = 7) -> (bytes: [UInt8], reference: BlobReference) {
    var bytes = [UInt8](repeating: 0, count: count)
    var state = UInt32(seed) &+ 0x9E37_79B9
    for index in bytes.indices {
        state = state &* 1_664_525 &+ 1_013_904_223
        bytes[index] = UInt8(truncatingIfNeeded: state >> 24)
    }
    let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    guard let reference = BlobReference(digest: digest, size: Int64(count)) else { preconditionFailure("a SHA-256 is a digest") }
    return (bytes, reference)
}

extension LiveServer {
    /// Pushes a photo record naming `reference` in `scope`, in protocol version 4.
    func pushPhoto(
        _ id: String, _ reference: BlobReference?, scope: ScopeID, user: String, client: ClientID, mutation: MutationID = 1
    ) async throws
        -> LiveServerClient.Answer
    {
        let change = RecordChange(
            op: mutation == 1 ? .insert : .update, entity: "Photo", recordID: id, scope: scope, baseVersion: nil,
            fields: ["data": reference.map { .blob($0) } ?? .null, "title": .string(id)])
        let request = PushRequest(
            protocolVersion: .blobs, clientID: client,
            mutations: [Mutation(id: mutation, stamp: stamp(1_790_000_000_000 + UInt64(mutation)), changes: [change])])
        return try await push(request, token: try await token(user))
    }

    /// Asks where the user's upload of `reference` stands.
    func uploadState(_ reference: BlobReference, user: String) async throws -> LiveServerClient.Answer {
        try await send(.POST, "/v1/blobs/\(reference.digest)", token: try await token(user), headers: ["Upload-Length": "\(reference.size)"])
    }

    /// Sends `bytes` as the part of the upload at `offset`.
    func uploadPart(_ reference: BlobReference, _ bytes: ArraySlice<UInt8>, at offset: Int, user: String) async throws -> LiveServerClient.Answer {
        var request = HTTPClientRequest(url: base + "/v1/blobs/\(reference.digest)")
        request.method = .PATCH
        request.headers.add(name: "Authorization", value: "Bearer \(try await token(user))")
        request.headers.add(name: "Upload-Length", value: "\(reference.size)")
        request.headers.add(name: "Upload-Offset", value: "\(offset)")
        request.body = .bytes(ByteBuffer(bytes: bytes))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        return LiveServerClient.Answer(status: Int(response.status.code), body: Data(body.readableBytesView), headers: [:])
    }

    func read(_ digest: String, user: String, range: String? = nil) async throws -> LiveServerClient.Answer {
        try await send(.GET, "/v1/blobs/\(digest)", token: try await token(user), headers: range.map { ["Range": $0] } ?? [:])
    }
}

@Suite("Server: blobs uploaded in parts, resumed, checked, and read by those who may read a record naming them")
struct BlobRoutesTests {
    @Test("an upload resumes from what the server holds after a dropped connection, and reads back whole and by range", arguments: Backend.all)
    func resumesAndReads(_ backend: Backend) async throws {
        try await LiveServer.run(backend) { server in
            let (bytes, reference) = blob(3 << 20)
            // The record first: it syncs at once; the blob follows.
            #expect(try await server.pushPhoto("p1", reference, scope: .user("alice"), user: "alice", client: "phone").status == 200)
            #expect(try await server.uploadState(reference, user: "alice").decode(BlobUploadState.self).received == 0)
            #expect(try await server.read(reference.digest, user: "alice").status == 404)

            // A part whose connection drops after 1 MiB: what arrived stays.
            var request = HTTPClientRequest(url: server.base + "/v1/blobs/\(reference.digest)")
            request.method = .PATCH
            request.headers.add(name: "Authorization", value: "Bearer \(try await server.token("alice"))")
            request.headers.add(name: "Upload-Length", value: "\(reference.size)")
            request.headers.add(name: "Upload-Offset", value: "0")
            let first = ByteBuffer(bytes: bytes[0..<(1 << 20)])
            let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(first)
                Task {
                    try? await Task.sleep(for: .milliseconds(300))
                    continuation.finish(throwing: CancellationError())
                }
            }
            request.body = .stream(chunks, length: .known(Int64(bytes.count)))
            _ = try? await HTTPClient.shared.execute(request, timeout: .seconds(30))
            // The server may still be writing what it read: ask until it settles.
            var held = Int64(0)
            for _ in 0..<50 {
                held = try await server.uploadState(reference, user: "alice").decode(BlobUploadState.self).received
                if held == 1 << 20 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(held == 1 << 20)

            // A part from elsewhere is refused, naming where to start.
            let misplaced = try await server.uploadPart(reference, bytes[0..<10], at: 0, user: "alice")
            #expect(misplaced.status == 409 && misplaced.errorCode == .uploadOffsetMismatch)
            #expect(misplaced.text.contains("\(1 << 20)"))

            let rest = try await server.uploadPart(reference, bytes[(1 << 20)...], at: 1 << 20, user: "alice")
            #expect(rest.status == 200)
            #expect(try rest.decode(BlobUploadState.self).isComplete)
            #expect(try await server.uploadState(reference, user: "alice").decode(BlobUploadState.self).isComplete)

            let whole = try await server.read(reference.digest, user: "alice")
            #expect(whole.status == 200 && Array(whole.body) == bytes)
            let middle = try await server.read(reference.digest, user: "alice", range: "bytes=1000-1999")
            #expect(middle.status == 206 && Array(middle.body) == Array(bytes[1000..<2000]))
            #expect(middle.headers["content-range"] == "bytes 1000-1999/\(bytes.count)")
            // Across the boundary of two chunks of a storage that keeps 1 MiB chunks.
            let across = try await server.read(reference.digest, user: "alice", range: "bytes=1048000-1049999")
            #expect(across.status == 206 && Array(across.body) == Array(bytes[1_048_000..<1_050_000]))
            let tail = try await server.read(reference.digest, user: "alice", range: "bytes=-16")
            #expect(tail.status == 206 && Array(tail.body) == Array(bytes.suffix(16)))
            #expect(try await server.read(reference.digest, user: "alice", range: "bytes=\(bytes.count)-").status == 416)
        }
    }

    @Test("bytes that do not hash to the digest are refused, and nothing of them is kept", arguments: Backend.all)
    func digestMismatch(_ backend: Backend) async throws {
        try await LiveServer.run(backend) { server in
            let (_, reference) = blob(4096)
            let (other, _) = blob(4096, seed: 9)
            #expect(try await server.pushPhoto("p1", reference, scope: .user("alice"), user: "alice", client: "phone").status == 200)
            let answer = try await server.uploadPart(reference, other[...], at: 0, user: "alice")
            #expect(answer.status == 422 && answer.errorCode == .blobDigestMismatch)
            #expect(try await server.uploadState(reference, user: "alice").decode(BlobUploadState.self).received == 0)
            #expect(try await server.read(reference.digest, user: "alice").status == 404)
        }
    }

    @Test(
        "another user's blob answers as a missing one, until a record naming it is shared with them; revoked, it is unreadable again",
        arguments: Backend.all)
    func accessFollowsRecords(_ backend: Backend) async throws {
        try await LiveServer.run(backend) { server in
            let (bytes, reference) = blob(10_000)
            let room = ScopeID(rawValue: "room:1")
            #expect(try await server.pushPhoto("p1", reference, scope: room, user: "alice", client: "phone").status == 200)
            #expect(try await server.uploadPart(reference, bytes[...], at: 0, user: "alice").status == 200)
            let missing = try await server.read(String(repeating: "0", count: 64), user: "bob")
            let hidden = try await server.read(reference.digest, user: "bob")
            #expect(hidden.status == missing.status && hidden.errorCode == missing.errorCode && hidden.status == 404)
            // Asking about it tells carol nothing: she has to send the bytes. Sending them stores
            // nothing new and lets her read back only what she sent: they are hers too.
            #expect(try await server.uploadState(reference, user: "carol").decode(BlobUploadState.self).received == 0)
            #expect(try await server.read(reference.digest, user: "carol").status == 404)
            #expect(try await server.uploadPart(reference, bytes[...], at: 0, user: "carol").status == 200)
            #expect(try await server.read(reference.digest, user: "carol").status == 200)

            let grant = try JSONEncoder.syncProtocol().encode(GrantRequest(user: "bob", role: .reader))
            #expect(try await server.send(.POST, "/v1/scopes/room:1/members", token: try await server.token("alice"), body: grant).status == 200)
            let shared = try await server.read(reference.digest, user: "bob")
            #expect(shared.status == 200 && Array(shared.body) == bytes)

            #expect(try await server.send(.DELETE, "/v1/scopes/room:1/members/bob", token: try await server.token("alice")).status == 200)
            #expect(try await server.read(reference.digest, user: "bob").status == 404)
        }
    }

    @Test("limits: a blob past the size per blob, or past the user's bytes, is 413 naming the limit", arguments: Backend.all)
    func limits(_ backend: Backend) async throws {
        let sync = SyncServiceConfiguration(maxBlobBytes: 5_000, maxUserBlobBytes: 6_000)
        try await LiveServer.run(backend, sync: sync) { server in
            let (_, large) = blob(5_001)
            let tooLarge = try await server.uploadState(large, user: "alice")
            #expect(tooLarge.status == 413 && tooLarge.errorCode == .blobTooLarge && tooLarge.text.contains("5000"))
            let (first, firstReference) = blob(4_000)
            #expect(try await server.uploadPart(firstReference, first[...], at: 0, user: "alice").status == 200)
            let (second, secondReference) = blob(4_000, seed: 3)
            let overQuota = try await server.uploadPart(secondReference, second[...], at: 0, user: "alice")
            #expect(overQuota.status == 413 && overQuota.errorCode == .blobTooLarge && overQuota.text.contains("6000"))
            // Another user has limits of their own.
            #expect(try await server.uploadPart(secondReference, second[...], at: 0, user: "bob").status == 200)
        }
    }

    @Test("a reader of version 3 gets a blob's field as nil; a version 3 push of a blob is refused")
    func olderReaders() async throws {
        try await LiveServer.run(.sqlite) { server in
            let (_, reference) = blob(100)
            #expect(try await server.pushPhoto("p1", reference, scope: .user("alice"), user: "alice", client: "phone").status == 200)
            let token = try await server.token("alice")
            let v4 = try await server.pull(PullRequest(protocolVersion: .blobs, clientID: "new"), token: token).decode(PullResponse.self)
            #expect(v4.changes.first?.fields["data"] == .blob(reference))
            let v3 = try await server.pull(PullRequest(protocolVersion: .textMerges, clientID: "old"), token: token).decode(PullResponse.self)
            #expect(v3.changes.first?.fields["data"] == .null)
            #expect(v3.changes.first?.fields["title"] == .string("p1"))
            let change = RecordChange(
                op: .insert, entity: "Photo", recordID: "p2", scope: .user("alice"), baseVersion: nil, fields: ["data": .blob(reference)])
            let old = PushRequest(
                protocolVersion: .textMerges, clientID: "old", mutations: [Mutation(id: 1, stamp: stamp(1_790_000_000_000), changes: [change])])
            let refused = try await server.push(old, token: token)
            #expect(refused.status == 400 && refused.text.contains("protocol version 4"))
        }
    }

    @Test(
        "compaction deletes a blob no live record names once the window has passed, and uploads nobody resumed; a blob a record names stays",
        arguments: Backend.all)
    func collection(_ backend: Backend) async throws {
        try await LiveServer.run(backend, sync: SyncServiceConfiguration(retention: 0)) { server in
            let (kept, keptReference) = blob(2_000)
            let (dropped, droppedReference) = blob(2_000, seed: 5)
            #expect(try await server.pushPhoto("p1", keptReference, scope: .user("alice"), user: "alice", client: "phone").status == 200)
            #expect(try await server.pushPhoto("p2", droppedReference, scope: .user("alice"), user: "alice", client: "laptop").status == 200)
            #expect(try await server.uploadPart(keptReference, kept[...], at: 0, user: "alice").status == 200)
            #expect(try await server.uploadPart(droppedReference, dropped[...], at: 0, user: "alice").status == 200)
            // An upload nobody finishes.
            let (abandoned, abandonedReference) = blob(3_000, seed: 11)
            #expect(try await server.uploadPart(abandonedReference, abandoned[..<1_000], at: 0, user: "alice").status == 200)
            // p2 no longer names its blob.
            #expect(try await server.pushPhoto("p2", nil, scope: .user("alice"), user: "alice", client: "laptop", mutation: 2).status == 200)
            try await Task.sleep(for: .milliseconds(5))
            let result = try await server.server.service.compact()
            #expect(result.blobsRemoved == 1)
            #expect(try await server.read(droppedReference.digest, user: "alice").status == 404)
            #expect(try await server.server.service.blobs?.size(of: droppedReference.digest) == nil)
            #expect(try await server.read(keptReference.digest, user: "alice").status == 200)
            #expect(try await server.uploadState(abandonedReference, user: "alice").decode(BlobUploadState.self).received == 0)
        }
    }

    @Test("a backup copies the blobs beside it, and a restore puts them back: a record's blob reads the same from the restored server")
    func backupAndRestore() async throws {
        let (bytes, reference) = blob(50_000)
        let backups = try TemporaryDirectory()
        let backup = backups.path("backup.sqlite")
        try await LiveServer.run(.sqlite) { server in
            #expect(try await server.pushPhoto("p1", reference, scope: .user("alice"), user: "alice", client: "phone").status == 200)
            #expect(try await server.uploadPart(reference, bytes[...], at: 0, user: "alice").status == 200)
            guard case let .sqlite(_, path) = server.storage else { return }
            let summary = try SQLiteMaintenance.backup(databasePath: path, to: backup)
            #expect(summary.blobs == 1)
        }
        let restored = backups.path("restored.sqlite")
        try SQLiteMaintenance.restore(backup: backup, to: restored)
        let directory = try TemporaryDirectory()
        try await LiveServer.run(storage: .sqlite(try SQLiteSyncStorage(path: restored), path: restored), directory: directory) { server in
            let read = try await server.read(reference.digest, user: "alice")
            #expect(read.status == 200 && Array(read.body) == bytes)
        }
    }

    @Test("naming a digest in one's own record does not make another user's blob readable, until one sends its bytes", arguments: Backend.all)
    func namingIsNotHolding(_ backend: Backend) async throws {
        try await LiveServer.run(backend) { server in
            let (bytes, reference) = blob(20_000)
            #expect(try await server.pushPhoto("p1", reference, scope: .user("alice"), user: "alice", client: "phone").status == 200)
            #expect(try await server.uploadPart(reference, bytes[...], at: 0, user: "alice").status == 200)
            // Bob learned the digest somewhere and names it in a record of his own.
            #expect(try await server.pushPhoto("b1", reference, scope: .user("bob"), user: "bob", client: "bob-phone").status == 200)
            let missing = try await server.read(String(repeating: "1", count: 64), user: "bob")
            let named = try await server.read(reference.digest, user: "bob")
            #expect(named.status == 404 && named.errorCode == missing.errorCode)
            #expect(try await server.uploadState(reference, user: "bob").decode(BlobUploadState.self).received == 0)
            // Having sent the bytes, he holds them: his record's blob is readable.
            #expect(try await server.uploadPart(reference, bytes[...], at: 0, user: "bob").status == 200)
            let held = try await server.read(reference.digest, user: "bob")
            #expect(held.status == 200 && Array(held.body) == bytes)
        }
    }

    @Test("the uploader is told an upload is complete even before a record names the blob (an answer lost on the way)")
    func completeForItsUploader() async throws {
        try await LiveServer.run(.sqlite) { server in
            let (bytes, reference) = blob(1_000)
            let upload = try await server.uploadPart(reference, bytes[...], at: 0, user: "alice")
            #expect(upload.status == 200)
            #expect(try await server.uploadState(reference, user: "alice").decode(BlobUploadState.self).isComplete)
            #expect(try await server.uploadState(reference, user: "bob").decode(BlobUploadState.self).received == 0)
        }
    }

    @Test("ranges: one range past the end stops there, a header that is not one range reads the whole blob, an empty suffix is 416")
    func ranges() async throws {
        #expect(BlobRoutes.byteRange("bytes=0-9223372036854775807", size: 10) == .part(0..<10))
        #expect(BlobRoutes.byteRange("bytes=2-4", size: 10) == .part(2..<5))
        #expect(BlobRoutes.byteRange("bytes=8-", size: 10) == .part(8..<10))
        #expect(BlobRoutes.byteRange("bytes=-3", size: 10) == .part(7..<10))
        #expect(BlobRoutes.byteRange("bytes=-30", size: 10) == .part(0..<10))
        #expect(BlobRoutes.byteRange("bytes=10-", size: 10) == .unsatisfiable)
        #expect(BlobRoutes.byteRange("bytes=-0", size: 10) == .unsatisfiable)
        for ignored in ["items=0-1", "bytes=abc", "bytes=5-3", "bytes=0-1,3-4", "bytes=+1-2", "bytes=1-+2"] {
            #expect(BlobRoutes.byteRange(ignored, size: 10) == .whole, "\(ignored)")
        }
        try await LiveServer.run(.sqlite) { server in
            let (bytes, reference) = blob(100)
            #expect(try await server.pushPhoto("p1", reference, scope: .user("alice"), user: "alice", client: "phone").status == 200)
            #expect(try await server.uploadPart(reference, bytes[...], at: 0, user: "alice").status == 200)
            let huge = try await server.read(reference.digest, user: "alice", range: "bytes=90-9223372036854775807")
            #expect(huge.status == 206 && Array(huge.body) == Array(bytes[90...]))
            let ignored = try await server.read(reference.digest, user: "alice", range: "bytes=0-1,5-6")
            #expect(ignored.status == 200 && Array(ignored.body) == bytes)
        }
    }

    @Test("a field declared as data holds a blob or inline bytes; an app of version 3 may not overwrite a blob it cannot read")
    func dataFields() async throws {
        try await LiveServer.run(.sqlite) { server in
            let (_, reference) = blob(100)
            let schema = SchemaDescriptor(entities: [
                EntityDescriptor(
                    name: "Photo",
                    fields: [
                        FieldDescriptor(name: "data", kind: .data, optional: true), FieldDescriptor(name: "title", kind: .string, optional: false),
                    ])
            ])
            let token = try await server.token("alice")
            func write(_ id: MutationID, _ value: SyncValue, version: ProtocolVersion, client: ClientID) async throws -> MutationResult? {
                let change = RecordChange(
                    op: id == 1 ? .insert : .update, entity: "Photo", recordID: "p1", scope: .user("alice"), baseVersion: nil,
                    fields: id == 1 ? ["data": value, "title": .string("p1")] : ["data": value])
                let request = PushRequest(
                    protocolVersion: version, clientID: client,
                    mutations: [Mutation(id: id, stamp: stamp(1_790_000_000_000 + UInt64(id)), changes: [change])],
                    schema: schema)
                return try await server.push(request, token: token).decode(PushResponse.self).results.first
            }
            #expect(try await write(1, .blob(reference), version: .blobs, client: "new")?.status == .applied)
            #expect(try await write(2, .data(Data([1, 2])), version: .blobs, client: "new")?.status == .applied)
            #expect(try await write(3, .blob(reference), version: .blobs, client: "new")?.status == .applied)
            let old = try await write(1, .data(Data([3])), version: .textMerges, client: "old")
            #expect(old?.status == .rejected && old?.reason == .validation)
            #expect(old?.message?.contains("\"data\" holds a blob") == true)
            // Its answer names the record as that version reads it: the blob's field is nil.
            #expect(old?.serverRecords?.first?.fields["data"] == .null)
        }
    }
}
