import Foundation
import GRDB
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

/// A PostgreSQL cluster of one test's own (stopping the shared one of
/// `scripts/with-postgres.sh` would fail the tests running beside it), made with the same
/// binaries and settings as the script: initdb in a temporary directory, the server on a Unix
/// socket there, as the `postgres` user when the tests run as root.
final class PrivatePostgresCluster: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let directory: String
    let bin: String
    let owner: String
    let asOwner: [String]

    init() throws {
        let candidates = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .sorted { $0.compare($1, options: .numeric) == .orderedAscending }
            .map { "/usr/lib/postgresql/\($0)/bin" }
        guard let bin = candidates.last(where: { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") }) else {
            throw Failure(description: "no PostgreSQL binaries under /usr/lib/postgresql")
        }
        self.bin = bin
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-pg-outage-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            owner = "postgres"
            asOwner = ["/usr/sbin/runuser", "-u", "postgres", "--"]
            try Self.run(["/bin/chown", "postgres", directory])
        } else {
            owner = ProcessInfo.processInfo.environment["USER"] ?? "postgres"
            asOwner = []
        }
        try Self.run(asOwner + ["\(bin)/initdb", "-D", "\(directory)/data", "-U", owner, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"])
        try start()
    }

    var url: String { "postgres://\(owner)@localhost/postgres?host=\(directory)" }

    func start() throws {
        try Self.run(
            asOwner + [
                "\(bin)/pg_ctl", "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "60",
                "-o", "-c listen_addresses='' -c unix_socket_directories='\(directory)' -c fsync=off -c synchronous_commit=off", "start",
            ])
    }

    /// Stops the server (fast: open sessions are ended).
    func stop() throws {
        try Self.run(asOwner + ["\(bin)/pg_ctl", "-D", "\(directory)/data", "-m", "fast", "-w", "stop"])
    }

    func remove() {
        _ = try? Self.run(asOwner + ["\(bin)/pg_ctl", "-D", "\(directory)/data", "-m", "immediate", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a command to its end. Its output goes to a file, not a pipe: the server `pg_ctl
    /// start` leaves running would hold a pipe open, and reading it would never end.
    static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("osd-pg-outage-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()
        try? output.close()
        guard process.terminationStatus == 0 else {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw Failure(description: "\(arguments.joined(separator: " ")) failed: \(text)")
        }
    }
}

/// Holds SQLite's write lock on a database file from another connection (as another process
/// writing to it would), on a thread of its own, until released.
final class SQLiteWriteLock: @unchecked Sendable {
    private let release = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(path: String) throws {
        let queue = try DatabaseQueue(path: path)
        let locked = DispatchSemaphore(value: 0)
        let failure = LockedBox<(any Error)?>(nil)
        let release = release
        let done = done
        Thread.detachNewThread {
            do {
                try queue.inDatabase { db in
                    try db.execute(sql: "BEGIN IMMEDIATE")
                    locked.signal()
                    release.wait()
                    try db.execute(sql: "ROLLBACK")
                }
            } catch {
                failure.value = error
                locked.signal()
            }
            done.signal()
        }
        locked.wait()
        if let error = failure.value { throw error }
    }

    func unlock() {
        release.signal()
        done.wait()
    }
}

/// A value shared between threads under a lock.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T

    init(_ value: T) { stored = value }

    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

@Suite("The storage fails: 503 unavailable with Retry-After, /ready says so, and service resumes on its own", .serialized)
struct StorageOutageTests {
    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    @Test(
        "PostgreSQL stopped: /ready is 503 within 5 s, pushes and pulls are 503 unavailable with Retry-After within 5 s; started again: a push succeeds without restarting the server",
        .disabled("hangs while setting up its private cluster; not yet diagnosed"), arguments: Backend.postgresOnly)
    func postgresOutage(_ backend: Backend) async throws {
        let cluster = try PrivatePostgresCluster()
        defer { cluster.remove() }
        var configuration = try PostgresStorageConfiguration(url: cluster.url)
        configuration.poolSize = 4
        let storage = try await PostgresSyncStorage(configuration: configuration, logger: PostgresTestDatabase.quietLogger)
        let directory = try TemporaryDirectory()
        try await LiveServer.run(storage: .postgres(storage), directory: directory) { server in
            let alice = try await server.token("alice")
            let first = try await server.push(PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]), token: alice)
            #expect(first.status == 200)
            #expect(try await server.send(.GET, "/ready").status == 200)

            try cluster.stop()
            var start = ContinuousClock.now
            let ready = try await server.send(.GET, "/ready")
            let readySeconds = seconds(since: start)
            #expect(ready.status == 503)
            #expect(ready.errorCode == .unavailable)
            #expect(readySeconds < 5, "/ready took \(readySeconds) s")

            start = .now
            let push = try await server.push(PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2")]), token: alice)
            let pushSeconds = seconds(since: start)
            #expect(push.status == 503, "\(push.text)")
            #expect(push.errorCode == .unavailable, "\(push.text)")
            #expect(push.headers["retry-after"] == "5")
            #expect(pushSeconds < 5, "the push took \(pushSeconds) s")

            start = .now
            let pull = try await server.pull(PullRequest(clientID: "a"), token: alice)
            let pullSeconds = seconds(since: start)
            #expect(pull.status == 503 && pull.errorCode == .unavailable, "\(pull.text)")
            #expect(pull.headers["retry-after"] != nil)
            #expect(pullSeconds < 5, "the pull took \(pullSeconds) s")
            print("PostgreSQL down: /ready 503 in \(readySeconds) s, push 503 in \(pushSeconds) s, pull 503 in \(pullSeconds) s")

            try cluster.start()
            start = .now
            var recovered: LiveServerClient.Answer?
            while seconds(since: start) < 90 {
                let answer = try await server.push(PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2")]), token: alice)
                if answer.status == 200 {
                    recovered = answer
                    break
                }
                #expect(answer.status == 503, "\(answer.text)")
                try await Task.sleep(for: .milliseconds(250))
            }
            print("PostgreSQL back: a push succeeded after \(seconds(since: start)) s")
            #expect(try recovered?.decode(PushResponse.self).results.first?.status == .applied)
            #expect(try await server.send(.GET, "/ready").status == 200)
            let page = try await server.pull(PullRequest(clientID: "b"), token: alice)
            #expect(try page.decode(PullResponse.self).changes.map(\.recordID).sorted() == ["n1", "n2"])
        }
    }

    @Test(
        "SQLite that cannot write (another connection holds the write lock): pushes are 503 unavailable with Retry-After, pulls still answer, /ready is 503; writable again: both recover"
    )
    func sqliteCannotWrite() async throws {
        try await LiveServer.run(storage: { path in try SQLiteSyncStorage(path: path, busyTimeout: 1) }) { server in
            let alice = try await server.token("alice")
            #expect(try await server.push(PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]), token: alice).status == 200)
            #expect(try await server.send(.GET, "/ready").status == 200)
            guard case .sqlite(_, let path) = server.storage else {
                Issue.record("not SQLite")
                return
            }
            let lock = try SQLiteWriteLock(path: path)
            var start = ContinuousClock.now
            let push = try await server.push(PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2")]), token: alice)
            let pushSeconds = seconds(since: start)
            #expect(push.status == 503, "\(push.text)")
            #expect(push.errorCode == .unavailable, "\(push.text)")
            #expect(push.headers["retry-after"] == "5")
            #expect(pushSeconds < 5, "the push took \(pushSeconds) s")

            let pull = try await server.pull(PullRequest(clientID: "b"), token: alice)
            #expect(pull.status == 200, "reads go on: \(pull.text)")
            #expect(try pull.decode(PullResponse.self).changes.map(\.recordID) == ["n1"])

            start = .now
            let ready = try await server.send(.GET, "/ready")
            let readySeconds = seconds(since: start)
            #expect(ready.status == 503)
            #expect(ready.errorCode == .unavailable)
            #expect(readySeconds < 5, "/ready took \(readySeconds) s")
            print("SQLite write-locked (busy timeout 1 s): push 503 in \(pushSeconds) s, /ready 503 in \(readySeconds) s")

            lock.unlock()
            #expect(try await server.send(.GET, "/ready").status == 200)
            let again = try await server.push(PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2")]), token: alice)
            #expect(again.status == 200, "\(again.text)")
            #expect(try again.decode(PushResponse.self).results.first?.status == .applied)
        }
    }
}
