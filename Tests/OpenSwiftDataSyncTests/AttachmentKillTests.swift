import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real `osd-server` and `SyncedAttachments` clients as processes on loopback: a client
/// SIGKILLed in the middle of a 100 MB upload resumes it from what the server holds.
@Suite("Real processes: a 100 MB attachment upload killed with SIGKILL and resumed", .serialized)
struct AttachmentKillTests {
    /// `count` bytes of a fixed pseudo-random sequence.
    private func bytes(_ count: Int, seed: UInt64) -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15 &* (seed | 1)
            let words = buffer.bindMemory(to: UInt64.self)
            for index in words.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[index] = state
            }
        }
        return data
    }

    /// The bytes of the server's unfinished uploads, 0 when there are none.
    private func uploaded(_ folder: String) -> Int {
        let uploads = folder + "/uploads"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: uploads)) ?? []
        return names.reduce(0) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: uploads + "/" + name)[.size]) as? NSNumber ?? 0).intValue
        }
    }

    @Test("killed mid-upload, the client resumes from the server's offset; a second device gets the bytes identical")
    func killedMidUpload() async throws {
        let client = try RealProcesses.built("SyncedAttachments")
        let folder = try ProcessFolder("osd-attachment-kill")
        defer { folder.remove() }
        let directory = folder.url
        let size = 100 * 1024 * 1024
        let database = folder.path("server.sqlite")
        func launch(_ store: String, _ command: [String], port: Int) throws -> (Process, String) {
            try folder.launch(client, port: port, ["--store", folder.path(store)] + command)
        }
        func text(_ path: String) -> String { folder.text(path) }

        let server = try await RealProcesses.startServer(database: database, log: directory.appendingPathComponent("server.txt").path)
        defer { if server.process.isRunning { kill(server.process.processIdentifier, SIGKILL) } }
        // Each attempt sends a new film from a new device, saved offline first (nothing listens
        // on port 1: the save commits, the upload waits), then synced and killed once the server
        // holds part of the upload. A loaded machine may let an upload finish between two looks:
        // the next attempt tries again with other bytes.
        var original = directory.appendingPathComponent("film.bin")
        var store = ""
        var held = 0
        var seen: [Int] = []
        for attempt in 1...5 where held == 0 {
            store = "a\(attempt).sqlite"
            original = directory.appendingPathComponent("film\(attempt).bin")
            try bytes(size, seed: UInt64(attempt)).write(to: original)
            let (saving, _) = try launch(store, ["send", "our", "film", "--file", original.path], port: 1)
            saving.waitUntilExit()
            let (uploading, _) = try launch(store, ["sync"], port: server.port)
            for _ in 0..<120_000 where uploading.isRunning {
                let now = uploaded(database + ".blobs")
                if now > 0 && now < size {
                    kill(uploading.processIdentifier, SIGKILL)
                    break
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            uploading.waitUntilExit()
            seen.append(uploaded(database + ".blobs"))
            if uploading.terminationReason == .uncaughtSignal { held = uploaded(database + ".blobs") }
        }
        try #require(held > 0, "the client was never caught mid-upload; the server held \(seen) after each attempt")

        let (resuming, resumed) = try launch(store, ["sync"], port: server.port)
        resuming.waitUntilExit()
        let output = text(resumed)
        let start = try #require(output.split(separator: "\n").first { $0.hasPrefix("attachment: upload of") && $0.contains("from byte") })
        let offset = Int(start.split(separator: " ").dropFirst(6).first ?? "") ?? -1
        #expect(offset >= held, "the upload resumed from what the server held (\(held) bytes), not from 0: \(start)")
        #expect(offset < size)
        #expect(output.contains("attachments: 0 to upload"), "\(output)")

        let (receiving, received) = try launch("b.sqlite", ["sync"], port: server.port)
        receiving.waitUntilExit()
        #expect(text(received).contains("attachments: 0 to upload, 0 to download"), "\(text(received))")
        let copy = directory.appendingPathComponent("copy.bin")
        let (exporting, exported) = try launch("b.sqlite", ["export", original.lastPathComponent, "--to", copy.path], port: server.port)
        exporting.waitUntilExit()
        #expect(text(exported).contains("exported: \(size) bytes"), "\(text(exported))")
        #expect(try Data(contentsOf: copy) == Data(contentsOf: original), "the bytes arrived identical")
    }
}
