import Foundation
import GRDB
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Sync engine in a real client process killed with SIGKILL")
struct ProcessKillTests {
    /// The built `SyncedNotes` example, next to the test bundle.
    private func executable() throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("SyncedNotes")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = root.appendingPathComponent(".build/debug/SyncedNotes")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw SyncServiceError(500, .internalError, "SyncedNotes is not built (swift build --build-tests builds it)")
        }
        return candidate
    }

    /// Counts in the server's database, through a read-only connection.
    private func serverCounts(_ path: String) throws -> (records: Int, changes: Int) {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records") ?? 0, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_changes") ?? 0)
        }
    }

    @Test("a client killed with SIGKILL while pushing, several times, then restarted: every save is on the server exactly once, in order")
    func killedMidPush() async throws {
        let binary = try executable()
        try await LoopbackServer.run { server in
            let token = try await server.server.verifier.mint(user: "alice")
            let store = server.directory.path("client.sqlite")
            let database = server.directory.path("server.sqlite")
            let saves = 400
            func launch(_ command: [String], output: String, serverURL: String? = nil) throws -> Process {
                _ = FileManager.default.createFile(atPath: output, contents: nil)
                let process = Process()
                process.executableURL = binary
                process.arguments =
                    ["--server", serverURL ?? server.url.absoluteString, "--user", "alice", "--token", token, "--store", store, "--batch", "3"]
                    + command
                process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
                process.standardError = FileHandle.nullDevice
                try RealProcesses.start(process)
                return process
            }
            // The saves are made offline (nothing listens on port 1), all committed locally.
            let offline = try launch(["add-many", "\(saves)"], output: server.directory.path("offline.txt"), serverURL: "http://127.0.0.1:1")
            offline.waitUntilExit()
            #expect((try? String(contentsOfFile: server.directory.path("offline.txt"), encoding: .utf8))?.contains("saved: \(saves)") == true)
            #expect(try serverCounts(database).records == 0)
            var killedMidPush = 0
            var lastCount = 0
            for round in 0..<3 {
                let process = try launch(["sync"], output: server.directory.path("out\(round).txt"))
                // Kill it once the server has received more of its saves, while it still runs.
                var killed = false
                for _ in 0..<20_000 where process.isRunning {
                    let count = (try? serverCounts(database).records) ?? 0
                    if count > lastCount, count < saves {
                        kill(process.processIdentifier, SIGKILL)
                        killed = true
                        lastCount = count
                        break
                    }
                    try await Task.sleep(for: .milliseconds(2))
                }
                process.waitUntilExit()
                if killed, process.terminationReason == .uncaughtSignal { killedMidPush += 1 }
            }
            #expect(killedMidPush >= 1, "the client was never caught mid-push")
            let final = try launch(["sync"], output: server.directory.path("final.txt"))
            final.waitUntilExit()
            #expect(final.terminationStatus == 0)
            let output = (try? String(contentsOfFile: server.directory.path("final.txt"), encoding: .utf8)) ?? ""
            #expect(output.contains("synced; pending: 0"), "\(output)")

            var configuration = Configuration()
            configuration.readonly = true
            let queue = try DatabaseQueue(path: database, configuration: configuration)
            let (records, perMutation, lastIDs) = try await queue.read { db in
                (
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records WHERE entity = 'Note' AND deleted = 0") ?? 0,
                    try Int.fetchAll(db, sql: "SELECT COUNT(*) FROM osd_changes WHERE client_id IS NOT NULL GROUP BY client_id, mutation_id"),
                    try Int64.fetchAll(db, sql: "SELECT last_mutation_id FROM osd_clients")
                )
            }
            #expect(records == saves)
            // Exactly once: each mutation left one change on the server, and the client's ids
            // ran 1…saves without renumbering.
            #expect(perMutation.count == saves)
            #expect(perMutation.allSatisfy { $0 == 1 })
            #expect(lastIDs == [Int64(saves)])
        }
    }
}
