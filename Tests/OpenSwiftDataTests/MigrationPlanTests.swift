import Foundation
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

enum NotesV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [Memo.self] }

    @Model final class Memo {
        var text: String

        init(text: String) {
            self.text = text
        }
    }
}

enum NotesV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Memo.self] }

    @Model final class Memo {
        var text: String
        var pinned: Bool = false

        init(text: String) {
            self.text = text
        }
    }
}

enum NotesV3: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(3, 0, 0) }
    static var models: [any PersistentModel.Type] { [Memo.self] }

    @Model final class Memo {
        var text: String
        var pinned: Bool = false
        var length: Int = 0

        init(text: String) {
            self.text = text
        }
    }
}

/// Fills in `length` for every memo.
func backfillLengths(_ context: ModelContext) throws {
    for memo in try context.fetch(FetchDescriptor<NotesV3.Memo>()) { memo.length = memo.text.count }
}

/// V1 → V2 inferred, V2 → V3 with a stage that backfills data.
enum NotesPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NotesV1.self, NotesV2.self, NotesV3.self] }
    static var stages: [MigrationStage] {
        [
            .lightweight(fromVersion: NotesV1.self, toVersion: NotesV2.self),
            .custom(
                fromVersion: NotesV2.self, toVersion: NotesV3.self,
                willMigrate: { context in
                    // The old version's models: pin the long memos before the tables change.
                    for memo in try context.fetch(FetchDescriptor<NotesV2.Memo>()) where memo.text.count > 5 { memo.pinned = true }
                }, didMigrate: backfillLengths),
        ]
    }
}

struct StageFailure: Error {}

/// The same plan, with a backfill that fails halfway.
enum FailingNotesPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { NotesPlan.schemas }
    static var stages: [MigrationStage] {
        [
            .lightweight(fromVersion: NotesV1.self, toVersion: NotesV2.self),
            .custom(
                fromVersion: NotesV2.self, toVersion: NotesV3.self, willMigrate: nil,
                didMigrate: { context in
                    try backfillLengths(context)
                    try context.save()
                    throw StageFailure()
                }),
        ]
    }
}

/// The same plan, with a backfill that saves part of its work and then hangs, so that a test can
/// kill the process in the middle of the stage.
enum HangingNotesPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { NotesPlan.schemas }
    static var stages: [MigrationStage] {
        [
            .lightweight(fromVersion: NotesV1.self, toVersion: NotesV2.self),
            .custom(
                fromVersion: NotesV2.self, toVersion: NotesV3.self, willMigrate: nil,
                didMigrate: { context in
                    for memo in try context.fetch(FetchDescriptor<NotesV3.Memo>()) { memo.length = -1 }
                    try context.save()
                    if let ready = ProcessInfo.processInfo.environment["OSD_MIGRATION_CHILD_READY"] {
                        _ = FileManager.default.createFile(atPath: ready, contents: Data())
                    }
                    while true { sleep(1) }
                }),
        ]
    }
}

/// V1 with `text` made optional: the table is rebuilt, so rows are copied with progress.
enum NotesLoose: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Memo.self] }

    @Model final class Memo {
        var text: String?

        init(text: String?) {
            self.text = text
        }
    }
}

enum LoosePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NotesV1.self, NotesLoose.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: NotesV1.self, toVersion: NotesLoose.self)] }
}

@Suite("Migration plans")
struct MigrationPlanTests {
    private func makeV1Store(_ url: URL) throws {
        let container = try ModelContainer(for: Schema(versionedSchema: NotesV1.self), configurations: [ModelConfiguration(url: url)])
        let context = ModelContext(container)
        for text in ["short", "a longer memo", "hi"] { context.insert(NotesV1.Memo(text: text)) }
        try context.save()
    }

    private func memos(_ url: URL) throws -> [(String, Bool, Int)] {
        let container = try ModelContainer(for: Schema(versionedSchema: NotesV3.self), configurations: [ModelConfiguration(url: url)])
        return try ModelContext(container).fetch(FetchDescriptor<NotesV3.Memo>(sortBy: [SortDescriptor(\.text)])).map {
            ($0.text, $0.pinned, $0.length)
        }
    }

