import Foundation
import HummingbirdWSClient
import Logging
import NIOCore

/// A client of the Chrome DevTools protocol over the browser's WebSocket
/// (`ws://127.0.0.1:<port>/devtools/browser/<id>`), with Hummingbird's WebSocket client: it
/// sends commands and awaits their answers, and keeps the events it receives for the test to
/// look through. Commands for a page carry the session id of `Target.attachToTarget` with
/// `flatten: true`, so that one socket serves the browser and its pages.
actor DevToolsConnection {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// An event the browser sent.
    struct Event: Sendable {
        var method: String
        var params: JSONValue
        var sessionID: String?
    }

    private var outbound: WebSocketOutboundWriter?
    private var ready: [CheckedContinuation<Void, any Error>] = []
    private var answers: [Int: CheckedContinuation<JSONValue, any Error>] = [:]
    private var nextID = 0
    private var ended: Failure?
    private var socket: Task<Void, Never>?
    /// Every event received, in order.
    private(set) var events: [Event] = []
    private var eventWaiters: [Int: (method: String, session: String?, continuation: CheckedContinuation<Void, any Error>)] = [:]

    /// Connects to the browser's DevTools WebSocket.
    static func connect(url: String) async throws -> DevToolsConnection {
        let connection = DevToolsConnection()
        await connection.open(url: url)
        try await connection.waitUntilOpen()
        return connection
    }

    private func open(url: String) {
        var logger = Logger(label: "devtools")
        logger.logLevel = .warning
        socket = Task {
            do {
                // Screenshots come as one message of a few hundred kilobytes of base64.
                try await WebSocketClient.connect(url: url, configuration: WebSocketClientConfiguration(maxFrameSize: 64 << 20), logger: logger) {
                    inbound, outbound, _ in
                    await self.opened(outbound)
                    for try await message in inbound.messages(maxSize: 64 << 20) {
                        if case .text(let text) = message { await self.receive(text) }
                    }
                }
                self.end(Failure(description: "the browser closed the DevTools connection"))
            } catch {
                self.end(Failure(description: "the DevTools connection failed: \(error)"))
            }
        }
    }

    private func waitUntilOpen() async throws {
        if outbound != nil { return }
        if let ended { throw ended }
        let timer = Task {
            try await Task.sleep(for: .seconds(60))
            self.end(Failure(description: "the DevTools connection did not open within 60 s"))
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { ready.append($0) }
    }

    private func opened(_ writer: WebSocketOutboundWriter) {
        outbound = writer
        for waiter in ready { waiter.resume() }
        ready.removeAll()
    }

    private func end(_ failure: Failure) {
        ended = ended ?? failure
        for waiter in ready { waiter.resume(throwing: failure) }
        ready.removeAll()
        for answer in answers.values { answer.resume(throwing: failure) }
        answers.removeAll()
        for waiter in eventWaiters.values { waiter.continuation.resume(throwing: failure) }
        eventWaiters.removeAll()
    }

    private func receive(_ text: String) {
        guard let message = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else { return }
        if let id = message["id"]?.number.map({ Int($0) }) {
            guard let answer = answers.removeValue(forKey: id) else { return }
            if let error = message["error"] {
                answer.resume(throwing: Failure(description: "DevTools refused: \(error["message"]?.string ?? "\(error)")"))
            } else {
                answer.resume(returning: message["result"] ?? .null)
            }
        } else if let method = message["method"]?.string {
            let event = Event(method: method, params: message["params"] ?? .null, sessionID: message["sessionId"]?.string)
            events.append(event)
            for (id, waiter) in eventWaiters where waiter.method == event.method && waiter.session == event.sessionID {
                eventWaiters.removeValue(forKey: id)?.continuation.resume()
            }
        }
    }

    /// Waits for an event named `method` of `session` received after the first `mark` events.
    func waitForEvent(_ method: String, session: String?, after mark: Int, within seconds: Double = 60) async throws {
        if events.dropFirst(mark).contains(where: { $0.method == method && $0.sessionID == session }) { return }
        if let ended { throw ended }
        nextID += 1
        let id = nextID
        let timer = Task {
            try await Task.sleep(for: .seconds(seconds))
            self.eventWaiters.removeValue(forKey: id)?.continuation.resume(throwing: Failure(description: "no \(method) within \(seconds) s"))
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { eventWaiters[id] = (method, session, $0) }
    }

    /// Sends a command (to a page when `session` is given) and returns its result; a command
    /// not answered within `seconds`, or whose task is cancelled, fails.
    @discardableResult
    func send(_ method: String, _ params: JSONValue = [:], session: String? = nil, within seconds: Double = 60) async throws -> JSONValue {
        if let ended { throw ended }
        guard let outbound else { throw Failure(description: "the DevTools connection is not open") }
        nextID += 1
        let id = nextID
        var message: [String: JSONValue] = ["id": .number(Double(id)), "method": .string(method), "params": params]
        if let session { message["sessionId"] = .string(session) }
        let text = String(decoding: try JSONEncoder().encode(JSONValue.object(message)), as: UTF8.self)
        let timer = Task {
            try await Task.sleep(for: .seconds(seconds))
            self.fail(id, "\(method) was not answered within \(seconds) s")
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                answers[id] = continuation
                Task {
                    do {
                        try await outbound.write(.text(text))
                    } catch {
                        self.fail(id, "sending \(method) failed: \(error)")
                    }
                }
            }
        } onCancel: {
            Task { await self.fail(id, "\(method) was cancelled") }
        }
    }

    private func fail(_ id: Int, _ reason: String) {
        answers.removeValue(forKey: id)?.resume(throwing: Failure(description: reason))
    }

    /// Closes the socket.
    func close() {
        socket?.cancel()
        end(Failure(description: "closed"))
    }
}
