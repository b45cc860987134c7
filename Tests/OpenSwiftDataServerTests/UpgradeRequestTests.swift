import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One request written byte for byte on a fresh connection, and what comes back: the answer's
/// head (status line and headers) and as much body as its `content-length` says, or what was
/// read before the server closed the connection.
struct RawExchange {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The status line's code, or nil when no status line came back.
    var status: Int?
    var head: String
    var body: Data
    /// Everything read (for failure messages).
    var raw: String

    func header(_ name: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    /// Sends `request` to 127.0.0.1:`port` and reads the answer's head (and its body, unless
    /// `withBody` is false, as for HEAD), giving up after `timeout` seconds without data.
    static func send(_ request: [UInt8], port: Int, withBody: Bool = true, timeout: Int = Int(messageDeadline)) async throws -> RawExchange {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try exchange(request, port: port, withBody: withBody, timeout: timeout) })
            }
        }
    }

    private static func exchange(_ request: [UInt8], port: Int, withBody: Bool, timeout: Int) throws -> RawExchange {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect() to port \(port) failed") }
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }  // the server may answer and close before reading it all
            sent += count
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        var headEnd: Int?
        while true {
            if let end = headEnd {
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                var exchange = RawExchange(status: nil, head: head, body: Data(), raw: String(decoding: buffer, as: UTF8.self))
                let length = withBody ? Int(exchange.header("content-length") ?? "0") ?? 0 : 0
                if buffer.count - (end + 4) >= length || !receive(into: &buffer, chunk: &chunk, descriptor) {
                    let first = head.split(separator: "\r\n").first.map(String.init) ?? ""
                    let fields = first.split(separator: " ")
                    exchange.status = fields.count >= 2 && fields[0].hasPrefix("HTTP/1.") ? Int(fields[1]) : nil
                    exchange.body = Data(buffer[(end + 4)...].prefix(length))
                    return exchange
                }
                continue
            }
            if let end = Self.headEnd(buffer) {
                headEnd = end
                continue
            }
            guard receive(into: &buffer, chunk: &chunk, descriptor) else {
                return RawExchange(status: nil, head: "", body: Data(), raw: String(decoding: buffer, as: UTF8.self))
            }
        }
    }

    private static func receive(into buffer: inout [UInt8], chunk: inout [UInt8], _ descriptor: Int32) -> Bool {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        buffer += chunk[0..<count]
        return true
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}

@Suite("Requests with Upgrade headers are answered", .serialized)
struct UpgradeRequestTests {
    private func request(_ lines: [String], body: String = "") -> [UInt8] {
        Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
    }

    @Test("an h2c upgrade (curl --http2) is served as plain HTTP/1.1: GET /health is 200, and the connection serves the next request")
    func h2cUpgradeIsIgnored() async throws {
        try await LiveServer.run { server in
            let health = try await RawExchange.send(
                request([
                    "GET /health HTTP/1.1", "Host: 127.0.0.1:\(server.port)", "User-Agent: curl/8.5.0", "Accept: */*",
                    "Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA",
                ]), port: server.port)
            #expect(health.status == 200, "\(health.raw)")
            #expect(String(decoding: health.body, as: UTF8.self).contains("ok"))
            #expect(health.header("upgrade") == nil, "the upgrade is not taken")
            let ready = try await RawExchange.send(
                request(["GET /ready HTTP/1.1", "Host: x", "Connection: Upgrade", "Upgrade: h2c"]), port: server.port)
            #expect(ready.status == 200, "\(ready.raw)")
            let push = try await RawExchange.send(
                request(
                    [
                        "POST /v1/push HTTP/1.1", "Host: x", "Connection: Upgrade", "Upgrade: foo/2", "Content-Type: application/json",
                        "Content-Length: 2",
                    ], body: "{}"), port: server.port)
            #expect(push.status == 401, "no token: answered as the route answers it, \(push.raw)")
        }
    }

