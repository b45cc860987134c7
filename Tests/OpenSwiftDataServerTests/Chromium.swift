import Foundation
import OpenSwiftDataTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A headless Chromium the test starts as a process of its own, driven through the DevTools
/// protocol on a port the system picks (`--remote-debugging-port=0`; the browser prints the
/// WebSocket's URL on standard error).
///
/// The browser is found as `OSD_TEST_CHROMIUM` or as `chromium`, `chromium-browser`,
/// `google-chrome` on the `PATH` (Debian: `apt-get install -y chromium`). Tests that need it
/// are skipped, saying why, when there is none, unless `OSD_TEST_REQUIRE_CHROMIUM=1` (CI sets
/// it), which makes its absence a failure.
final class Chromium: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The browser's executable, if there is one.
    static let executable: String? = {
        if let path = ProcessInfo.processInfo.environment["OSD_TEST_CHROMIUM"], !path.isEmpty {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            for directory in directories {
                let path = "\(directory)/\(name)"
                if FileManager.default.isExecutableFile(atPath: path) { return path }
            }
        }
        return nil
    }()

    /// Whether the browser must be there (CI): its absence then fails the tests that need it.
    static let required = ProcessInfo.processInfo.environment["OSD_TEST_REQUIRE_CHROMIUM"] == "1"

    /// Why tests that need the browser are skipped.
    static let absence = "chromium is not installed (apt-get install -y chromium, or set OSD_TEST_CHROMIUM); CI installs it"

    private let process: Process
    private let profile: TemporaryDirectory
    private let errors: Output
    /// The DevTools WebSocket of the browser.
    let webSocketURL: String

    /// What the browser writes on standard error: kept (its last 64 KiB) for failures, and
    /// searched for the DevTools URL.
    private final class Output: Sendable {
        private let text = Mutex("")
        private let found = Mutex<(url: String?, waiter: CheckedContinuation<String, any Error>?)>((nil, nil))

        func append(_ data: Data) {
            let chunk = String(decoding: data, as: UTF8.self)
            let all = text.withLock { text in
                text += chunk
                if text.utf8.count > 65_536 { text = String(text.suffix(32_768)) }
                return text
            }
            guard let match = all.firstMatch(of: /DevTools listening on (ws:\/\/\S+)/) else { return }
            let url = String(match.1)
            let waiter = found.withLock { state -> CheckedContinuation<String, any Error>? in
                guard state.url == nil else { return nil }
                state.url = url
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: url)
        }

        var tail: String { text.withLock { String($0.suffix(2_000)) } }

        func url(within seconds: Double, process: Process) async throws -> String {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while ContinuousClock.now < deadline {
                if let url = found.withLock({ $0.url }) { return url }
                guard process.isRunning else { throw Failure(description: "chromium exited (\(process.terminationStatus)): \(tail)") }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw Failure(description: "chromium printed no DevTools URL within \(seconds) s: \(tail)")
        }
    }

    private init(process: Process, profile: TemporaryDirectory, errors: Output, webSocketURL: String) {
        self.process = process
        self.profile = profile
        self.errors = errors
        self.webSocketURL = webSocketURL
    }

    /// Starts the browser, headless, on a fresh profile.
    static func launch() async throws -> Chromium {
        guard let executable else { throw Failure(description: absence) }
        let profile = try TemporaryDirectory()
        var arguments = [
            "--headless", "--disable-gpu", "--hide-scrollbars", "--mute-audio", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-sync", "--disable-dev-shm-usage",
            "--disable-features=Translate,MediaRouter,OptimizationHints", "--remote-debugging-port=0", "--user-data-dir=\(profile.url.path)",
            // Hummingbird's WebSocket client sends `Origin: ws://127.0.0.1`, which the DevTools
            // server refuses unless it is allowed.
            "--remote-allow-origins=ws://127.0.0.1",
        ]
        // Chromium refuses to run as root inside its sandbox.
        if getuid() == 0 { arguments.append("--no-sandbox") }
        arguments.append("about:blank")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardError = pipe
        let errors = Output()
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
            } else {
                errors.append(data)
            }
        }
        try process.run()
        do {
            let url = try await errors.url(within: 60, process: process)
            return Chromium(process: process, profile: profile, errors: errors, webSocketURL: url)
        } catch {
            stop(process)
            throw error
        }
    }

    /// What the browser wrote on standard error last.
    var output: String { errors.tail }

    /// Stops the browser (it takes its own child processes down) and removes its profile.
    func close() async {
        Self.stop(process)
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        profile.cleanUp()
    }

    private static func stop(_ process: Process) {
        if process.isRunning { process.terminate() }
    }
}
