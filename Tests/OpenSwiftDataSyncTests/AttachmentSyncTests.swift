import Crypto
import Foundation
import OpenSwiftData
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Synchronization
import Testing

/// A synced model with attachments: an optional and a non-optional `.externalStorage` value.
@Model
final class Photo {
    var title: String
    @Attribute(.externalStorage) var image: Data?
    @Attribute(.externalStorage) var preview: Data
    /// The scope the photo syncs in (nil: the user's private scope).
    var album: String?

    init(title: String, image: Data?, preview: Data = Data(), album: String? = nil) {
        self.title = title
        self.image = image
        self.preview = preview
        self.album = album
    }
}

extension LoopbackServer {
    /// A device that syncs photos over HTTP, its store in `<name>.sqlite`.
    func photoDevice(_ name: String, user: String = "alice", onDemand: Bool = false, port: Int? = nil, retention: Int? = nil) throws -> Device {
        let url = directory.file("\(name).sqlite")
        let container = try ModelContainer(for: Schema([Photo.self]), configurations: ModelConfiguration(url: url))
        let verifier = server.verifier
        let server = port.flatMap { URL(string: "http://127.0.0.1:\($0)") } ?? self.url
        let transport = HTTPSyncTransport(server: server) { try await verifier.mint(user: user) }
        var configuration = SyncConfiguration()
        configuration.sync(Photo.self, scope: \Photo.album)
        if onDemand { configuration.attachments(\Photo.image, download: .onDemand) }
        if let retention { configuration.acknowledgedMutationRetention = retention }
        configuration.pollInterval = .seconds(3600)
        let engine = try SyncEngine(
            container: container, transport: transport, user: user, configuration: configuration, clock: SystemSyncClock(),
            seed: seed(of: name + user))
        return Device(url: url, container: container, engine: engine, inMemory: nil, context: ModelContext(container))
    }
}

/// Version 1 of a gallery app: its images stay in their rows and sync inside their records.
enum GalleryV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Shot.self] }

    @Model final class Shot {
        var title: String
        var image: Data?
        init(title: String, image: Data?) {
            self.title = title
            self.image = image
        }
    }
}

/// Version 2: the same images as `.externalStorage`, synced as blobs.
enum GalleryV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Shot.self] }

    @Model final class Shot {
        var title: String
        @Attribute(.externalStorage) var image: Data?
        init(title: String, image: Data?) {
            self.title = title
            self.image = image
        }
    }
}

/// Version 1 of an album app: its thumbnails in files, its images still in their rows.
enum AlbumV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Shot.self] }

    @Model final class Shot {
        var title: String
        var image: Data?
        @Attribute(.externalStorage) var thumbnail: Data?
        init(title: String, image: Data?, thumbnail: Data?) {
            self.title = title
            self.image = image
            self.thumbnail = thumbnail
        }
    }
}

/// Version 2: the images in files too.
enum AlbumV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Shot.self] }

    @Model final class Shot {
        var title: String
        @Attribute(.externalStorage) var image: Data?
        @Attribute(.externalStorage) var thumbnail: Data?
        init(title: String, image: Data?, thumbnail: Data?) {
            self.title = title
            self.image = image
            self.thumbnail = thumbnail
        }
    }
}

extension LoopbackServer {
    /// A device of the gallery app in version 1 or 2, its store in `<name>.sqlite`.
    func galleryDevice(_ name: String, version2: Bool) throws -> (ModelContainer, SyncEngine) {
        let url = directory.file("\(name).sqlite")
        let verifier = server.verifier
        let transport = HTTPSyncTransport(server: self.url) { try await verifier.mint(user: "alice") }
        var configuration = SyncConfiguration()
        let container: ModelContainer
        if version2 {
            container = try ModelContainer(for: Schema(versionedSchema: GalleryV2.self), configurations: ModelConfiguration(url: url))
            configuration.sync(GalleryV2.Shot.self)
        } else {
            container = try ModelContainer(for: Schema(versionedSchema: GalleryV1.self), configurations: ModelConfiguration(url: url))
            configuration.sync(GalleryV1.Shot.self)
        }
        let engine = try SyncEngine(
            container: container, transport: transport, user: "alice", configuration: configuration, clock: SystemSyncClock(), seed: seed(of: name))
        return (container, engine)
    }
}