    @Test("an incomplete WebSocket handshake is a 400 with the JSON error body and an x-request-id, naming what is missing")
    func incompleteWebSocketHandshake() async throws {
        try await LiveServer.run { server in
            let cases: [([String], String)] = [
                (["GET /v1/live HTTP/1.1", "Host: x", "Connection: Upgrade", "Upgrade: websocket"], "Sec-WebSocket-Key"),
                (
                    ["GET /v1/live HTTP/1.1", "Host: x", "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="],
                    "Sec-WebSocket-Version"
                ),
                (
                    [
                        "GET /v1/live HTTP/1.1", "Host: x", "Connection: Upgrade", "Upgrade: websocket",
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 8",
                    ], "Sec-WebSocket-Version"
                ),
                (
                    [
                        "GET /v1/live HTTP/1.1", "Host: x", "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Key: short",
                        "Sec-WebSocket-Version: 13",
                    ], "Sec-WebSocket-Key"
                ),
                (
                    [
                        "GET /v1/live HTTP/1.1", "Host: x", "Upgrade: websocket", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                        "Sec-WebSocket-Version: 13",
                    ], "Connection: Upgrade"
                ),
                (["POST /v1/live HTTP/1.1", "Host: x", "Connection: Upgrade", "Upgrade: websocket", "Content-Length: 0"], "GET"),
                (["GET /health HTTP/1.1", "Host: x", "Connection: Upgrade", "Upgrade: WebSocket"], "Sec-WebSocket-Key"),
            ]
            for (lines, named) in cases {
                let answer = try await RawExchange.send(request(lines), port: server.port)
                #expect(answer.status == 400, "\(lines): \(answer.raw)")
                #expect(answer.header("content-type") == "application/json", "\(answer.raw)")
                #expect(answer.header("x-request-id")?.isEmpty == false, "\(answer.raw)")
                let error = try? JSONDecoder().decode(ErrorResponse.self, from: answer.body)
                #expect(error?.error.code == .malformedRequest, "\(answer.raw)")
                #expect(error?.error.message.contains(named) == true, "\(error?.error.message ?? answer.raw) names \(named)")
            }
            // A client cannot forge the guard's mark.
            let forged = try await RawExchange.send(request(["GET /health HTTP/1.1", "Host: x", "osd-refused-upgrade: forged"]), port: server.port)
            #expect(forged.status == 200, "\(forged.raw)")
        }
    }

    @Test("a request HTTP cannot parse is a 400 with the JSON error body, then the connection closes")
    func unparseableRequest() async throws {
        try await LiveServer.run { server in
            for lines in [["GET /health HTTP/1.1", "Host: x", "Bad Header Line"], ["G@T /health HTTP/1.1", "Host: x"]] {
                let answer = try await RawExchange.send(request(lines), port: server.port)
                #expect(answer.status == 400, "\(lines): \(answer.raw)")
                #expect((try? JSONDecoder().decode(ErrorResponse.self, from: answer.body))?.error.code == .malformedRequest, "\(answer.raw)")
            }
        }
    }