    @Test("a store two versions old runs every stage in order: inferred, then custom with both contexts")
    func multiStage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("notes.store")
        try makeV1Store(url)
        _ = try ModelContainer(
            for: Schema(versionedSchema: NotesV3.self), migrationPlan: NotesPlan.self, configurations: [ModelConfiguration(url: url)])
        let result = try memos(url)
        #expect(result.map(\.0) == ["a longer memo", "hi", "short"])
        #expect(result.map(\.1) == [true, false, false])
        #expect(result.map(\.2) == [13, 2, 5])
        #expect(try StoreFile.metadata(at: url.path)["schemaVersion"] == "3.0.0")
        #expect(!FileManager.default.fileExists(atPath: url.path + "-stage-backup"))
    }

    @Test("a stage that copies rows reports rows done of total, naming its stage")
    func stageProgress() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("notes.store")
        try makeV1Store(url)
        let log = ProgressLog()
        var configuration = ModelConfiguration(url: url)
        configuration.migrationOptions.progress = { log.append($0) }
        let container = try ModelContainer(
            for: Schema(versionedSchema: NotesLoose.self), migrationPlan: LoosePlan.self, configurations: [configuration])
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<NotesLoose.Memo>()) == 3)
        let last = try #require(log.all.last)
        #expect(last.stage == "1.0.0 -> 2.0.0" && last.table == "Memo")
        #expect(last.rowsDone == 3 && last.rowsTotal == 3)
        #expect(log.all.allSatisfy { $0.stage == "1.0.0 -> 2.0.0" })
    }

    @Test("a stage that throws leaves the store at the last completed version; the next open resumes from there")
    func failedStage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("notes.store")
        try makeV1Store(url)
        #expect(throws: SwiftDataError.loadIssueModelContainer) {
            try ModelContainer(
                for: Schema(versionedSchema: NotesV3.self), migrationPlan: FailingNotesPlan.self, configurations: [ModelConfiguration(url: url)])
        }
        let metadata = try StoreFile.metadata(at: url.path)
        #expect(metadata["schemaVersion"] == "2.0.0")
        #expect(metadata[MigrationRunner.markerKey] == nil)
        let v2 = try ModelContainer(for: Schema(versionedSchema: NotesV2.self), configurations: [ModelConfiguration(url: url)])
        #expect(try ModelContext(v2).fetchCount(FetchDescriptor<NotesV2.Memo>()) == 3)

        _ = try ModelContainer(
            for: Schema(versionedSchema: NotesV3.self), migrationPlan: NotesPlan.self, configurations: [ModelConfiguration(url: url)])
        #expect(try memos(url).map(\.2) == [13, 2, 5])
    }

    @Test("a store written by a newer schema is refused, untouched")
    func newerStoreRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("notes.store")
        try makeV1Store(url)
        _ = try ModelContainer(
            for: Schema(versionedSchema: NotesV3.self), migrationPlan: NotesPlan.self, configurations: [ModelConfiguration(url: url)])
        #expect(throws: SwiftDataError.backwardMigration) {
            try ModelContainer(
                for: Schema(versionedSchema: NotesV2.self), migrationPlan: NotesPlan.self, configurations: [ModelConfiguration(url: url)])
        }
        #expect(throws: SwiftDataError.backwardMigration) {
            try ModelContainer(for: Schema(versionedSchema: NotesV2.self), configurations: [ModelConfiguration(url: url)])
        }
        #expect(try memos(url).count == 3)
    }

    /// The child side of `killedMidStage`: migrates with the hanging plan until it is killed.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["OSD_MIGRATION_CHILD_STORE"] != nil))
    func migrationChild() throws {
        let path = try #require(ProcessInfo.processInfo.environment["OSD_MIGRATION_CHILD_STORE"])
        _ = try ModelContainer(
            for: Schema(versionedSchema: NotesV3.self), migrationPlan: HangingNotesPlan.self,
            configurations: [ModelConfiguration(url: URL(fileURLWithPath: path))])
        Issue.record("the hanging stage returned")
    }

    @Test(
        "a process killed in the middle of a stage leaves a store that the next open puts back and migrates",
        .enabled(if: ProcessInfo.processInfo.environment["OSD_MIGRATION_CHILD_STORE"] == nil))
    func killedMidStage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("notes.store")
        let ready = directory.file("ready").path
        try makeV1Store(url)

        let child = Process()
        child.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0])
        child.arguments = ["--testing-library", "swift-testing", "--filter", "migrationChild"]
        var environment = ProcessInfo.processInfo.environment
        environment["OSD_MIGRATION_CHILD_STORE"] = url.path
        environment["OSD_MIGRATION_CHILD_READY"] = ready
        child.environment = environment
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        let deadline = Date().addingTimeInterval(120)
        while !FileManager.default.fileExists(atPath: ready), child.isRunning, Date() < deadline { usleep(20_000) }
        #expect(FileManager.default.fileExists(atPath: ready), "the child reached the middle of the stage")
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()

        // The child died with the new tables and part of the backfill written.
        #expect(try StoreFile.metadata(at: url.path)[MigrationRunner.markerKey] != nil)
        _ = try ModelContainer(
            for: Schema(versionedSchema: NotesV3.self), migrationPlan: NotesPlan.self, configurations: [ModelConfiguration(url: url)])
        let result = try memos(url)
        #expect(result.map(\.2) == [13, 2, 5], "no trace of the killed stage's -1 lengths")
        #expect(result.map(\.1) == [true, false, false])
        #expect(try StoreFile.metadata(at: url.path)[MigrationRunner.markerKey] == nil)
    }
}