/// `count` bytes that differ from run to run of `seed`.
func attachmentBytes(_ count: Int, seed: UInt8) -> Data {
    var bytes = [UInt8](repeating: 0, count: count)
    var state = UInt32(seed) &+ 0x9E37_79B9
    for index in bytes.indices {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        bytes[index] = UInt8(truncatingIfNeeded: state)
    }
    return Data(bytes)
}

extension Device {
    /// The photos by title, each with its image's and preview's sizes (nil: absent).
    func photos() throws -> [String: (image: Data?, preview: Data)] {
        let context = ModelContext(container)
        var result: [String: (image: Data?, preview: Data)] = [:]
        for photo in try context.fetch(FetchDescriptor<Photo>()) { result[photo.title] = (photo.image, photo.preview) }
        return result
    }

    /// The files of `.externalStorage` values beside the store, by digest.
    var attachmentFiles: Set<String> {
        let root = url.path + ".attachments"
        var names: Set<String> = []
        for shard in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where shard.count == 2 {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/" + shard)) ?? [] { names.insert(name) }
        }
        return names
    }

    var status: (uploads: Int, missing: Int) {
        get async {
            let status = engine.status
            return await MainActor.run { (status.pendingAttachmentUploadCount, status.missingAttachmentCount) }
        }
    }
}