    /// Fuzz: 1,000 requests from a fixed seed, each on a new connection: a method (the usual
    /// ones, HEAD, and made-up tokens), a path (the server's routes, unknown ones, odd
    /// queries), headers drawn from Connection and Upgrade variants (h2c, websocket in any case,
    /// lists, unknown protocols), WebSocket keys and versions (valid, missing, wrong,
    /// repeated), Authorization, Content-Type and made-up headers, and a body (none, JSON,
    /// garbage; sent with Content-Length or chunked). About one in twenty is made unparseable
    /// on purpose (a header line without a colon, a method with a character HTTP forbids).
    ///
    /// What the test allows: every request, parseable or not, gets an HTTP/1.1 status line back
    /// (a complete WebSocket handshake gets `101` or a refusal; anything else an HTTP answer);
    /// an unparseable one gets `400`. No request may be met with a close or silence.
    @Test("fuzz: 1,000 seeded random requests with Upgrade and Connection variants each get a status line back")
    func fuzz() async throws {
        try await LiveServer.run { server in
            var random = SeededGenerator(seed: 0x05D_5E4E_2026)
            let token = try await server.token("fuzz")
            var unanswered: [String] = []
            var statuses: [Int: Int] = [:]
            for index in 0..<1_000 {
                let (bytes, isHead, malformed) = Self.randomRequest(&random, port: server.port, token: token)
                let answer = try await RawExchange.send(bytes, port: server.port, withBody: !isHead)
                let text = String(decoding: bytes, as: UTF8.self)
                guard let status = answer.status else {
                    unanswered.append("#\(index): \(text.debugDescription) -> \(answer.raw.debugDescription)")
                    continue
                }
                statuses[status, default: 0] += 1
                if malformed { #expect(status == 400, "#\(index): \(text.debugDescription) -> \(answer.raw.debugDescription)") }
            }
            #expect(unanswered.isEmpty, "\(unanswered.count) of 1,000 requests got no status line:\n\(unanswered.prefix(20).joined(separator: "\n"))")
            print("fuzz statuses: \(statuses.sorted { $0.key < $1.key })")
        }
    }

    static func randomRequest(_ random: inout SeededGenerator, port: Int, token: String) -> (bytes: [UInt8], isHead: Bool, malformed: Bool) {
        func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        let method = random.pick(["GET", "GET", "GET", "POST", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "FETCH", "X-CUSTOM"])
        let path = random.pick([
            "/health", "/ready", "/metrics", "/v1/push", "/v1/pull?protocolVersion=1&clientID=a", "/v1/pull", "/v1/live", "/v1/live?access_token=x",
            "/v1/scopes", "/v1/scopes/team:x/members", "/v1/scopes/user:fuzz/members/bob", "/", "/nope", "/v1/%2e%2e/push", "/health?x=%ff",
            "/v1/live/extra",
        ])
        var headers = ["Host: 127.0.0.1:\(port)"]
        let connection = random.pick([
            "", "Upgrade", "upgrade", "keep-alive", "close", "Upgrade, HTTP2-Settings", "keep-alive, Upgrade", "Upgrade, close",
        ])
        if !connection.isEmpty { headers.append("Connection: \(connection)") }
        let upgrade = random.pick([
            "", "", "websocket", "WebSocket", "h2c", "h2c, websocket", "websocket, h2c", "foo/1", "TLS/1.0", "websocket/13", ",",
        ])
        if !upgrade.isEmpty { headers.append("Upgrade: \(upgrade)") }
        if upgrade == "h2c" || chance(10) { headers.append("HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA") }
        switch random.next() % 5 {
        case 0: headers.append("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==")
        case 1: headers.append(random.pick(["Sec-WebSocket-Key: short", "Sec-WebSocket-Key: ", "Sec-WebSocket-Key: a, b"]))
        case 2:
            headers.append("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==")
            headers.append("Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEA==")
        default: break
        }
        switch random.next() % 4 {
        case 0: headers.append("Sec-WebSocket-Version: 13")
        case 1: headers.append(random.pick(["Sec-WebSocket-Version: 8", "Sec-WebSocket-Version: 13, 8", "Sec-WebSocket-Version: x"]))
        default: break
        }
        if chance(30) { headers.append("Authorization: Bearer \(chance(50) ? token : "not-a-token")") }
        if chance(30) { headers.append("Content-Type: \(random.pick(["application/json", "text/plain", "application/octet-stream"]))") }
        if chance(20) { headers.append("X-Fuzz-\(random.next() % 1000): \(random.next())") }
        if chance(5) { headers.append("Accept-Encoding: gzip, br") }
        var body = ""
        if method != "GET" && method != "HEAD" || chance(10) {
            body = random.pick([
                "", "{}", #"{"protocolVersion":1,"clientID":"f","mutations":[]}"#, "not json",
                String(repeating: "x", count: Int(random.next() % 3000)),
            ])
        }
        var bodyBytes = ""
        if !body.isEmpty && chance(20) {
            headers.append("Transfer-Encoding: chunked")
            bodyBytes = String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"
        } else if !body.isEmpty || method == "POST" || method == "PUT" {
            headers.append("Content-Length: \(body.utf8.count)")
            bodyBytes = body
        }
        // Shuffle the headers after Host, as clients order them differently.
        var rest = Array(headers.dropFirst())
        for index in rest.indices.reversed() where index > 0 {
            rest.swapAt(index, Int(random.next() % UInt64(index + 1)))
        }
        headers = [headers[0]] + rest
        var requestLine = "\(method) \(path) HTTP/1.1"
        let malformed = chance(5)
        if malformed {
            if chance(50) {
                headers.append("This Is Not A Header")
            } else {
                requestLine = "G@T \(path) HTTP/1.1"
            }
        }
        let text = ([requestLine] + headers).joined(separator: "\r\n") + "\r\n\r\n" + bodyBytes
        return (Array(text.utf8), method == "HEAD", malformed)
    }
}
