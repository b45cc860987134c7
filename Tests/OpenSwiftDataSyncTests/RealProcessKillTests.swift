import Foundation
import GRDB
import OpenSwiftDataServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `osd-server` and two `SyncedNotes` clients as real processes on loopback, killed with
/// SIGKILL mid-push (clients) and mid-commit (server) several times, then restarted: the same
/// properties as the simulator's, checked against the real files.
@Suite("Real processes: osd-server and two clients killed with SIGKILL", .serialized)
struct RealProcessKillTests {
    private func count(_ database: String, _ sql: String) -> Int {
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: database, configuration: configuration) else { return 0 }
        defer { try? queue.close() }
        return (try? queue.read { db in try Int.fetchOne(db, sql: sql) }) ?? 0
    }

    @Test("clients killed mid-push and the server killed mid-commit, several times: every save reaches the server once, both clients converge")
    func killedClientsAndServer() async throws {
        let client = try RealProcesses.built("SyncedNotes")
        let folder = try ProcessFolder("osd-real-kill")
        defer { folder.remove() }
        let directory = folder.url
        let database = folder.path("server.sqlite")
        let savesPerRound = 150
        var saves = 0
        func launch(_ store: String, _ command: [String], port: Int) throws -> (Process, String) {
            try folder.launch(client, port: port, ["--store", folder.path(store), "--batch", "2"] + command)
        }
        let notes = "SELECT COUNT(*) FROM osd_records WHERE entity = 'Note' AND deleted = 0"
        var clientKills = 0
        var serverKills = 0
        // Rounds go on until clients were killed mid-push twice and the server mid-commit
        // twice (a loaded machine can miss a round's window: the pushes all land between two
        // looks at the server's file), at most 12. Each round first saves more notes offline in
        // both clients (nothing listens on port 1: all committed locally), so that every round
        // has pushes to interrupt.
        for round in 0..<12 where clientKills < 2 || serverKills < 2 {
            for store in ["a.sqlite", "b.sqlite"] {
                let (process, _) = try launch(store, ["add-many", "\(savesPerRound)"], port: 1)
                process.waitUntilExit()
            }
            saves += savesPerRound
            let killServer = serverKills < 2 && (clientKills >= 2 || round % 2 == 0)
            let server = try await RealProcesses.startServer(database: database, log: directory.appendingPathComponent("server\(round).txt").path)
            let a = try launch("a.sqlite", ["sync"], port: server.port).0
            let b = try launch("b.sqlite", ["sync"], port: server.port).0
            let before = count(database, notes)
            var killed = false
            for _ in 0..<20_000 where a.isRunning || b.isRunning {
                let now = count(database, notes)
                if now > before, now < 2 * saves {
                    if killServer {
                        kill(server.process.processIdentifier, SIGKILL)
                        serverKills += 1
                    } else {
                        let victim = round % 4 < 2 ? a : b
                        if victim.isRunning {
                            kill(victim.processIdentifier, SIGKILL)
                            clientKills += 1
                        }
                    }
                    killed = true
                    break
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            if !killed || !killServer {
                // The clients left running finish (or give up on a dead server) by themselves.
                a.waitUntilExit()
                b.waitUntilExit()
            } else {
                for process in [a, b] where process.isRunning { kill(process.processIdentifier, SIGKILL) }
                a.waitUntilExit()
                b.waitUntilExit()
            }
            // A server that survived the round dies with SIGKILL too (not counted: idle).
            if server.process.isRunning { kill(server.process.processIdentifier, SIGKILL) }
            server.process.waitUntilExit()
        }
        #expect(clientKills >= 1, "no client was caught mid-push")
        #expect(serverKills >= 1, "the server was never killed while clients pushed")

        // Heal: the server up, each client syncs until nothing is pending, twice round.
        let server = try await RealProcesses.startServer(database: database, log: directory.appendingPathComponent("server-final.txt").path)
        var lists: [String: [String]] = [:]
        for pass in 0..<2 {
            for store in ["a.sqlite", "b.sqlite"] {
                let (process, output) = try launch(store, ["list"], port: server.port)
                process.waitUntilExit()
                let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                if pass == 1 {
                    #expect(text.contains("synced; pending: 0"), "\(store): \(text.suffix(300))")
                    lists[store] = text.split(separator: "\n").filter { $0.hasPrefix("[ ] ") || $0.hasPrefix("[x] ") }.map(String.init)
                }
            }
        }
        kill(server.process.processIdentifier, SIGTERM)
        server.process.waitUntilExit()
        // Every save of both clients is on the server, once; both clients show the same notes.
        #expect(count(database, notes) == 2 * saves)
        #expect(
            count(
                database,
                "SELECT COUNT(*) FROM (SELECT client_id, mutation_id FROM osd_changes WHERE client_id IS NOT NULL GROUP BY client_id, mutation_id HAVING COUNT(DISTINCT txn) > 1)"
            ) == 0)
        #expect(count(database, "SELECT COUNT(DISTINCT client_id || '#' || mutation_id) FROM osd_changes WHERE client_id IS NOT NULL") == 2 * saves)
        #expect(lists["a.sqlite"]?.count == 2 * saves)
        #expect(lists["a.sqlite"] == lists["b.sqlite"])
    }

    @Test(
        "version 1 of an app killed with SIGKILL mid-push, then version 2 (one more property) on the same store: every save on the server once, the client id unchanged"
    )
    func appUpdatedAfterKillMidPush() async throws {
        let v1 = try RealProcesses.built("SyncedNotes")
        let v2 = try RealProcesses.built("SyncedNotesV2")
        let folder = try ProcessFolder("osd-real-update")
        defer { folder.remove() }
        let directory = folder.url
        let database = folder.path("server.sqlite")
        let store = folder.path("phone.sqlite")
        func launch(_ executable: URL, _ command: [String], port: Int) throws -> (Process, String) {
            try folder.launch(executable, port: port, ["--store", store, "--batch", "1"] + command)
        }
        func clientID(in output: String) -> String? {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").first { $0.hasPrefix("client: ") }.map { String($0.dropFirst(8)) }
        }
        let notes = "SELECT COUNT(*) FROM osd_records WHERE entity = 'Note' AND deleted = 0"
        let saves = 200
        let server = try await RealProcesses.startServer(database: database, log: directory.appendingPathComponent("server.txt").path)
        // Version 1 syncs once (its client id is known to the server), then saves offline.
        let (first, firstOutput) = try launch(v1, ["sync"], port: server.port)
        first.waitUntilExit()
        let v1Client = try #require(clientID(in: firstOutput))
        let (offline, _) = try launch(v1, ["add-many", "\(saves)"], port: 1)
        offline.waitUntilExit()

        // Back online, it pushes one save per request, and is killed in the middle (again, at
        // most five times, until a kill lands between the first and the last save).
        var killedMidPush = false
        for _ in 0..<5 where !killedMidPush {
            let before = count(database, notes)
            guard before < saves else { break }
            let (pushing, _) = try launch(v1, ["sync"], port: server.port)
            for _ in 0..<20_000 where pushing.isRunning {
                let now = count(database, notes)
                if now > before, now < saves {
                    kill(pushing.processIdentifier, SIGKILL)
                    killedMidPush = true
                    break
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            if pushing.isRunning { kill(pushing.processIdentifier, SIGKILL) }
            pushing.waitUntilExit()
        }
        #expect(killedMidPush, "version 1 was never caught mid-push")

        // The update: version 2 opens the same store (a migration adds a column) and syncs.
        let (updated, updatedOutput) = try launch(v2, ["list"], port: server.port)
        updated.waitUntilExit()
        let text = (try? String(contentsOfFile: updatedOutput, encoding: .utf8)) ?? ""
        #expect(clientID(in: updatedOutput) == v1Client, "\(text.prefix(300))")
        #expect(text.contains("synced; pending: 0"), "\(text.suffix(300))")
        #expect(text.split(separator: "\n").filter { $0.hasSuffix("priority 0") }.count == saves)
        kill(server.process.processIdentifier, SIGTERM)
        server.process.waitUntilExit()

        // Every save of version 1 is on the server once, under the one client id.
        #expect(count(database, notes) == saves)
        #expect(count(database, "SELECT COUNT(DISTINCT client_id) FROM osd_changes WHERE client_id IS NOT NULL") == 1)
        #expect(
            count(
                database,
                "SELECT COUNT(*) FROM (SELECT client_id, mutation_id FROM osd_changes WHERE client_id IS NOT NULL GROUP BY client_id, mutation_id HAVING COUNT(DISTINCT txn) > 1)"
            ) == 0)
        #expect(count(database, "SELECT COUNT(DISTINCT client_id || '#' || mutation_id) FROM osd_changes WHERE client_id IS NOT NULL") == saves)
    }
}
