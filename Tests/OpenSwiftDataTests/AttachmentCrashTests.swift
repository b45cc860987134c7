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

/// The writer's count of committed saves (the same declaration).
@Model
final class CrashProgress {
    var saves: Int

    init(saves: Int) {
        self.saves = saves
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
    private func inspect(
        _ url: URL
    ) throws -> (
        rows: [AttachmentReference], history: Set<String>, files: [String: UInt64], temporaries: Int, saves: Int
    ) {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        let (rows, history, saves) = try queue.read { db -> ([AttachmentReference], Set<String>, Int) in
            let values = try Data.fetchAll(
                db, sql: "SELECT image FROM CrashPhoto WHERE image IS NOT NULL UNION ALL SELECT thumb FROM CrashPhoto WHERE thumb IS NOT NULL")
            var history: Set<String> = []
            for entry in try Data.fetchAll(db, sql: "SELECT changes FROM osd_history") {
                history.formUnion(entry.withUnsafeBytes { AttachmentReference.occurrences(in: $0) })
            }
            let saves = try db.tableExists("CrashProgress") ? try Int.fetchOne(db, sql: "SELECT MAX(saves) FROM CrashProgress") : nil
            return (values.compactMap { AttachmentReference(stored: $0) }, history, saves ?? 0)
        }
        let directory = AttachmentDirectory(storePath: url.path)
        let (names, temporaries) = directory.contents()
        var files: [String: UInt64] = [:]
        for name in names {
            let size = (try? FileManager.default.attributesOfItem(atPath: directory.filePath(hex: name))[.size] as? NSNumber)?.uint64Value
            files[name] = size ?? 0
        }
        return (rows, history, files, temporaries.count, saves)
    }

    /// The last progress line of the writer: whether it was in a save (`begin N` without its
    /// `end N`) and N.
    private func lastProgress(_ path: String) -> (inSave: Bool, save: Int)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n").reversed() {
            let fields = line.split(separator: " ")
            guard fields.count == 2, let save = Int(fields[1]) else { continue }
            if fields[0] == "begin" { return (true, save) }
            if fields[0] == "end" { return (false, save) }
        }
        return nil
    }

    @Test("after each kill, reopening leaves no row naming a missing file and no file nothing names; kills land in saves with files written")
    func killedWriter() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["OSD_ATTACHMENT_KILLS"] ?? "") ?? 150
        let binary = try writer()
        let directory = try TemporaryDirectory()
        let url = directory.file("crash.store")
        let progress = directory.file("progress").path
        var random = SeededGenerator(seed: 7_919)
        let started = Date()
        var externalSeen = 0
        var leftovers = 0
        // Kills that landed in a save that had not committed, and those of them after the save
        // had written a file (a temporary one, or one no committed row names).
        var inSave = 0
        var midSaveWithFiles = 0
        // At least `kills` rounds, and more (up to three times as many) until one kill in ten
        // has landed in a save after it wrote a file: on a loaded machine the kills' timing
        // shifts, and the rounds go on until the interesting ones happened.
        var round = 0
        while round < kills || (midSaveWithFiles < max(1, kills / 10) && round < kills * 3) {
            defer { round += 1 }
            #expect(FileManager.default.createFile(atPath: progress, contents: nil))
            let process = Process()
            process.executableURL = binary
            process.arguments = [url.path, String(round + 1), progress]
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Once a first save has returned (opening and its sweep are behind), the kill comes
            // after a random part of the saves that follow.
            let deadline = Date().addingTimeInterval(30)
            while lastProgress(progress)?.inSave != false, Date() < deadline, process.isRunning {
                try await Task.sleep(for: .milliseconds(2))
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...40, using: &random)))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "round \(round): the writer stopped before the kill")
            // What the kill left before the sweep: a temporary file, or a file no row names.
            let before = try inspect(url)
            let namedBefore = Set(before.rows.map(\.hex)).union(before.history)
            let leftFiles = before.temporaries > 0 || before.files.keys.contains(where: { !namedBefore.contains($0) })
            if leftFiles { leftovers += 1 }
            if let last = lastProgress(progress), last.inSave, before.saves < last.save {
                inSave += 1
                if leftFiles { midSaveWithFiles += 1 }
            }
            // Reopening sweeps; every value then reads back.
            do {
                let container = try ModelContainer(for: CrashPhoto.self, CrashProgress.self, configurations: ModelConfiguration(url: url))
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
        // Most kills land in a save; at least one in ten after it wrote a file.
        #expect(midSaveWithFiles >= max(1, kills / 10), "only \(midSaveWithFiles) of \(round) kills landed in a save after it wrote a file")
        print(
            "AttachmentCrashTests: \(round) kills in \(String(format: "%.1f", Date().timeIntervalSince(started))) s; \(inSave) in a save that had not committed, \(midSaveWithFiles) of them after writing a file; \(leftovers) left files the sweep removed"
        )
    }
}
