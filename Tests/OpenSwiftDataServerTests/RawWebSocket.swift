import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A WebSocket client on a bare TCP socket that does only what a test tells it: it can open
/// the live channel and then never read, never answer a close frame, or read frame by frame.
/// Blocking reads run on a dispatch queue, never on the concurrency pool.
/// `@unchecked Sendable`: the descriptor is immutable, and `buffered` is touched only inside
/// the read methods, which a test awaits one at a time (never two reads of one socket at once).
final class RawWebSocket: @unchecked Sendable {
    struct Frame {
        var opcode: UInt8
        var payload: [UInt8]

        var text: String { String(decoding: payload, as: UTF8.self) }
        /// The close code of a close frame.
        var closeCode: Int? { opcode == 8 && payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : nil }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let descriptor: Int32
    private var buffered: [UInt8] = []

    /// Connects to 127.0.0.1:`port`.
    init(port: Int) throws {
        #if canImport(Glibc)
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(descriptor)
            throw Failure(description: "connect() to port \(port) failed")
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// Sends the bytes of `text`.
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard sent == bytes.count else { throw Failure(description: "write() sent \(sent) of \(bytes.count) bytes") }
    }

    /// Sends the opening handshake of `GET path` with `headers`.
    func sendHandshake(path: String = "/v1/live", port: Int, headers: [String: String] = [:]) throws {
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try send(request + "\r\n")
    }

    /// Reads more bytes (blocking, up to the receive timeout); false at end of stream.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        buffered += chunk[0..<count]
        return true
    }

    private func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// The answer's head (status line and headers), and the body when it has a length.
    func readResponse() async throws -> (head: String, body: String) {
        try await blocking { [self] in
            while true {
                if let end = self.headEnd() {
                    let head = String(decoding: self.buffered[0..<end], as: UTF8.self)
                    self.buffered.removeFirst(end + 4)
                    var length = 0
                    for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                        length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                    while self.buffered.count < length {
                        guard self.fill() else { break }
                    }
                    let body = String(decoding: self.buffered.prefix(length), as: UTF8.self)
                    self.buffered.removeFirst(min(length, self.buffered.count))
                    return (head, body)
                }
                guard self.fill() else {
                    throw Failure(description: "the connection closed before an answer: \(String(decoding: self.buffered, as: UTF8.self))")
                }
            }
        }
    }

    private func headEnd() -> Int? {
        guard buffered.count >= 4 else { return nil }
        for index in 0...(buffered.count - 4)
        where buffered[index] == 13 && buffered[index + 1] == 10 && buffered[index + 2] == 13 && buffered[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// The next frame from the server (unmasked), or nil when the connection ends first.
    func readFrame() async throws -> Frame? {
        try await blocking { [self] in
            while true {
                if let frame = self.parseFrame() { return frame }
                guard self.fill() else { return nil }
            }
        }
    }

    /// Reads until the server closes the connection; returns what came after what was read
    /// before, and whether the connection ended (false: the receive timeout passed first).
    func readToEnd() async throws -> (rest: [UInt8], closed: Bool) {
        try await blocking { [self] in
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(self.descriptor, $0.baseAddress, $0.count) }
                if count == 0 { break }
                if count < 0 { return (self.buffered, false) }
                self.buffered += chunk[0..<count]
            }
            let rest = self.buffered
            self.buffered.removeAll()
            return (rest, true)
        }
    }

    private func parseFrame() -> Frame? {
        guard buffered.count >= 2 else { return nil }
        let opcode = buffered[0] & 0x0F
        var length = Int(buffered[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard buffered.count >= 4 else { return nil }
            length = Int(buffered[2]) << 8 | Int(buffered[3])
            offset = 4
        } else if length == 127 {
            guard buffered.count >= 10 else { return nil }
            length = (2..<10).reduce(0) { $0 << 8 | Int(buffered[$1]) }
            offset = 10
        }
        guard buffered.count >= offset + length else { return nil }
        let frame = Frame(opcode: opcode, payload: Array(buffered[offset..<(offset + length)]))
        buffered.removeFirst(offset + length)
        return frame
    }
}