/// The SHA-256 of `data` in lowercase hexadecimal, as the server and the store name files.
func hexDigest(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

@Suite("Attachments: .externalStorage values sync as blobs through a real osd-server on loopback")
struct AttachmentSyncTests {
    @Test("the record syncs at once and its bytes follow: three devices read them byte for byte")
    func threeDevices() async throws {
        try await LoopbackServer.run { server in
            // A keeps no settled save for a server restore: a file goes once nothing names it.
            let a = try server.photoDevice("a", retention: 0)
            let b = try server.photoDevice("b")
            let c = try server.photoDevice("c")
            let image = attachmentBytes(300_000, seed: 1)
            let preview = attachmentBytes(200_000, seed: 2)
            let small = attachmentBytes(1_000, seed: 3)
            a.context.insert(Photo(title: "harbour", image: image, preview: preview))
            a.context.insert(Photo(title: "icon", image: small))
            try a.context.save()

            // The records first: pushed and pulled before any byte of the blobs moved.
            try await a.engine.syncNow()
            try await b.engine.syncNow()
            let early = try b.photos()
            #expect(early["harbour"]?.image == nil)
            #expect(early["harbour"]?.preview == Data())
            // A value of at most 128 KiB stays in its record.
            #expect(early["icon"]?.image == small)
            #expect(try a.photos().count == 2)

            // The server has nothing to give yet: B keeps waiting, without an error.
            try await b.engine.transferAttachments()
            #expect(try b.photos()["harbour"]?.image == nil)

            try await a.engine.transferAttachments()
            #expect(await a.status.uploads == 0)
            try await b.engine.transferAttachments()
            try await c.engine.syncNow()
            try await c.engine.transferAttachments()
            for device in [b, c] {
                let photos = try device.photos()
                #expect(photos["harbour"]?.image == image)
                #expect(photos["harbour"]?.preview == preview)
                #expect(photos["icon"]?.image == small)
                #expect(await device.status.missing == 0)
                #expect(device.attachmentFiles == [hexDigest(image), hexDigest(preview)])
            }

            // An edit on C travels back the same way.
            let replaced = attachmentBytes(250_000, seed: 4)
            let photo = try #require(try c.context.fetch(FetchDescriptor<Photo>(predicate: #Predicate { $0.title == "harbour" })).first)
            photo.image = replaced
            try c.context.save()
            try await c.engine.syncNow()
            try await c.engine.transferAttachments()
            try await a.engine.syncNow()
            try await a.engine.transferAttachments()
            #expect(try a.photos()["harbour"]?.image == replaced)
            // The old image's file is gone from A once nothing names it.
            #expect(a.attachmentFiles == [hexDigest(replaced), hexDigest(preview)])
        }
    }

    @Test("a replaced or deleted value's file stays until it is uploaded, then goes")
    func filesKeptUntilUploaded() async throws {
        try await LoopbackServer.run { server in
            let a = try server.photoDevice("a", retention: 0)
            let b = try server.photoDevice("b")
            let first = attachmentBytes(400_000, seed: 5)
            let second = attachmentBytes(400_000, seed: 6)
            let photo = Photo(title: "draft", image: first)
            a.context.insert(photo)
            try a.context.save()
            photo.image = second
            try a.context.save()
            // Both saves are queued with their references: both files stay.
            #expect(a.attachmentFiles == [hexDigest(first), hexDigest(second)])
            try await a.engine.syncNow()
            #expect(a.attachmentFiles == [hexDigest(first), hexDigest(second)])
            try await a.engine.transferAttachments()
            // Uploaded, the first is named by nothing and goes; the row keeps the second.
            #expect(a.attachmentFiles == [hexDigest(second)])
            try await b.engine.syncNow()
            try await b.engine.transferAttachments()
            #expect(try b.photos()["draft"]?.image == second)

            a.context.delete(photo)
            try a.context.save()
            try await a.engine.syncNow()
            // History still names the second value (the update that wrote it) until it is
            // deleted.
            #expect(a.attachmentFiles == [hexDigest(second)])
            try a.context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>())
            #expect(a.attachmentFiles.isEmpty)
            try await b.engine.syncNow()
            #expect(try b.photos().isEmpty)
            try b.context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>())
            #expect(b.attachmentFiles.isEmpty)
        }
    }

    @Test("started engines move the bytes by themselves, and report each transfer")
    func startedEnginesTransfer() async throws {
        try await LoopbackServer.run { server in
            let a = try server.photoDevice("a")
            let b = try server.photoDevice("b")
            let events = EventLog(b.engine)
            await a.engine.start()
            await b.engine.start()
            let image = attachmentBytes(1_000_000, seed: 7)
            a.context.insert(Photo(title: "pier", image: image))
            try a.context.save()
            let arrived = await events.waitFor { event in
                if case let .attachmentTransferred(transfer) = event { return transfer.direction == .download }
                return false
            }
            #expect(arrived == .attachmentTransferred(AttachmentTransfer(direction: .download, digest: hexDigest(image), size: 1_000_000)))
            #expect(try b.photos()["pier"]?.image == image)
            await a.engine.stop()
            await b.engine.stop()
        }
    }

    @Test(
        "a started engine asks for a blob its writer has not uploaded once per backoff, not after every sync; transferAttachments asks at once"
    )
    func notUploadedYetBacksOff() async throws {
        try await LoopbackServer.run { server in
            let a = try server.photoDevice("a")
            // B counts its downloads; its backoff starts at 5 minutes, far above the test's time.
            let url = server.directory.file("b.sqlite")
            let container = try ModelContainer(for: Schema([Photo.self]), configurations: ModelConfiguration(url: url))
            let verifier = server.server.verifier
            let transport = CountingTransport(HTTPSyncTransport(server: server.url) { try await verifier.mint(user: "alice") })
            var configuration = SyncConfiguration()
            configuration.sync(Photo.self, scope: \Photo.album)
            configuration.pollInterval = .seconds(3600)
            configuration.backoff = SyncBackoff(base: .seconds(300), cap: .seconds(600))
            let engine = try SyncEngine(
                container: container, transport: transport, user: "alice", configuration: configuration, clock: SystemSyncClock(),
                seed: seed(of: "b"))
            let b = Device(url: url, container: container, engine: engine, inMemory: nil, context: ModelContext(container))

            // A's record reaches the server; its bytes do not (A's engine transfers nothing).
            let image = attachmentBytes(400_000, seed: 12)
            a.context.insert(Photo(title: "dune", image: image))
            try a.context.save()
            try await a.engine.syncNow()

            await b.engine.start()
            try await b.engine.syncNow()
            for _ in 0..<3000 where transport.downloads == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(transport.downloads == 1, "the pass after B's first cycle asked for the blob")
            // More cycles, each followed by a pass: none asks again before the backoff.
            for _ in 0..<5 { try await b.engine.syncNow() }
            try await Task.sleep(for: .seconds(2))
            #expect(transport.downloads == 1, "passes within the backoff do not ask again")
            #expect(try b.photos()["dune"]?.image == nil)

            // Asked for explicitly: at once.
            try await b.engine.transferAttachments()
            #expect(transport.downloads == 2)
            // Once A has uploaded, the explicit call brings the bytes.
            try await a.engine.transferAttachments()
            try await b.engine.transferAttachments()
            #expect(transport.downloads == 3)
            #expect(try b.photos()["dune"]?.image == image)
            await b.engine.stop()
        }
    }

    @Test("an on-demand property downloads when asked; offline the request says so; evicted bytes come back")
    func onDemand() async throws {
        try await LoopbackServer.run { server in
            let a = try server.photoDevice("a")
            let b = try server.photoDevice("b", onDemand: true)
            let image = attachmentBytes(600_000, seed: 8)
            let preview = attachmentBytes(150_000, seed: 9)
            a.context.insert(Photo(title: "market", image: image, preview: preview))
            try a.context.save()
            try await a.engine.syncNow()
            try await a.engine.transferAttachments()

            try await b.engine.syncNow()
            try await b.engine.transferAttachments()
            // The eager preview arrived; the on-demand image did not.
            #expect(try b.photos()["market"]?.preview == preview)
            #expect(try b.photos()["market"]?.image == nil)
            #expect(await b.status.missing == 0, "on-demand bytes are not counted as waiting")
            let photo = try #require(try b.context.fetch(FetchDescriptor<Photo>()).first)
            let id = photo.persistentModelID

            // Offline: the same store through a port nothing listens on.
            let offline = try server.photoDevice("b", onDemand: true, port: 1)
            await #expect {
                try await offline.engine.downloadAttachment(\Photo.image, of: id)
            } throws: { error in
                guard case let .attachmentUnavailable(reason) = error as? SyncEngineError else { return false }
                return reason.contains("Photo.image") && reason.contains("cannot be reached")
            }
            #expect(try b.photos()["market"]?.image == nil)

            try await b.engine.downloadAttachment(\Photo.image, of: id)
            #expect(try b.photos()["market"]?.image == image)
            #expect(b.attachmentFiles == [hexDigest(image), hexDigest(preview)])

            // Evicted: absent again, its file gone, and back on request.
            #expect(try await b.engine.evictAttachment(\Photo.image, of: id))
            #expect(try b.photos()["market"]?.image == nil)
            #expect(b.attachmentFiles == [hexDigest(preview)])
            try await b.engine.downloadAttachment(\Photo.image, of: id)
            #expect(try b.photos()["market"]?.image == image)

            // A value saved here is not evicted before the server holds it.
            let fresh = attachmentBytes(300_000, seed: 10)
            photo.image = fresh
            try b.context.save()
            #expect(try await b.engine.evictAttachment(\Photo.image, of: id) == false)
            #expect(try b.photos()["market"]?.image == fresh)
        }
    }

    @Test("an app update that makes a property .externalStorage, with a save queued: the old save syncs inline, the new ones as blobs")
    func updateToExternalStorage() async throws {
        try await LoopbackServer.run { server in
            let first = attachmentBytes(300_000, seed: 11)
            let second = attachmentBytes(400_000, seed: 12)
            do {
                // Version 1 saves while offline: never pushed before the update.
                let (container, _) = try server.galleryDevice("a", version2: false)
                let context = ModelContext(container)
                context.insert(GalleryV1.Shot(title: "old", image: first))
                try context.save()
            }
            let (a, aEngine) = try server.galleryDevice("a", version2: true)
            let context = ModelContext(a)
            context.insert(GalleryV2.Shot(title: "new", image: second))
            try context.save()
            try await aEngine.syncNow()
            try await aEngine.transferAttachments()
            #expect(try await aEngine.pendingChangeCount() == 0)

            let (b, bEngine) = try server.galleryDevice("b", version2: true)
            try await bEngine.syncNow()
            try await bEngine.transferAttachments()
            var shots: [String: Data?] = [:]
            for shot in try ModelContext(b).fetch(FetchDescriptor<GalleryV2.Shot>()) { shots[shot.title] = shot.image }
            #expect(shots["old"] == first)
            #expect(shots["new"] == second)
        }
    }

    @Test(
        "a device of an older version whose column keeps its bytes in the row reads a newer version's blob as absent, and its edits leave the blob alone"
    )
    func blobIntoInlineColumn() async throws {
        try await LoopbackServer.run { server in
            let verifier = server.server.verifier
            func device<Shot: PersistentModel>(
                _ name: String, _ schema: any VersionedSchema.Type, _ type: Shot.Type
            ) throws -> (ModelContainer, SyncEngine) {
                let container = try ModelContainer(
                    for: Schema(versionedSchema: schema), configurations: ModelConfiguration(url: server.directory.file("\(name).sqlite")))
                var configuration = SyncConfiguration()
                configuration.sync(type)
                let transport = HTTPSyncTransport(server: server.url) { try await verifier.mint(user: "alice") }
                let engine = try SyncEngine(
                    container: container, transport: transport, user: "alice", configuration: configuration, clock: SystemSyncClock(),
                    seed: seed(of: name))
                return (container, engine)
            }
            let image = attachmentBytes(300_000, seed: 16)
            let thumbnail = attachmentBytes(200_000, seed: 17)
            let (new, newEngine) = try device("new", AlbumV2.self, AlbumV2.Shot.self)
            let writer = ModelContext(new)
            writer.insert(AlbumV2.Shot(title: "pier", image: image, thumbnail: thumbnail))
            try writer.save()
            try await newEngine.syncNow()
            try await newEngine.transferAttachments()

            // Version 1 speaks the blob protocol (its thumbnails are files), but its images stay
            // in their rows: the image reads as absent, the thumbnail arrives.
            let (old, oldEngine) = try device("old", AlbumV1.self, AlbumV1.Shot.self)
            try await oldEngine.syncNow()
            try await oldEngine.transferAttachments()
            let context = ModelContext(old)
            let shot = try #require(try context.fetch(FetchDescriptor<AlbumV1.Shot>()).first)
            #expect(shot.image == nil)
            #expect(shot.thumbnail == thumbnail)
            shot.title = "pier at dusk"
            try context.save()
            try await oldEngine.syncNow()

            try await newEngine.syncNow()
            let newShot = try #require(try ModelContext(new).fetch(FetchDescriptor<AlbumV2.Shot>()).first)
            #expect(newShot.title == "pier at dusk")
            #expect(newShot.image == image)
        }
    }

    @Test("a file a save kept for a server restore names stays after its upload, and goes once that save is forgotten")
    func filesKeptForRestores() async throws {
        try await LoopbackServer.run { server in
            let a = try server.photoDevice("a", retention: 3)
            let first = attachmentBytes(300_000, seed: 13)
            let second = attachmentBytes(300_000, seed: 14)
            let photo = Photo(title: "kept", image: first)
            a.context.insert(photo)
            try a.context.save()
            photo.image = second
            try a.context.save()
            try await a.engine.syncNow()
            try await a.engine.transferAttachments()
            // The first save is among the last 3 the engine keeps: a restore of the server to
            // before it would have it sent again, with its bytes. So it stays, pass after pass.
            #expect(a.attachmentFiles == [hexDigest(first), hexDigest(second)])
            try await a.engine.transferAttachments()
            #expect(a.attachmentFiles == [hexDigest(first), hexDigest(second)])
            for index in 0..<4 {
                a.context.insert(Photo(title: "small \(index)", image: Data([UInt8(index)])))
                try a.context.save()
            }
            try await a.engine.syncNow()
            try await a.engine.transferAttachments()
            // Forgotten now: nothing names the first any more.
            #expect(a.attachmentFiles == [hexDigest(second)])
        }
    }

    @Test("an upload asked to start outside the blob's bytes is refused before a byte is sent; one from its start completes")
    func uploadOutsideTheBlob() async throws {
        try await LoopbackServer.run { server in
            let verifier = server.server.verifier
            let transport = HTTPSyncTransport(server: server.url) { try await verifier.mint(user: "alice") }
            let bytes = attachmentBytes(200_000, seed: 15)
            let file = server.directory.path("upload.bin")
            try bytes.write(to: URL(fileURLWithPath: file))
            let blob = try #require(BlobReference(digest: hexDigest(bytes), size: Int64(bytes.count)))
            #expect(try await transport.blobUploadState(blob).received == 0)
            for offset in [Int64(-1), Int64(bytes.count + 1)] {
                await #expect {
                    _ = try await transport.uploadBlob(blob, from: file, offset: offset) { _ in }
                } throws: { error in
                    guard case SyncTransportError.malformedResponse(let message) = error else { return false }
                    return message.contains("\(offset)")
                }
            }
            #expect(try await transport.blobUploadState(blob).received == 0)
            #expect(try await transport.uploadBlob(blob, from: file, offset: 0) { _ in }.isComplete)
        }
    }
}

