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

    /// Runs a command to its end, its output in a file (the server `pg_ctl start` leaves
    /// running would hold a pipe open). Spawned and reaped here rather than by Foundation's
    /// `Process`, whose `waitUntilExit()` never returned for `pg_ctl start` (the command had
    /// exited; its daemon's start left Foundation's monitor without the news).
    ///
    /// The command gets standard input, output and error and no other descriptor of the test
    /// process: the server it leaves running would otherwise hold, until the end of the run,
    /// every pipe other tests had open at that moment (Foundation's `Pipe` is not close-on-exec),
    /// and a test reading one of them to its end would wait for good.
    static func run(_ arguments: [String]) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("osd-pg-outage-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        try closeOtherDescriptors(&actions)
        // Safety: the C strings are made by strdup, live until the deferred free, and the array
        // ends with the nil posix_spawn needs; posix_spawn copies them into the child.
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "\(arguments[0]) could not start: errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw Failure(description: "waiting for \(arguments[0]) failed: errno \(errno)") }
        }
        // The exit code of a process that exited (WIFEXITED, WEXITSTATUS).
        let exited = status & 0x7F == 0
        guard exited, (status >> 8) & 0xFF == 0 else {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw Failure(description: "\(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
    }

    /// Adds to `actions` the closing of every descriptor above standard error, at once with
    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later, looked up at run time
    /// because Swift's Glibc module does not declare it), else one by one from the descriptors
    /// open now (which misses one another test opens between the listing and the spawn).
    private static func closeOtherDescriptors(_ actions: inout posix_spawn_file_actions_t) throws {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") {
            // Safety: the symbol is glibc's `int posix_spawn_file_actions_addclosefrom_np(
            // posix_spawn_file_actions_t *, int)`, the C signature `AddCloseFrom` declares.
            let addCloseFrom = unsafeBitCast(symbol, to: AddCloseFrom.self)
            let added = addCloseFrom(&actions, 3)
            guard added == 0 else { throw Failure(description: "posix_spawn_file_actions_addclosefrom_np failed: errno \(added)") }
            return
        }
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { Int32($0) }
        // A descriptor closed meanwhile (the listing's own) fails its close in the child, which
        // posix_spawn ignores.
        for descriptor in open where descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
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

@Suite("A private PostgreSQL cluster's commands")
struct PrivatePostgresClusterTests {
    /// `pg_ctl start` leaves a server running for the rest of the run: a pipe it held would
    /// never reach its end for the test reading it (the simulator's sweep waited for good so).
    @Test("a command the cluster runs holds no descriptor of the test process but its standard ones")
    func commandsHoldNoPipe() throws {
        let pipe = Pipe()
        let descriptor = pipe.fileHandleForWriting.fileDescriptor
        #expect(FileManager.default.fileExists(atPath: "/proc/self/fd/\(descriptor)"))
        // `test` is the shell's own command: /proc/self is the spawned shell.
        try PrivatePostgresCluster.run(["/bin/sh", "-c", "test ! -e /proc/self/fd/\(descriptor)"])
        try pipe.fileHandleForWriting.close()
    }
}

@Suite("The storage fails: 503 unavailable with Retry-After, /ready says so, and service resumes on its own", .serialized)
struct StorageOutageTests {
    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// What a writer saw: each push's status and time, and how many of its mutations were
    /// applied.
    struct WriterLog: Sendable {
        var statuses: [Int: Int] = [:]
        var slowest503: Double = 0
        var applied = 0
    }

    /// Pushes one insert per mutation, ids ascending, until `stop` is set; a 503 is retried
    /// with the same mutation (as the engine does), anything else is only recorded.
    private func write(_ server: LiveServer, client: ClientID, token: String, stop: LockedBox<Bool>) async throws -> WriterLog {
        var log = WriterLog()
        var next: MutationID = 1
        while !stop.value {
            let start = ContinuousClock.now
            let answer = try await server.push(
                PushRequest(clientID: client, mutations: [mutation(next, .insert, "\(client)-\(next)")]), token: token)
            log.statuses[answer.status, default: 0] += 1
            switch answer.status {
            case 200:
                if try answer.decode(PushResponse.self).results.first?.status == .applied { log.applied += 1 }
                next += 1
            case 503:
                log.slowest503 = max(log.slowest503, seconds(since: start))
                try await Task.sleep(for: .milliseconds(100))
            default:
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        return log
    }

    @Test(
        "PostgreSQL stopped and started under four writers: /ready, pushes and pulls are 503 unavailable with Retry-After, answered after the 2 s connect timeout rather than held; started again, every writer resumes without a restart and each acknowledged save is stored once",
        arguments: Backend.postgresOnly)
    func postgresOutage(_ backend: Backend) async throws {
        // The connect timeout (2 s) is what an answer takes, and the test prints each figure;
        // the bound proves an answer comes instead of a wait of a minute or forever, with room
        // for a machine that runs the whole suite at once on two cores (up to 12 s seen).
        let answerBound = 20.0
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

            let stop = LockedBox(false)
            let writers = (0..<4).map { index in
                Task { try await write(server, client: "w\(index)", token: alice, stop: stop) }
            }
            try await Task.sleep(for: .milliseconds(500))

            try cluster.stop()
            var start = ContinuousClock.now
            let ready = try await server.send(.GET, "/ready")
            let readySeconds = seconds(since: start)
            #expect(ready.status == 503)
            #expect(ready.errorCode == .unavailable)
            #expect(readySeconds < answerBound, "/ready took \(readySeconds) s")

            start = .now
            let push = try await server.push(PushRequest(clientID: "a", mutations: [mutation(2, .insert, "n2")]), token: alice)
            let pushSeconds = seconds(since: start)
            #expect(push.status == 503, "\(push.text)")
            #expect(push.errorCode == .unavailable, "\(push.text)")
            #expect(push.headers["retry-after"] == "5")
            #expect(pushSeconds < answerBound, "the push took \(pushSeconds) s")

            start = .now
            let pull = try await server.pull(PullRequest(clientID: "a"), token: alice)
            let pullSeconds = seconds(since: start)
            #expect(pull.status == 503 && pull.errorCode == .unavailable, "\(pull.text)")
            #expect(pull.headers["retry-after"] != nil)
            #expect(pullSeconds < answerBound, "the pull took \(pullSeconds) s")
            print("PostgreSQL down under 4 writers: /ready 503 in \(readySeconds) s, push 503 in \(pushSeconds) s, pull 503 in \(pullSeconds) s")

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
            // Ready again: `/ready` answers 200 within a few tries (each bounded by the 2 s
            // connect timeout, which a busy machine can overrun once).
            var readyAgain = false
            for _ in 0..<10 where !readyAgain {
                readyAgain = try await server.send(.GET, "/ready").status == 200
                if !readyAgain { try await Task.sleep(for: .milliseconds(500)) }
            }
            #expect(readyAgain, "/ready did not answer 200 after the recovery")

            // The writers go on a little after the recovery, then stop.
            try await Task.sleep(for: .milliseconds(500))
            stop.value = true
            var logs: [WriterLog] = []
            for writer in writers { logs.append(try await writer.value) }
            for (index, log) in logs.enumerated() {
                print("writer w\(index): \(log.applied) applied, statuses \(log.statuses), slowest 503 \(log.slowest503) s")
                #expect(Set(log.statuses.keys).isSubset(of: [200, 503]), "w\(index) got \(log.statuses)")
                #expect(log.statuses[503, default: 0] > 0, "w\(index) never met the outage")
                #expect(log.slowest503 < answerBound, "a 503 took \(log.slowest503) s")
            }

            // Every acknowledged save is stored, once.
            var recordIDs: [RecordID] = []
            var cursor: String?
            while true {
                let page = try await server.pull(PullRequest(clientID: "reader", cursor: cursor), token: alice).decode(PullResponse.self)
                recordIDs += page.changes.map(\.recordID)
                cursor = page.cursor
                if !page.hasMore { break }
            }
            #expect(recordIDs.count == Set(recordIDs).count, "a record pulled twice")
            for (index, log) in logs.enumerated() {
                let stored = recordIDs.filter { $0.hasPrefix("w\(index)-") }
                #expect(stored.count == log.applied, "w\(index): \(log.applied) applied, \(stored.count) stored")
            }
            #expect(Set(recordIDs).isSuperset(of: ["n1", "n2"]))
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
