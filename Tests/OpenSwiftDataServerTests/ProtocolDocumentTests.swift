import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOHTTP1
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

/// Replays the request/answer examples of docs/protocol.md against a fresh server.
@Suite("docs/protocol.md examples", .serialized)
struct ProtocolDocumentTests {
    struct Example {
        var method: HTTPMethod
        var path: String
        var user: String?
        var body: String
        var status: Int
        var answer: String
        var line: Int
        /// The request's headers other than `Authorization`.
        var headers: [String: String] = [:]
        /// Messages the live channel must send next (a ```live block after this example).
        var liveMessages: [String] = []
    }

    /// The ```http blocks of the document, paired request → answer.
    static func examples() throws -> [Example] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/protocol.md")
        let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
        var blocks: [(line: Int, text: [String])] = []
        var index = 0
        while index < lines.count {
            if lines[index] == "```http" || lines[index] == "```live" {
                let start = index + 1
                var end = start
                while end < lines.count, lines[end] != "```" { end += 1 }
                blocks.append((start, (lines[index] == "```live" ? ["LIVE"] : []) + Array(lines[start..<end])))
                index = end
            }
            index += 1
        }
        var examples: [Example] = []
        var pending: (method: HTTPMethod, path: String, user: String?, body: String, line: Int, headers: [String: String])?
        for block in blocks {
            guard let first = block.text.first else { continue }
            if first == "LIVE" {
                guard !examples.isEmpty else { throw ExampleError(message: "a live block before any example, at line \(block.line)") }
                examples[examples.count - 1].liveMessages += block.text.dropFirst().filter { !$0.isEmpty }
                continue
            }
            let separator = block.text.firstIndex(of: "") ?? block.text.count
            let body = block.text.dropFirst(separator + 1).joined(separator: "\n")
            if first.hasPrefix("HTTP/1.1 ") {
                let request = try #require(pending, "an answer without a request at line \(block.line)")
                examples.append(
                    Example(
                        method: request.method, path: request.path, user: request.user, body: request.body, status: Int(first.dropFirst(9)) ?? 0,
                        answer: body, line: request.line, headers: request.headers))
                pending = nil
            } else {
                let parts = first.split(separator: " ")
                var user: String?
                var headers: [String: String] = [:]
                for header in block.text[1..<separator] {
                    if header.hasPrefix("Authorization: Bearer <token of ") {
                        user = String(header.dropFirst("Authorization: Bearer <token of ".count).dropLast())
                    } else if let colon = header.firstIndex(of: ":") {
                        headers[String(header[..<colon])] = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    }
                }
                pending = (HTTPMethod(rawValue: String(parts[0])), String(parts[1]), user, body, block.line, headers)
            }
        }
        return examples
    }

    struct ExampleError: Error {
        var message: String
    }

    /// Whether every line of a text answer's example is a line of `actual` ("…" matches any
    /// text); returns the lines that are not.
    static func missingLines(_ expected: String, in actual: String) -> [String] {
        let lines = actual.components(separatedBy: "\n")
        return expected.components(separatedBy: "\n").filter { !$0.isEmpty }.filter { pattern in
            let parts = pattern.components(separatedBy: "…").map { NSRegularExpression.escapedPattern(for: $0) }
            guard let regex = try? NSRegularExpression(pattern: "^" + parts.joined(separator: ".*") + "$") else { return true }
            return !lines.contains { regex.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }
        }
    }

    /// Whether `actual` holds everything `expected` shows ("…" matches any value).
    static func matches(_ expected: Any, _ actual: Any?, path: String, mismatches: inout [String]) {
        if let text = expected as? String, text == "…" {
            if actual == nil { mismatches.append("\(path): missing") }
            return
        }
        switch expected {
        case let object as [String: Any]:
            guard let actualObject = actual as? [String: Any] else {
                mismatches.append("\(path): not an object")
                return
            }
            for (key, value) in object { matches(value, actualObject[key], path: path + "." + key, mismatches: &mismatches) }
        case let array as [Any]:
            guard let actualArray = actual as? [Any], actualArray.count == array.count else {
                mismatches.append("\(path): expected \(array.count) elements, got \(String(describing: actual))")
                return
            }
            for (offset, value) in array.enumerated() { matches(value, actualArray[offset], path: "\(path)[\(offset)]", mismatches: &mismatches) }
        default:
            if let actual, (expected as? NSObject)?.isEqual(actual) == true { return }
            mismatches.append("\(path): expected \(expected), got \(String(describing: actual))")
        }
    }

    @Test("every request/answer example of docs/protocol.md is what the server does")
    func replay() async throws {
        let examples = try Self.examples()
        #expect(examples.count >= 15)
        try await LiveServer.run { server in
            var cursor = ""
            var live: LiveChannel?
            for example in examples {
                var path = example.path
                path = path.replacingOccurrences(of: "<cursor>", with: cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor)
                var token: String?
                if let user = example.user { token = try await server.token(user) }
                if example.status == 101 {
                    // A WebSocket upgrade: open the live channel; its messages are compared
                    // with the example's answer, and with the ```live blocks that follow.
                    live = try LiveChannel(port: server.port, token: token ?? "")
                    try await live?.expect(example.answer.components(separatedBy: "\n").filter { !$0.isEmpty }, line: example.line)
                    continue
                }
                let answer = try await server.send(
                    example.method, path, token: token, headers: example.headers, body: example.body.isEmpty ? nil : Data(example.body.utf8))
                #expect(answer.status == example.status, "line \(example.line): \(example.method) \(example.path) → \(answer.status) \(answer.text)")
                if let expected = try? JSONSerialization.jsonObject(with: Data(example.answer.utf8)) {
                    let actual = try JSONSerialization.jsonObject(with: answer.body)
                    var mismatches: [String] = []
                    Self.matches(expected, actual, path: "$", mismatches: &mismatches)
                    #expect(mismatches.isEmpty, "line \(example.line): \(mismatches.joined(separator: "; ")) in \(answer.text)")
                    if let object = actual as? [String: Any], let next = object["cursor"] as? String { cursor = next }
                } else {
                    let missing = Self.missingLines(example.answer, in: answer.text)
                    #expect(missing.isEmpty, "line \(example.line): lines not in the answer: \(missing) in \(answer.text)")
                }
                if !example.liveMessages.isEmpty {
                    let channel = try #require(live, "line \(example.line): a live block without an open live channel")
                    try await channel.expect(example.liveMessages, line: example.line)
                }
            }
            live?.close()
        }
    }
}