/// A transport that counts the blob downloads it is asked for and passes every request on.
final class CountingTransport: SyncTransport {
    private let base: any SyncTransport
    private let count = Mutex(0)

    init(_ base: any SyncTransport) { self.base = base }

    /// How many downloads were asked for so far.
    var downloads: Int { count.withLock { $0 } }

    func push(_ request: PushRequest) async throws -> PushResponse { try await base.push(request) }
    func pull(_ request: PullRequest) async throws -> PullResponse { try await base.pull(request) }
    func live(clientID: ClientID) -> AsyncThrowingStream<LiveMessage, any Error> { base.live(clientID: clientID) }
    func members(of scope: ScopeID) async throws -> ScopeMembersResponse { try await base.members(of: scope) }
    func grant(_ request: GrantRequest, in scope: ScopeID) async throws -> ScopeMembersResponse { try await base.grant(request, in: scope) }
    func revoke(_ user: String, in scope: ScopeID) async throws -> ScopeMembersResponse { try await base.revoke(user, in: scope) }
    func blobUploadState(_ blob: BlobReference) async throws -> BlobUploadState { try await base.blobUploadState(blob) }
    func uploadBlob(
        _ blob: BlobReference, from path: String, offset: Int64, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> BlobUploadState {
        try await base.uploadBlob(blob, from: path, offset: offset, progress: progress)
    }
    func downloadBlob(_ blob: BlobReference, to path: String, progress: @escaping @Sendable (Int64) -> Void) async throws {
        count.withLock { $0 += 1 }
        try await base.downloadBlob(blob, to: path, progress: progress)
    }
}
