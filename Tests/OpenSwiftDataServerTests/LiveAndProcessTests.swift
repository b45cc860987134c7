import Foundation
import GRDB
import HTTPTypes
import HummingbirdWSClient
import Logging
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

/// How long a test waits for a message that comes at once when all is well: far above that, so
/// that a machine busy with the rest of the suite does not fail the test; only a test that
/// fails waits it out.
let messageDeadline: Double = 30

/// Runs `body`, failing if it takes longer than `seconds`.
func withTimeout<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw SyncServiceError(500, .internalError, "timed out after \(seconds) s")
        }
        defer { group.cancelAll() }
        guard let result = try await group.next() else { throw CancellationError() }
        return result
    }
}

@Suite("Live channel and the osd-server process", .serialized)
struct LiveAndProcessTests {
    @Test("a connected client gets hello, then changed after another client's push; other users get nothing", arguments: Backend.all)
    func live(_ backend: Backend) async throws {
        try await LiveServer.run(backend) { server in
            let alice = try await server.token("alice")
            let bob = try await server.token("bob")
            let (aliceMessages, aliceContinuation) = AsyncStream<LiveMessage>.makeStream()
            let (bobMessages, bobContinuation) = AsyncStream<LiveMessage>.makeStream()
            let logger: Logger = {
                var logger = Logger(label: "ws-test")
                logger.logLevel = .warning
                return logger
            }()
            let url = "ws://127.0.0.1:\(server.port)/v1/live"
            func connect(_ token: String, _ continuation: AsyncStream<LiveMessage>.Continuation) -> Task<Void, any Error> {
                Task {
                    var headers = HTTPFields()
                    headers[.authorization] = "Bearer \(token)"
                    try await WebSocketClient.connect(
                        url: url, configuration: WebSocketClientConfiguration(additionalHeaders: headers), logger: logger
                    ) { inbound, _, _ in
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            if case .text(let text) = message, let decoded = try? JSONDecoder().decode(LiveMessage.self, from: Data(text.utf8)) {
                                continuation.yield(decoded)
                            }
                        }
                        continuation.finish()
                    }
                }
            }
            let aliceSocket = connect(alice, aliceContinuation)
            let bobSocket = connect(bob, bobContinuation)
            defer {
                aliceSocket.cancel()
                bobSocket.cancel()
            }
            let hello = try await withTimeout(messageDeadline) {
                var iterator = aliceMessages.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(hello?.type == .hello)
            let bobHello = try await withTimeout(messageDeadline) {
                var iterator = bobMessages.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(bobHello?.type == .hello)
            #expect(await server.server.hub.count == 2)
            let push = try await server.push(PushRequest(clientID: "alice-phone", mutations: [mutation(1, .insert, "n1")]), token: alice)
            #expect(push.status == 200)
            let changed = try await withTimeout(messageDeadline) {
                var iterator = aliceMessages.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(changed?.type == .changed)
            #expect(changed?.scopes == [.user("alice")])
            // Bob's next message is the grant, not alice's private change.
            _ = try await server.send(.POST, "/v1/scopes/team:t1/members", token: alice, body: Data(#"{"protocolVersion":1,"user":"bob"}"#.utf8))
            let bobNext = try await withTimeout(messageDeadline) {
                var iterator = bobMessages.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(bobNext?.type == .grantsChanged)
            // A socket without a valid token is refused.
            await #expect(throws: (any Error).self) {
                try await WebSocketClient.connect(url: url + "?access_token=forged", logger: logger) { _, _, _ in }
            }
        }
    }

    @Test(
        "a refused live handshake (no, expired or forged token) is a 401 with the JSON error body and an x-request-id, and nothing after it; an unsupported protocolVersion is a 400"
    )
    func refusedHandshake() async throws {
        try await LiveServer.run { server in
            let expired = try await TokenVerifier(
                configuration: AuthConfiguration(hmacSecret: LiveServer.secret), now: { Date(timeIntervalSinceNow: -7200) }
            ).mint(user: "alice", lifetime: 60)
            let forged = try await TokenVerifier(configuration: AuthConfiguration(hmacSecret: "another-secret-of-at-least-32-bytes"), now: { Date() })
                .mint(user: "alice")
            let cases: [(name: String, path: String, headers: [String: String], word: String)] = [
                ("no token", "/v1/live", [:], "no bearer token"),
                ("expired token", "/v1/live", ["Authorization": "Bearer \(expired)"], "expired"),
                ("forged token", "/v1/live", ["Authorization": "Bearer \(forged)"], "signature"),
                ("forged token in the query", "/v1/live?access_token=\(forged)", [:], "signature"),
                ("not a bearer token", "/v1/live", ["Authorization": "Basic YTpi"], "not a bearer token"),
            ]
            var ids: Set<String> = []
            for (name, path, headers, word) in cases {
                let socket = try RawWebSocket(port: server.port)
                try socket.sendHandshake(path: path, port: server.port, headers: headers)
                let (head, body) = try await socket.readResponse()
                #expect(head.hasPrefix("HTTP/1.1 401"), "\(name): \(head)")
                let fields = head.split(separator: "\r\n").dropFirst().map {
                    $0.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                }
                let header = { (field: String) in fields.first { $0.first?.lowercased() == field }?.last }
                #expect(header("content-type") == "application/json", "\(name)")
                let id = try #require(header("x-request-id"), "\(name): \(head)")
                #expect(!id.isEmpty)
                ids.insert(id)
                let error = try JSONDecoder().decode(ErrorResponse.self, from: Data(body.utf8))
                #expect(error.error.code == .unauthorized, "\(name)")
                #expect(error.error.message.contains(word), "\(name): \(error.error.message)")
                let (rest, closed) = try await socket.readToEnd()
                #expect(closed, "\(name): the server closes the connection")
                #expect(rest.isEmpty, "\(name): nothing follows the answer: \(String(decoding: rest, as: UTF8.self))")
            }
            #expect(ids.count == cases.count, "each answer has its own request id")
            // A good token with a version the server does not speak: 400, naming the versions.
            let wrongVersion = try RawWebSocket(port: server.port)
            try wrongVersion.sendHandshake(
                path: "/v1/live?protocolVersion=7", port: server.port, headers: ["Authorization": "Bearer \(try await server.token("alice"))"])
            let (versionHead, versionBody) = try await wrongVersion.readResponse()
            #expect(versionHead.hasPrefix("HTTP/1.1 400"), "\(versionHead)")
            let versionError = try JSONDecoder().decode(ErrorResponse.self, from: Data(versionBody.utf8))
            #expect(versionError.error.code == .unsupportedProtocolVersion)
            #expect(versionError.error.supportedVersions == ProtocolVersion.supported)
            #expect(await server.server.hub.count == 0)
            // A good token still upgrades.
            let socket = try RawWebSocket(port: server.port)
            try socket.sendHandshake(port: server.port, headers: ["Authorization": "Bearer \(try await server.token("alice"))"])
            #expect(try await socket.readResponse().head.hasPrefix("HTTP/1.1 101"))
            #expect(try await socket.readFrame()?.text.contains("hello") == true)
        }
    }

    /// The built `osd-server` executable, next to the test bundle.
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

    private func run(_ executable: URL, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test("osd-server runs as a process: prints its port, mints tokens, serves, and on SIGTERM exits 0 with the data on disk")
    func process() async throws {
        let binary = try executable()
        let directory = try TemporaryDirectory()
        let database = directory.path("data/osd.sqlite")
        let secret = "process-test-secret-of-32-bytes-or-more"
        let settings = [
            "--hostname", "--port", "--database", "--jwt-secret", "--jwks-file", "--jwks-url", "--jwks-refresh-interval", "--jwt-clock-skew",
            "--jwt-issuer", "--jwt-audience", "--max-body-bytes", "--max-mutations", "--max-changes", "--max-pull-limit", "--retention-days",
            "--compaction-interval", "--shutdown-grace-period", "--log-level",
        ]
        let environment = [
            "OSD_HOSTNAME", "OSD_PORT", "OSD_DATABASE", "OSD_DATA_DIR", "OSD_JWT_SECRET", "OSD_JWKS_FILE", "OSD_JWKS_URL",
            "OSD_JWKS_REFRESH_INTERVAL", "OSD_JWT_CLOCK_SKEW", "OSD_JWT_ISSUER", "OSD_JWT_AUDIENCE", "OSD_MAX_BODY_BYTES", "OSD_MAX_MUTATIONS",
            "OSD_MAX_CHANGES", "OSD_MAX_PULL_LIMIT", "OSD_RETENTION_DAYS", "OSD_COMPACTION_INTERVAL", "OSD_SHUTDOWN_GRACE_PERIOD", "OSD_LOG_LEVEL",
        ]
        for arguments in [["--help"], ["serve", "--help"]] {
            let help = try run(binary, arguments)
            for setting in settings + environment {
                #expect(help.contains(setting), "osd-server \(arguments.joined(separator: " ")) lists \(setting)")
            }
        }
        let tokenOutput = try run(binary, ["token", "--user", "alice", "--jwt-secret", secret])
        let token = try #require(tokenOutput.split(separator: "\n").last.map(String.init))

        let output = directory.path("stdout.txt")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["--port", "0", "--database", database, "--jwt-secret", secret, "--log-level", "warning"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var port: Int?
        for _ in 0..<300 where port == nil {
            try await Task.sleep(for: .milliseconds(100))
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("osd-server listening on http://127.0.0.1:") }) {
                port = Int(line.split(separator: ":").last ?? "")
            }
        }
        let bound = try #require(port)
        #expect(bound > 0)
        let client = LiveServerClient(base: "http://127.0.0.1:\(bound)")
        let push = try await client.push(
            PushRequest(clientID: "p1", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("on disk")])]), token: token)
        #expect(push.status == 200, "\(push.text)")
        process.terminate()  // SIGTERM
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(text.contains("database closed"))
        // A clean close checkpoints the WAL into the database file: a copy of that file alone,
        // without its -wal, already holds the note.
        let copy = directory.path("copy.sqlite")
        try FileManager.default.copyItem(atPath: database, toPath: copy)
        let copied = try await DatabaseQueue(path: copy).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records WHERE record_id = 'n1'")
        }
        #expect(copied == 1, "the database file holds the data without its WAL")
        let queue = try DatabaseQueue(path: database)
        let fields = try await queue.read { db in try String.fetchOne(db, sql: "SELECT CAST(fields AS TEXT) FROM osd_records WHERE record_id = 'n1'")
        }
        #expect(fields?.contains("on disk") == true)
    }