/// A live channel opened by a replayed example: its messages, in order.
final class LiveChannel: Sendable {
    private let task: Task<Void, any Error>
    private let messages: AsyncStream<String>

    init(port: Int, token: String) throws {
        let (messages, continuation) = AsyncStream<String>.makeStream()
        self.messages = messages
        var logger = Logger(label: "protocol-doc-live")
        logger.logLevel = .warning
        var headers = HTTPFields()
        headers[.authorization] = "Bearer \(token)"
        task = Task { [logger, headers] in
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/v1/live", configuration: WebSocketClientConfiguration(additionalHeaders: headers), logger: logger
            ) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { continuation.yield(text) }
                }
                continuation.finish()
            }
        }
    }

    /// Reads the next messages and compares them with the document's, in order.
    func expect(_ expected: [String], line: Int) async throws {
        for text in expected {
            let messages = messages
            let received = try await withTimeout(messageDeadline) { () -> String? in
                var iterator = messages.makeAsyncIterator()
                return await iterator.next()
            }
            let actualText = try #require(received, "line \(line): the live channel closed before \(text)")
            let expectedObject = try JSONSerialization.jsonObject(with: Data(text.utf8))
            let actual = try JSONSerialization.jsonObject(with: Data(actualText.utf8))
            var mismatches: [String] = []
            ProtocolDocumentTests.matches(expectedObject, actual, path: "$", mismatches: &mismatches)
            #expect(mismatches.isEmpty, "line \(line): live message \(mismatches.joined(separator: "; ")) in \(actualText)")
        }
    }

    func close() { task.cancel() }
}
