import Foundation

/// A forward-only reader over protocol JSON, without `JSONDecoder`'s per-value containers: the
/// one reader of push requests (the server), pull pages (the engine) and the server's stored
/// columns, whose shapes it builds from these tokens.
///
/// Every `throw` means "not a shape this reader takes": the caller decodes the same bytes with
/// `JSONDecoder`, which accepts exactly the language it always did and names the fault. The
/// two agree on every input this reader accepts (`SyncJSONReaderTests`).
///
/// Safety: `bytes` is only read at `position` after checking `position < bytes.count` (in
/// `peek`, `byte(at:)`'s callers and the scanning loops), and ranges handed out lie within
/// `0..<bytes.count`; the buffer outlives the reader (it is used only inside
/// `Data.withUnsafeBytes` or `ByteBuffer.withUnsafeReadableBytes`).
package struct SyncJSONReader {
    /// The input is not a shape the reader takes.
    package struct Mismatch: Error {
        /// A mismatch.
        @inlinable package init() {}
    }

    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline var position = 0

    /// A reader at the start of `bytes`.
    @inlinable package init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Reads the whole of `bytes` with `body`: nil when `body` throws or input is left after
    /// it.
    @inlinable
    package static func read<T>(_ bytes: UnsafeRawBufferPointer, _ body: (inout SyncJSONReader) throws -> T) -> T? {
        var reader = SyncJSONReader(bytes: bytes)
        do {
            let value = try body(&reader)
            try reader.end()
            return value
        } catch {
            return nil
        }
    }

    /// Reads the whole of `data` with `body`, as ``read(_:_:)-(UnsafeRawBufferPointer,_)``.
    @inlinable
    package static func read<T>(_ data: Data, _ body: (inout SyncJSONReader) throws -> T) -> T? {
        data.withUnsafeBytes { read($0, body) }
    }

    // MARK: Tokens

    @inlinable
    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    /// The next byte after whitespace, not consumed.
    @inlinable
    package mutating func peek() throws -> UInt8 {
        skipWhitespace()
        guard position < bytes.count else { throw Mismatch() }
        return bytes[position]
    }

    /// The byte at `index` of a range this reader handed out.
    @inlinable
    package func byte(at index: Int) -> UInt8 { bytes[index] }

    /// Consumes `byte`, after whitespace, or throws.
    @inlinable
    package mutating func expect(_ byte: UInt8) throws {
        guard try peek() == byte else { throw Mismatch() }
        position += 1
    }

    /// Consumes `byte` if it is next.
    @inlinable
    package mutating func consume(_ byte: UInt8) throws -> Bool {
        guard try peek() == byte else { return false }
        position += 1
        return true
    }

    /// Consumes `text` (a literal such as `null`), after whitespace, or throws.
    @inlinable
    package mutating func literal(_ text: StaticString) throws {
        skipWhitespace()
        let matches = text.withUTF8Buffer { expected in
            bytes.count - position >= expected.count && expected.indices.allSatisfy { bytes[position + $0] == expected[$0] }
        }
        guard matches else { throw Mismatch() }
        position += text.utf8CodeUnitCount
    }

    /// Consumes `null` if it is next.
    @inlinable
    package mutating func null() throws -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    /// `true` or `false`.
    @inlinable
    package mutating func bool() throws -> Bool {
        switch try peek() {
        case UInt8(ascii: "t"):
            try literal("true")
            return true
        case UInt8(ascii: "f"):
            try literal("false")
            return false
        default: throw Mismatch()
        }
    }

    /// The end of input, after whitespace.
    @inlinable
    package mutating func end() throws {
        skipWhitespace()
        guard position == bytes.count else { throw Mismatch() }
    }

    /// A string token's contents: the byte range between the quotes, and whether it holds
    /// escapes.
    @inlinable
    package mutating func rawString() throws -> (range: Range<Int>, escaped: Bool) {
        try expect(UInt8(ascii: "\""))
        let start = position
        var escaped = false
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let range = start..<position
                position += 1
                return (range, escaped)
            }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                position += 2
                continue
            }
            if byte < 0x20 { throw Mismatch() }
            position += 1
        }
        throw Mismatch()
    }

    /// Whether the unescaped key in `range` is the one-character `ascii`.
    @inlinable
    package func isKey(_ range: Range<Int>, _ ascii: Unicode.Scalar) -> Bool {
        range.count == 1 && bytes[range.lowerBound] == UInt8(ascii: ascii)
    }

    /// Whether the unescaped key in `range` is `name`.
    @inlinable
    package func isKey(_ range: Range<Int>, _ name: StaticString) -> Bool {
        name.withUTF8Buffer { expected in
            expected.count == range.count && expected.indices.allSatisfy { bytes[range.lowerBound + $0] == expected[$0] }
        }
    }

    /// The text of a string token's contents.
    @inlinable
    package func text(_ range: Range<Int>, escaped: Bool) throws -> String {
        if !escaped {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
            // ASCII is valid UTF-8 as it is: decode it without the (generic, slower) validation.
            if slice.allSatisfy({ $0 < 0x80 }) { return String(decoding: slice, as: UTF8.self) }
            guard let text = String(validating: slice, as: UTF8.self) else { throw Mismatch() }
            return text
        }
        guard let text = JSONBytes.unescape(bytes, range) else { throw Mismatch() }
        return text
    }

    /// A string.
    @inlinable
    package mutating func string() throws -> String {
        let (range, escaped) = try rawString()
        return try text(range, escaped: escaped)
    }

    /// An array of strings.
    @inlinable
    package mutating func strings() throws -> [String] {
        try array { try $0.string() }
    }

    /// A number token's bytes.
    @inlinable
    mutating func numberRange() throws -> Range<Int> {
        skipWhitespace()
        let start = position
        while position < bytes.count {
            switch bytes[position] {
            case 0x30...0x39, UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): position += 1
            default:
                guard position > start else { throw Mismatch() }
                return start..<position
            }
        }
        guard position > start else { throw Mismatch() }
        return start..<position
    }

    /// An integer without fraction or exponent that fits in 64 bits.
    @inlinable
    package mutating func int64() throws -> Int64 {
        let range = try numberRange()
        guard JSONBytes.isNumber(bytes, range) else { throw Mismatch() }
        var index = range.lowerBound
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < range.upperBound else { throw Mismatch() }
        var value: Int64 = 0
        while index < range.upperBound {
            let byte = bytes[index]
            guard byte >= 0x30, byte <= 0x39 else { throw Mismatch() }
            let digit = Int64(byte - 0x30)
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { throw Mismatch() }
            value = next
            index += 1
        }
        return value
    }

    /// A finite number.
    @inlinable
    package mutating func double() throws -> Double {
        let range = try numberRange()
        guard JSONBytes.isNumber(bytes, range) else { throw Mismatch() }
        // JSON numbers are ASCII; `Double(_:)` reads the same grammar (and more, such as
        // "inf", which `numberRange` never hands it).
        guard let value = Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)), value.isFinite else {
            throw Mismatch()
        }
        return value
    }

    /// A ``HLCTimestamp``: its decimal digits in a string.
    @inlinable
    package mutating func stamp() throws -> HLCTimestamp {
        let (range, escaped) = try rawString()
        guard !escaped, !range.isEmpty, range.count <= 20 else { throw Mismatch() }
        var value: UInt64 = 0
        for index in range {
            let byte = bytes[index]
            guard byte >= 0x30, byte <= 0x39 else { throw Mismatch() }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times.addingReportingOverflow(UInt64(byte - 0x30))
            guard !overflow1, !overflow2 else { throw Mismatch() }
            value = next
        }
        return HLCTimestamp(rawValue: value)
    }

    // MARK: Structure

    /// Calls `body` for each member of an object, with the key's raw range.
    @inlinable
    package mutating func members(_ body: (inout SyncJSONReader, _ key: Range<Int>, _ escaped: Bool) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        if try consume(UInt8(ascii: "}")) { return }
        repeat {
            let (key, escaped) = try rawString()
            try expect(UInt8(ascii: ":"))
            try body(&self, key, escaped)
        } while try consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"))
    }

    /// Starts an object: true when it has members (the first key comes next), false when it
    /// was `{}`. Hot shapes read their members in a loop of ``memberKey()`` and
    /// ``nextMember()`` rather than through ``members(_:)``, whose closure would box every
    /// local it assigns.
    @inlinable
    package mutating func beginObject() throws -> Bool {
        try expect(UInt8(ascii: "{"))
        return try !consume(UInt8(ascii: "}"))
    }

    /// After a member's value: true when another member follows, false at the object's end.
    @inlinable
    package mutating func nextMember() throws -> Bool {
        if try consume(UInt8(ascii: ",")) { return true }
        try expect(UInt8(ascii: "}"))
        return false
    }

    /// A member's key and the colon after it.
    @inlinable
    package mutating func memberKey() throws -> (range: Range<Int>, escaped: Bool) {
        let key = try rawString()
        try expect(UInt8(ascii: ":"))
        return key
    }

    /// An array, each element read by `element`.
    @inlinable
    package mutating func array<Element>(_ element: (inout SyncJSONReader) throws -> Element) throws -> [Element] {
        try expect(UInt8(ascii: "["))
        var result: [Element] = []
        if try consume(UInt8(ascii: "]")) { return result }
        repeat { result.append(try element(&self)) } while try consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"))
        return result
    }

    /// Skips any JSON value (for keys a newer peer may add), nested at most 64 deep: deeper
    /// input is a mismatch rather than a deep recursion (`JSONDecoder` itself stops at 512).
    @inlinable
    package mutating func skipValue() throws {
        try skipValue(depth: 0)
    }

    @inlinable
    mutating func skipValue(depth: Int) throws {
        switch try peek() {
        case UInt8(ascii: "{"):
            guard depth < 64 else { throw Mismatch() }
            try members { reader, _, _ in try reader.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            guard depth < 64 else { throw Mismatch() }
            _ = try array { try $0.skipValue(depth: depth + 1) }
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try double()
        }
    }

    /// The position of the next token, to come back to with ``rewind(to:)``.
    @inlinable
    package var offset: Int {
        mutating get {
            skipWhitespace()
            return position
        }
    }

    /// Comes back to an ``offset`` read earlier.
    @inlinable
    package mutating func rewind(to offset: Int) {
        position = min(max(offset, 0), bytes.count)
    }

    // MARK: Kinds

    /// The kinds' names as bytes, to match a kind without making a `String` of it.
    @usableFromInline static let kinds: [(name: [UInt8], kind: SyncValueKind)] = SyncValueKind.allCases.map { (Array($0.rawValue.utf8), $0) }

    /// The value kind named by the unescaped string in `range`.
    @inlinable
    package func kind(_ range: Range<Int>) -> SyncValueKind? {
        for entry in Self.kinds where entry.name.count == range.count {
            if entry.name.indices.allSatisfy({ bytes[range.lowerBound + $0] == entry.name[$0] }) { return entry.kind }
        }
        return nil
    }
}