@Suite("Migration plans: review regressions")
struct MigrationPlanRegressionTests {
    @Test("a container opened with model types and a plan takes the version the plan gives them, and runs the stages")
    func versionFromPlan() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("notes.store")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: NotesV1.self), configurations: [ModelConfiguration(url: url)])
            let context = ModelContext(container)
            context.insert(NotesV1.Memo(text: "a longer memo"))
            try context.save()
        }
        let container = try ModelContainer(for: NotesV3.Memo.self, migrationPlan: NotesPlan.self, configurations: ModelConfiguration(url: url))
        #expect(container.schema.version == Schema.Version(3, 0, 0))
        #expect(try StoreFile.metadata(at: url.path)["schemaVersion"] == "3.0.0")
        let memo = try #require(try ModelContext(container).fetch(FetchDescriptor<NotesV3.Memo>()).first)
        #expect(memo.length == 13 && memo.pinned)
    }

    @Test("a store left in the middle of a stage is put back even when opened without the plan")
    func markerHonouredWithoutPlan() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("notes.store")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: NotesV2.self), configurations: [ModelConfiguration(url: url)])
            let context = ModelContext(container)
            context.insert(NotesV2.Memo(text: "kept"))
            try context.save()
        }
        // What a crash leaves: the copy, the marker, and work the stage did after the copy.
        try StoreFile.copy(from: url.path, to: url.path + StoreFile.stageBackupSuffix)
        try StoreFile.setMetadata([StoreFile.stageMarkerKey: "2.0.0 -> 3.0.0"], at: url.path)
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: NotesV2.self), configurations: [ModelConfiguration(url: url)])
            #expect(try ModelContext(container).fetch(FetchDescriptor<NotesV2.Memo>()).map(\.text) == ["kept"])
        }
        #expect(try StoreFile.metadata(at: url.path)[StoreFile.stageMarkerKey] == nil)
        #expect(!FileManager.default.fileExists(atPath: url.path + StoreFile.stageBackupSuffix))
    }
}

/// Version 1 of the contacts with `name` both kept and copied into a renamed property.
enum ContactsAlias {
    @Model final class Contact {
        var name: String
        @Attribute(originalName: "name") var alias: String
        var age: Int
        var nickname: String?
        var group: Group?

        init(name: String, alias: String, age: Int) {
            self.name = name
            self.alias = alias
            self.age = age
        }
    }

    @Model final class Group {
        var title: String
        @Relationship(inverse: \Contact.group) var members: [Contact] = []

        init(title: String) {
            self.title = title
        }
    }
}

@Suite("Lightweight migrations: renames")
struct MigrationRenameTests {
    @Test("a rename that would leave a kept property without its column is refused, naming it")
    func renameCollision() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("contacts.store")
        do {
            let container = try ModelContainer(for: ContactsV1.Contact.self, ContactsV1.Group.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(ContactsV1.Contact(name: "Ada", age: 36))
            try context.save()
        }
        do {
            _ = try ModelContainer(for: ContactsAlias.Contact.self, ContactsAlias.Group.self, configurations: ModelConfiguration(url: url))
            Issue.record("the collision must be refused")
        } catch let error as SwiftDataError {
            #expect(error == .incompatibleSchema)
            #expect(error.propertyName == "name")
        }
    }
}
