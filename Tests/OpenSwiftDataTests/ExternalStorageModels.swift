import Foundation
import GRDB
import OpenSwiftDataTestSupport

@testable import OpenSwiftData

/// A model whose `Data` values may live in files beside the store; two unique attributes, so
/// that a save can be made to fail after writing a file.
@Model
final class ExternalPhoto {
    @Attribute(.unique) var name: String
    @Attribute(.unique) var code: Int
    @Attribute(.externalStorage) var image: Data?
    @Attribute(.externalStorage, .preserveValueOnDeletion) var original: Data = Data()

    init(name: String, code: Int, image: Data? = nil) {
        self.name = name
        self.code = code
        self.image = image
    }
}

/// A synced model with an external-storage value.
@Model
final class SyncedPhoto {
    var title: String
    @Attribute(.externalStorage) var image: Data?

    init(title: String, image: Data?) {
        self.title = title
        self.image = image
    }
}

/// Version 1 of a document whose body may live in a file.
enum ExternalDocsV1 {
    @Model final class ExternalDoc {
        var name: String
        var note: String = ""
        @Attribute(.externalStorage) var body: Data?

        init(name: String, body: Data?) {
            self.name = name
            self.body = body
        }
    }
}

/// Version 2: `note` removed, which rebuilds the table.
enum ExternalDocsV2 {
    @Model final class ExternalDoc {
        var name: String
        @Attribute(.externalStorage) var body: Data?

        init(name: String, body: Data?) {
            self.name = name
            self.body = body
        }
    }
}

/// `count` bytes that differ with `seed`.
func externalBytes(_ count: Int, seed: Int = 1) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ ($0 >> 8)) })
}

/// The digests of the files beside the store at `url`, sorted.
func attachmentFiles(of url: URL) -> [String] {
    AttachmentDirectory(storePath: url.path).contents().files.sorted()
}

/// Every regular file under the store's attachments directory (temporary ones included), but
/// its lock file.
func everyAttachmentEntry(of url: URL) -> [String] {
    let root = url.path + AttachmentDirectory.suffix
    guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
    var found: [String] = []
    while let name = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        guard name != AttachmentDirectory.lockName else { continue }
        if FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue { found.append(name) }
    }
    return found.sorted()
}

/// The stored values of a BLOB column, read through a connection of its own.
func storedBlobs(_ url: URL, table: String, column: String) throws -> [Data?] {
    var configuration = Configuration()
    configuration.readonly = true
    let queue = try DatabaseQueue(path: url.path, configuration: configuration)
    defer { try? queue.close() }
    return try queue.read { db in
        try Row.fetchAll(db, sql: "SELECT \(quoted(column)) FROM \(quoted(table)) ORDER BY _pk").map { $0[0] as Data? }
    }
}

/// Version 1 of an album whose pictures may live in files, for migration stages.
enum AlbumV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [Picture.self] }

    @Model final class Picture {
        var name: String
        @Attribute(.externalStorage) var image: Data?

        init(name: String, image: Data?) {
            self.name = name
            self.image = image
        }
    }
}

/// Version 2: a caption added.
enum AlbumV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Picture.self] }

    @Model final class Picture {
        var name: String
        var caption: String = ""
        @Attribute(.externalStorage) var image: Data?

        init(name: String, image: Data?) {
            self.name = name
            self.image = image
        }
    }
}

/// Thrown by the failing stage.
struct AlbumStageFailure: Error {}

/// A stage whose `willMigrate` deletes every picture and saves, then fails.
enum FailingAlbumPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [AlbumV1.self, AlbumV2.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: AlbumV1.self, toVersion: AlbumV2.self,
                willMigrate: { context in
                    try context.delete(model: AlbumV1.Picture.self)
                    try context.save()
                    throw AlbumStageFailure()
                }, didMigrate: nil)
        ]
    }
}

/// The same stage, completing.
enum AlbumPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [AlbumV1.self, AlbumV2.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: AlbumV1.self, toVersion: AlbumV2.self,
                willMigrate: { context in
                    try context.delete(model: AlbumV1.Picture.self)
                    try context.save()
                }, didMigrate: nil)
        ]
    }
}