    @Test(
        "SIGTERM drains within the grace period whatever clients do: a live client that never reads or answers the close frame does not hold the server; a reading one gets 1001; the process exits 0"
    )
    func shutdownWithSilentLiveClient() async throws {
        let binary = try executable()
        let directory = try TemporaryDirectory()
        let secret = "shutdown-test-secret-of-32-bytes-or-more"
        let output = directory.path("stdout.txt")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = [
            "--port", "0", "--database", directory.path("osd.sqlite"), "--jwt-secret", secret, "--log-level", "warning", "--shutdown-grace-period",
            "3",
        ]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OSD_") }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        var port: Int?
        for _ in 0..<300 where port == nil {
            try await Task.sleep(for: .milliseconds(100))
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("osd-server listening on http://127.0.0.1:") }) {
                port = Int(line.split(separator: ":").last ?? "")
            }
        }
        let bound = try #require(port)
        let token = try await TokenVerifier(configuration: AuthConfiguration(hmacSecret: secret), now: { Date() }).mint(user: "alice")
        // One client upgrades and then never reads a byte nor answers anything.
        let silent = try RawWebSocket(port: bound)
        try silent.sendHandshake(port: bound, headers: ["Authorization": "Bearer \(token)"])
        // Another reads, but never answers the close frame either.
        let listener = try RawWebSocket(port: bound)
        try listener.sendHandshake(port: bound, headers: ["Authorization": "Bearer \(token)"])
        let head = try await listener.readResponse().head
        #expect(head.hasPrefix("HTTP/1.1 101"), "\(head)")
        let hello = try await listener.readFrame()
        #expect(hello?.opcode == 1 && hello?.text.contains("hello") == true)
        let client = LiveServerClient(base: "http://127.0.0.1:\(bound)")
        var connected = false
        for _ in 0..<100 where !connected {
            connected = try await client.send(.GET, "/metrics").text.contains("osd_live_clients 2")
            if !connected { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(connected, "both live clients are connected")

        let start = ContinuousClock.now
        process.terminate()  // SIGTERM
        var close: RawWebSocket.Frame?
        while let frame = try await listener.readFrame() {
            if frame.opcode == 8 {
                close = frame
                break
            }
        }
        #expect(close?.closeCode == 1001, "live clients are told 1001 going away, not \(String(describing: close?.closeCode))")
        for _ in 0..<150 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        let elapsed = ContinuousClock.now - start
        #expect(!process.isRunning, "the server exits within the grace period (3 s) and a margin, whatever the clients do")
        guard !process.isRunning else { return }
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(elapsed < .seconds(8), "\(elapsed)")
        #expect(try await listener.readToEnd().closed, "the server closed the connection")
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(text.contains("database closed"))
        _ = silent
    }

    /// Runs `osd-server` with `arguments` (no OSD_ variables); returns its exit status, standard
    /// output and standard error.
    private func runCapturing(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OSD_") }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData, as: UTF8.self))
    }

    @Test(
        "osd-server backup copies a database in use; restore installs the copy with a new epoch; epoch rotate gives a new one in place; each refuses what it cannot do, naming why, with a non-zero exit"
    )
    func backupCommands() async throws {
        let binary = try executable()
        let directory = try TemporaryDirectory()
        let database = directory.path("osd.sqlite")
        let storage = try SQLiteSyncStorage(path: database)
        let service = try await SyncService(storage: storage, now: { Date() })
        _ = try await service.push(user: "alice", request: PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]))
        let backup = directory.path("backup.sqlite")
        // While the database is open (the server would be running).
        let backedUp = try runCapturing(binary, ["backup", "--to", backup, "--database", database])
        #expect(backedUp.status == 0, "\(backedUp.errors)")
        #expect(backedUp.output.contains("backed up") && backedUp.output.contains(service.epoch), "\(backedUp.output)")
        try await storage.close()
        let again = try runCapturing(binary, ["backup", "--to", backup, "--database", database])
        #expect(again.status != 0 && again.errors.contains("exists"), "\(again.errors)")

        let restoredPath = directory.path("restored.sqlite")
        let restored = try runCapturing(binary, ["restore", backup, "--database", restoredPath])
        #expect(restored.status == 0, "\(restored.errors)")
        func epoch(_ path: String) async throws -> String? {
            try await DatabaseQueue(path: path).read { db in
                try String.fetchOne(db, sql: "SELECT CAST(value AS TEXT) FROM osd_metadata WHERE key = 'epoch'")
            }
        }
        let restoredEpoch = try #require(try await epoch(restoredPath))
        #expect(restoredEpoch != service.epoch)
        #expect(restored.output.contains(service.epoch) && restored.output.contains(restoredEpoch), "\(restored.output)")
        let notes = try await DatabaseQueue(path: restoredPath).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM osd_records") }
        #expect(notes == 1)

        let rotated = try runCapturing(binary, ["epoch", "rotate", "--database", restoredPath])
        #expect(rotated.status == 0, "\(rotated.errors)")
        let rotatedEpoch = try #require(try await epoch(restoredPath))
        #expect(rotatedEpoch != restoredEpoch && rotated.output.contains(rotatedEpoch), "\(rotated.output)")

        let missing = try runCapturing(binary, ["epoch", "rotate", "--database", directory.path("missing.sqlite")])
        #expect(missing.status != 0 && missing.errors.contains("no database"), "\(missing.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("missing.sqlite")), "nothing is created")
        let noBackup = try runCapturing(binary, ["restore", directory.path("missing-backup.sqlite"), "--database", restoredPath])
        #expect(noBackup.status != 0 && noBackup.errors.contains("no backup"), "\(noBackup.errors)")
        let help = try runCapturing(binary, ["--help"]).output
        for command in ["backup --to", "restore", "epoch rotate"] {
            #expect(help.contains(command), "--help names \(command)")
        }
    }

    @Test("osd-server epoch rotate --postgres gives the PostgreSQL database a new epoch", arguments: Backend.postgresOnly)
    func rotatePostgresCommand(_ backend: Backend) async throws {
        let binary = try executable()
        let url = try #require(PostgresTestDatabase.url)
        let configuration = try PostgresTestDatabase.freshConfiguration()
        let storage = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        let before = try await storage.metadata().epoch
        try await storage.close()
        let rotated = try runCapturing(binary, ["epoch", "rotate", "--postgres", url, "--postgres-schema", configuration.schema])
        #expect(rotated.status == 0, "\(rotated.errors)")
        let reopened = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        let after = try await reopened.metadata().epoch
        try await reopened.close()
        #expect(after != before)
        #expect(rotated.output.contains(before) && rotated.output.contains(after), "\(rotated.output)")
    }

    @Test("osd-server refuses a non-loopback address with the development secret, before binding, and says which setting to give")
    func developmentSecretStaysLocal() throws {
        let binary = try executable()
        let directory = try TemporaryDirectory()
        let process = Process()
        process.executableURL = binary
        // Refused while parsing settings: nothing is bound, so no address but loopback is touched.
        process.arguments = ["--hostname", "0.0.0.0", "--port", "0", "--database", directory.path("refused.sqlite")]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OSD_") }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(message.contains("development secret") && message.contains("--jwt-secret"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("refused.sqlite")), "no database is created")
    }

    /// Starts `osd-server` with `arguments` and `environment` in `directory`, waits for its
    /// address, pushes one note, and stops it with SIGINT; returns what it printed.
    private func serveOnce(
        _ binary: URL, _ arguments: [String], environment: [String: String], in directory: TemporaryDirectory, secret: String
    ) async throws -> String {
        let output = directory.path("stdout-\(UUID().uuidString).txt")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory.url
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OSD_") }.merging(environment) { _, new in new }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var port: Int?
        for _ in 0..<300 where port == nil {
            try await Task.sleep(for: .milliseconds(100))
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("osd-server listening on http://127.0.0.1:") }) {
                port = Int(line.split(separator: ":").last ?? "")
            }
        }
        let bound = try #require(port)
        let token = try await TokenVerifier(configuration: AuthConfiguration(hmacSecret: secret), now: { Date() }).mint(user: "alice")
        let push = try await LiveServerClient(base: "http://127.0.0.1:\(bound)").push(
            PushRequest(clientID: "p1", mutations: [mutation(1, .insert, "n1")]), token: token)
        #expect(push.status == 200, "\(push.text)")
        process.interrupt()  // SIGINT
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    }

    @Test(
        "the default database is osd-server.sqlite in the working directory, or in OSD_DATA_DIR; settings come from environment variables; SIGINT stops it cleanly"
    )
    func defaultDatabaseAndEnvironment() async throws {
        let binary = try executable()
        let directory = try TemporaryDirectory()
        let secret = "environment-test-secret-of-32-bytes-or-more"
        let defaultOutput = try await serveOnce(
            binary, ["--port", "0", "--jwt-secret", secret, "--log-level", "warning"], environment: [:], in: directory, secret: secret)
        let defaultPath = directory.url.appendingPathComponent("osd-server.sqlite").standardizedFileURL.path
        #expect(FileManager.default.fileExists(atPath: defaultPath), "\(defaultOutput)")
        #expect(defaultOutput.contains("database: ") && defaultOutput.contains("osd-server.sqlite"), "the absolute path is printed: \(defaultOutput)")
        #expect(defaultOutput.contains("database closed"))

        let environmentOutput = try await serveOnce(
            binary, [], environment: ["OSD_PORT": "0", "OSD_DATA_DIR": directory.path("data"), "OSD_JWT_SECRET": secret, "OSD_LOG_LEVEL": "warning"],
            in: directory, secret: secret)
        #expect(FileManager.default.fileExists(atPath: directory.path("data/osd-server.sqlite")), "\(environmentOutput)")
        #expect(environmentOutput.contains("database closed"))
    }
}
