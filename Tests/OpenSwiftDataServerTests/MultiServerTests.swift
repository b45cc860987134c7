import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import PostgresNIO
import Synchronization
import Testing

/// Several servers on one PostgreSQL database: what only a shared storage does.
@Suite("Several servers, one PostgreSQL database", .serialized)
struct MultiServerTests {
    /// Runs `body` with two servers (HTTP on loopback) on one fresh schema.
    private func withTwoServers<T>(_ body: (LiveServer, LiveServer) async throws -> T) async throws -> T {
        let configuration = try PostgresTestDatabase.freshConfiguration(poolSize: 8)
        let directory = try TemporaryDirectory()
        let a = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        let b = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        await a.waitUntilListening()
        await b.waitUntilListening()
        return try await LiveServer.run(storage: .postgres(a), directory: directory) { serverA in
            try await LiveServer.run(storage: .postgres(b), directory: directory) { serverB in
                try await body(serverA, serverB)
            }
        }
    }

    @Test("servers starting at once migrate once and share one epoch", arguments: Backend.postgresOnly)
    func concurrentMigration(_ backend: Backend) async throws {
        let configuration = try PostgresTestDatabase.freshConfiguration(poolSize: 2)
        let storages = try await withThrowingTaskGroup(of: PostgresSyncStorage.self) { group in
            for _ in 0..<6 {
                group.addTask { try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger) }
            }
            return try await group.reduce(into: [PostgresSyncStorage]()) { $0.append($1) }
        }
        var epochs: Set<String> = []
        for storage in storages {
            epochs.insert(try await storage.metadata().epoch)
            try await storage.close()
        }
        #expect(epochs.count == 1)
        let migrations = try await PostgresTestDatabase.withProbe(configuration) { connection in
            try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT COUNT(*) FROM \(configuration.schema).osd_migrations"), logger: PostgresTestDatabase.quietLogger
            ).collect().first?.decode(Int64.self)
        }
        // One row per migration (v1, v2's reference index, v3's client activity, v4's grant
        // roles, v5's blobs, v6's blob chunks), each applied once.
        #expect(migrations == 6)
    }

    @Test("a server starting while another migrates waits for it past its statement timeout, then starts", arguments: Backend.postgresOnly)
    func migrationWaitsPastStatementTimeout(_ backend: Backend) async throws {
        var timed = try PostgresTestDatabase.freshConfiguration(poolSize: 2)
        timed.statementTimeoutMilliseconds = 200
        let configuration = timed
        let key = "hashtext('osd-server migrations \(configuration.schema)')"
        let quiet = PostgresTestDatabase.quietLogger
        let epoch = try await PostgresTestDatabase.withProbe(configuration) { connection in
            // Another server's migration holds the lock.
            _ = try await connection.query(PostgresQuery(unsafeSQL: "SELECT pg_advisory_lock(\(key))"), logger: quiet).collect()
            let starting = Task { try await PostgresSyncStorage(configuration: configuration, logger: quiet) }
            do {
                // Held until the starting server has waited for it five of its statement
                // timeouts (its wait seen in pg_locks: a lock of that key not granted).
                let waiting = """
                    SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
                    AND ((classid::bigint << 32) | objid::bigint) = \(key)::bigint
                    """
                var seen = false
                for _ in 0..<500 where !seen {
                    let rows = try await connection.query(PostgresQuery(unsafeSQL: waiting), logger: quiet).collect()
                    seen = try rows.first?.decode(Int64.self) == 1
                    if !seen { try await Task.sleep(for: .milliseconds(20)) }
                }
                #expect(seen, "the starting server waits for the migration lock")
                try await Task.sleep(for: .milliseconds(1000))
                _ = try await connection.query(PostgresQuery(unsafeSQL: "SELECT pg_advisory_unlock(\(key))"), logger: quiet).collect()
            } catch {
                starting.cancel()
                throw error
            }
            let storage = try await starting.value
            let epoch = try await storage.metadata().epoch
            try await storage.close()
            return epoch
        }
        #expect(!epoch.isEmpty)
    }

    @Test("a push through one server is pulled through the other", arguments: Backend.postgresOnly)
    func pushHerePullThere(_ backend: Backend) async throws {
        try await withTwoServers { a, b in
            let alice = try await a.token("alice")
            let push = try await a.push(
                PushRequest(clientID: "phone", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("via A")])]), token: alice)
            #expect(push.status == 200)
            let pull = try await b.pull(PullRequest(clientID: "laptop"), token: alice)
            #expect(pull.status == 200, "\(pull.text)")
            let page = try pull.decode(PullResponse.self)
            #expect(page.changes.map(\.recordID) == ["n1"])
            #expect(page.changes.first?.fields["title"] == .string("via A"))
            // The cursor of one server is good on the other (same epoch and key).
            _ = try await b.push(
                PushRequest(clientID: "laptop", mutations: [mutation(1, .update, "n1", at: 1_790_000_000_001, fields: ["title": .string("via B")])]),
                token: alice)
            let next = try await a.pull(PullRequest(clientID: "phone", cursor: page.cursor), token: alice)
            #expect(try next.decode(PullResponse.self).changes.map(\.fields) == [["title": .string("via B")]])
            // A replay through the other server is acknowledged, not applied again.
            let replay = try await b.push(
                PushRequest(clientID: "phone", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("via A")])]), token: alice)
            #expect(try replay.decode(PushResponse.self).results.first?.status == .applied)
            #expect(try await a.footprint()["osd_changes"] == 2)
        }
    }

    @Test(
        "a blob uploaded through one server, part of it through the other, reads through both: the bytes are in the database",
        arguments: Backend.postgresOnly)
    func blobsShared(_ backend: Backend) async throws {
        try await withTwoServers { a, b in
            let (bytes, reference) = blob((2 << 20) + 12_345, seed: 9)
            #expect(try await a.pushPhoto("p1", reference, scope: .user("alice"), user: "alice", client: "phone").status == 200)
            #expect(try await a.uploadPart(reference, bytes[0..<1_500_000], at: 0, user: "alice").status == 200)
            // The other server knows how much arrived, and takes the rest.
            #expect(try await b.uploadState(reference, user: "alice").decode(BlobUploadState.self).received == 1_500_000)
            let rest = try await b.uploadPart(reference, bytes[1_500_000...], at: 1_500_000, user: "alice")
            #expect(try rest.decode(BlobUploadState.self).isComplete)
            for server in [a, b] {
                let whole = try await server.read(reference.digest, user: "alice")
                #expect(whole.status == 200 && Array(whole.body) == bytes)
            }
        }
    }

    @Test("a live client on server A is told of a push through server B, and of a grant made there", arguments: Backend.postgresOnly)
    func liveAcrossServers(_ backend: Backend) async throws {
        try await withTwoServers { a, b in
            let alice = try await a.token("alice")
            let bob = try await a.token("bob")
            let (messages, continuation) = AsyncStream<LiveMessage>.makeStream()
            var logger = Logger(label: "ws-test")
            logger.logLevel = .warning
            let socket = Task { [logger] in
                var headers = HTTPFields()
                headers[.authorization] = "Bearer \(alice)"
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(a.port)/v1/live", configuration: WebSocketClientConfiguration(additionalHeaders: headers), logger: logger
                ) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message, let decoded = try? JSONDecoder().decode(LiveMessage.self, from: Data(text.utf8)) {
                            continuation.yield(decoded)
                        }
                    }
                    continuation.finish()
                }
            }
            defer { socket.cancel() }
            let hello = try await withTimeout(messageDeadline) {
                var iterator = messages.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(hello?.type == .hello)
            // Bob's push in his own scope is not alice's business; hers through B is.
            _ = try await b.push(PushRequest(clientID: "bob-phone", mutations: [mutation(1, .insert, "b1", scope: .user("bob"))]), token: bob)
            let push = try await b.push(PushRequest(clientID: "alice-laptop", mutations: [mutation(1, .insert, "n1")]), token: alice)
            #expect(push.status == 200)
            let changed = try await withTimeout(messageDeadline) {
                var iterator = messages.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(changed?.type == .changed)
            #expect(changed?.scopes == [.user("alice")])
            #expect(changed?.version == 2)
            // Bob grants alice his team's scope through B: alice's socket on A hears of it.
            let grant = try await b.send(.POST, "/v1/scopes/team:t9/members", token: bob, body: Data(#"{"protocolVersion":1,"user":"alice"}"#.utf8))
            #expect(grant.status == 200, "\(grant.text)")
            let granted = try await withTimeout(messageDeadline) {
                var iterator = messages.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(granted?.type == .grantsChanged)
        }
    }

    @Test(
        "many clients push through two servers while a puller alternates between them: every change arrives exactly once, in order",
        arguments: Backend.postgresOnly)
    func concurrentPushersExactlyOnce(_ backend: Backend) async throws {
        try await withTwoServers { a, b in
            let servers = [a, b]
            let alice = try await a.token("alice")
            let clients = 12
            let pushesPerClient = 15
            let mutationsPerPush = 4
            let expected = clients * pushesPerClient * mutationsPerPush
            let done = ManualFlag()
            // A first sync before any push: the scope's (empty) snapshot, then only the log.
            var start = try await a.pull(PullRequest(clientID: "puller"), token: alice).decode(PullResponse.self)
            while start.hasMore {
                start = try await a.pull(PullRequest(clientID: "puller", cursor: start.cursor), token: alice).decode(PullResponse.self)
            }
            #expect(start.changes.isEmpty && start.consistent)
            let startCursor = start.cursor
            let puller = Task { () throws -> [PulledChange] in
                var received: [PulledChange] = []
                var cursor: String? = startCursor
                var index = 0
                while true {
                    let finished = done.isSet
                    var more = true
                    while more {
                        let answer = try await servers[index % 2].pull(PullRequest(clientID: "puller", cursor: cursor, limit: 7), token: alice)
                        index += 1
                        guard answer.status == 200 else {
                            throw SyncServiceError(500, .internalError, "pull answered \(answer.status) \(answer.text)")
                        }
                        let page = try answer.decode(PullResponse.self)
                        received += page.changes
                        cursor = page.cursor
                        more = page.hasMore
                    }
                    if finished { return received }
                    try await Task.sleep(for: .milliseconds(3))
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<clients {
                    group.addTask {
                        for push in 0..<pushesPerClient {
                            let mutations = (0..<mutationsPerPush).map { index in
                                let id = MutationID(push * mutationsPerPush + index + 1)
                                return mutation(id, .insert, "c\(client)-m\(id)", at: 1_790_000_000_000 + UInt64(id), fields: ["n": .int(id)])
                            }
                            let answer = try await servers[(client + push) % 2].push(
                                PushRequest(clientID: "client-\(client)", mutations: mutations), token: alice)
                            guard answer.status == 200 else {
                                throw SyncServiceError(500, .internalError, "push answered \(answer.status) \(answer.text)")
                            }
                            let response = try answer.decode(PushResponse.self)
                            guard response.results.allSatisfy({ $0.status == .applied }) else {
                                throw SyncServiceError(500, .internalError, "not applied: \(response.results)")
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            done.set()
            let received = try await puller.value
            let ids = received.map(\.recordID)
            #expect(ids.count == expected, "received \(ids.count) changes for \(expected) mutations")
            #expect(Set(ids).count == expected, "some change arrived twice")
            let versions = received.map(\.version)
            #expect(versions == versions.sorted() && Set(versions).count == versions.count, "versions go back or repeat")
            #expect(versions == Array(1...Int64(expected)), "a version was skipped")
            // Per client, the order of its mutations is kept.
            for client in 0..<clients {
                let order = received.filter { $0.clientID == "client-\(client)" }.compactMap(\.mutationID)
                #expect(order == Array(1...MutationID(pushesPerClient * mutationsPerPush)))
            }
        }
    }

    /// The built `osd-server` executable.
    private func executable() throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("osd-server")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = root.appendingPathComponent(".build/debug/osd-server")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw SyncServiceError(500, .internalError, "osd-server is not built (swift build --build-tests builds it)")
        }
        return candidate
    }

    @Test(
        "two osd-server processes on one database: killing one loses nothing it acknowledged, and the other keeps serving",
        arguments: Backend.postgresOnly)
    func killOneServer(_ backend: Backend) async throws {
        let configuration = try PostgresTestDatabase.freshConfiguration()
        guard let url = PostgresTestDatabase.url else { throw PostgresTestDatabase.Unavailable() }
        let binary = try executable()
        let directory = try TemporaryDirectory()
        let secret = "process-test-secret-of-32-bytes-or-more"
        func start(_ name: String) async throws -> (Process, Int) {
            let output = directory.path("\(name).txt")
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            let process = Process()
            process.executableURL = binary
            process.arguments = [
                "--port", "0", "--postgres", url, "--postgres-schema", configuration.schema, "--postgres-pool-size", "4", "--jwt-secret", secret,
                "--log-level", "warning",
            ]
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            try process.run()
            for _ in 0..<300 {
                try await Task.sleep(for: .milliseconds(100))
                let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("osd-server listening on http://127.0.0.1:") }),
                    let port = Int(line.split(separator: ":").last ?? "")
                {
                    return (process, port)
                }
                if !process.isRunning { break }
            }
            process.terminate()
            throw SyncServiceError(
                500, .internalError, "osd-server \(name) did not start: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
        }
        let (first, firstPort) = try await start("a")
        defer { if first.isRunning { first.terminate() } }
        let (second, secondPort) = try await start("b")
        defer { if second.isRunning { second.terminate() } }
        let token = try await TokenVerifier(configuration: AuthConfiguration(hmacSecret: secret), now: { Date() }).mint(user: "alice")
        let a = LiveServerClient(base: "http://127.0.0.1:\(firstPort)")
        let b = LiveServerClient(base: "http://127.0.0.1:\(secondPort)")
        // Pushes through A, acknowledged one by one, while A is killed at some point.
        var acknowledged: [RecordID] = []
        let firstPID = first.processIdentifier
        let killer = Task {
            try await Task.sleep(for: .milliseconds(400))
            _ = kill(firstPID, SIGKILL)
        }
        for id in 1...400 {
            let record = "n\(id)"
            guard
                let answer = try? await a.push(
                    PushRequest(clientID: "phone", mutations: [mutation(MutationID(id), .insert, record, at: 1_790_000_000_000 + UInt64(id))]),
                    token: token),
                answer.status == 200
            else { break }
            acknowledged.append(record)
        }
        _ = await killer.result
        first.waitUntilExit()
        #expect(first.terminationReason == .uncaughtSignal)
        #expect(!acknowledged.isEmpty)
        // B has every acknowledged change, and takes the client's next mutation.
        var received: [RecordID] = []
        var cursor: String?
        for _ in 0..<1_000 {
            let page = try (try await b.pull(PullRequest(clientID: "laptop", cursor: cursor), token: token)).decode(PullResponse.self)
            received += page.changes.map(\.recordID)
            cursor = page.cursor
            if !page.hasMore { break }
        }
        #expect(
            Set(acknowledged).isSubset(of: Set(received)),
            "acknowledged through A but missing on B: \(Set(acknowledged).subtracting(received).sorted())")
        let status = try await b.pull(PullRequest(clientID: "phone"), token: token).decode(PullResponse.self)
        let next = status.lastMutationID + 1
        let push = try await b.push(
            PushRequest(clientID: "phone", mutations: [mutation(next, .insert, "after", at: 1_790_000_009_000)]), token: token)
        #expect(push.status == 200)
        #expect(try push.decode(PushResponse.self).results.first?.status == .applied)
        second.terminate()
        second.waitUntilExit()
        #expect(second.terminationStatus == 0)
    }
}

/// A flag set once, read from any task.
final class ManualFlag: Sendable {
    private let state = Mutex(false)
    var isSet: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }
}
