import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

#if canImport(Glibc)
import Glibc
#endif

/// The model osd-attachment-writer saves (the same declaration).
@Model
final class CrashPhoto {
    var slot: Int
    @Attribute(.externalStorage) var image: Data?
    @Attribute(.externalStorage, .preserveValueOnDeletion) var thumb: Data?

    init(slot: Int, image: Data?, thumb: Data?) {
        self.slot = slot
        self.image = image
        self.thumb = thumb
    }
}

@Suite("A writer of .externalStorage values killed with SIGKILL mid-save")
struct AttachmentCrashTests {
    /// The built writer, next to the test bundle.
    private func writer() throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("osd-attachment-writer")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = root.appendingPathComponent(".build/debug/osd-attachment-writer")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw SwiftDataError(.storeFailure, "osd-attachment-writer is not built (swift build --build-tests builds it)")
        }
        return candidate
    }

    /// What the store and its directory hold: the references of the rows, those of the
    /// history, the files with their sizes, and the temporary files.
    private func inspect(_ url: URL) throws -> (rows: [AttachmentReference], history: Set<String>, files: [String: UInt64], temporaries: Int) {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        let (rows, history) = try queue.read { db -> ([AttachmentReference], Set<String>) in
            let values = try Data.fetchAll(
                db, sql: "SELECT image FROM CrashPhoto WHERE image IS NOT NULL UNION ALL SELECT thumb FROM CrashPhoto WHERE thumb IS NOT NULL")
            var history: Set<String> = []
            for entry in try Data.fetchAll(db, sql: "SELECT changes FROM osd_history") {
                history.formUnion(entry.withUnsafeBytes { AttachmentReference.occurrences(in: $0) })
            }
            return (values.compactMap { AttachmentReference(stored: $0) }, history)
        }
        let directory = AttachmentDirectory(storePath: url.path)
        let (names, temporaries) = directory.contents()
        var files: [String: UInt64] = [:]
        for name in names {
            let size = (try? FileManager.default.attributesOfItem(atPath: directory.filePath(hex: name))[.size] as? NSNumber)?.uint64Value
            files[name] = size ?? 0
        }
        return (rows, history, files, temporaries.count)
    }

    @Test("after each kill, reopening leaves no row naming a missing file and no file nothing names")
    func killedWriter() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["OSD_ATTACHMENT_KILLS"] ?? "") ?? 150
        let binary = try writer()
        let directory = try TemporaryDirectory()
        let url = directory.file("crash.store")
        var random = SeededGenerator(seed: 7_919)
        let started = Date()
        var externalSeen = 0
        var leftovers = 0
        for round in 0..<kills {
            let process = Process()
            process.executableURL = binary
            process.arguments = [url.path, String(round + 1)]
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Startup (opening, the sweep) takes some of the time; most kills land in a save.
            try await Task.sleep(for: .milliseconds(Int.random(in: 40...160, using: &random)))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            // What the kill left before the sweep: a temporary file, or a file no row names.
            let before = try inspect(url)
            let namedBefore = Set(before.rows.map(\.hex)).union(before.history)
            if before.temporaries > 0 || before.files.keys.contains(where: { !namedBefore.contains($0) }) { leftovers += 1 }
            // Reopening sweeps; every value then reads back.
            do {
                let container = try ModelContainer(for: CrashPhoto.self, configurations: ModelConfiguration(url: url))
                let photos = try ModelContext(container).fetch(FetchDescriptor<CrashPhoto>())
                for photo in photos { _ = (photo.image?.count, photo.thumb?.count) }
            }
            let state = try inspect(url)
            externalSeen += state.rows.count
            for reference in state.rows {
                #expect(state.files[reference.hex] == reference.size, "round \(round): a row names \(reference.hex), missing or of the wrong size")
            }
            let named = Set(state.rows.map(\.hex)).union(state.history)
            for file in state.files.keys where !named.contains(file) {
                Issue.record("round \(round): \(file) is named by no row and no history entry")
            }
            #expect(state.temporaries == 0, "round \(round): temporary files were left")
        }
        #expect(externalSeen > 0, "the writer saved values in files")
        print(
            "AttachmentCrashTests: \(kills) kills in \(String(format: "%.1f", Date().timeIntervalSince(started))) s; \(leftovers) left files the sweep removed"
        )
    }
}
