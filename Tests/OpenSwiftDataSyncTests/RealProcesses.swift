import Foundation
import OpenSwiftDataServer

/// Real processes for the tests that kill them: the package's executables, found beside the
/// test bundle, and an `osd-server` on a port the system picks.
enum RealProcesses {
    /// Starts `process`, one start at a time across the tests that start processes:
    /// Foundation's `Process.run()` crashed once in CI while another test started one.
    static func start(_ process: Process) throws {
        try launchLock.withLock { try process.run() }
    }

    private static let launchLock = NSLock()

    static let secret = "real-process-kill-test-secret-of-32-bytes"

    static func built(_ name: String) throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = root.appendingPathComponent(".build/debug/\(name)")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw SyncServiceError(500, .internalError, "\(name) is not built (swift build --build-tests builds it)")
        }
        return candidate
    }

    /// A running `osd-server` and the port it listens on.
    struct ServerProcess {
        let process: Process
        let port: Int
    }

    static func startServer(database: String, log: String) async throws -> ServerProcess {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = try built("osd-server")
        process.arguments = ["--port", "0", "--database", database, "--jwt-secret", secret, "--log-level", "error"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardError = FileHandle.nullDevice
        try RealProcesses.start(process)
        for _ in 0..<3000 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: "listening on http://127.0.0.1:") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits) { return ServerProcess(process: process, port: port) }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        process.terminate()
        throw SyncServiceError(500, .internalError, "osd-server did not start")
    }

    static func token(user: String) throws -> String {
        let process = Process()
        process.executableURL = try built("osd-server")
        process.arguments = ["token", "--user", user, "--jwt-secret", secret]
        let pipe = Pipe()
        process.standardOutput = pipe
        try RealProcesses.start(process)
        let data = try pipe.fileHandleForReading.readToEnd() ?? Data()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
    }
}

/// One test's folder for real processes: the server's database, the clients' stores, and the
/// files each process writes its output to. A test removes it with `defer { folder.remove() }`.
final class ProcessFolder {
    let url: URL
    /// A token of alice's for the clients.
    let token: String
    private var outputs = 0

    init(_ prefix: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        token = try RealProcesses.token(user: "alice")
    }

    func remove() { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Starts a client (`SyncedNotes`, `SyncedAttachments`…) as alice against the server on
    /// `port`, `arguments` after its server, user and token. Returns the process and the file
    /// its standard output goes to.
    func launch(_ executable: URL, port: Int, _ arguments: [String]) throws -> (Process, String) {
        outputs += 1
        let output = path("out\(outputs).txt")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--server", "http://127.0.0.1:\(port)", "--user", "alice", "--token", token] + arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = FileHandle.nullDevice
        try RealProcesses.start(process)
        return (process, output)
    }

    /// What a process wrote to `output` so far.
    func text(_ output: String) -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
}
