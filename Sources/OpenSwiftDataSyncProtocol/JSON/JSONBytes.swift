/// The two pieces of JSON's grammar that ``SyncJSONReader`` leaves to functions of their own:
/// unescaping a string and checking a number's text. The reader's callers fall back to
/// `JSONDecoder` when these say no.
///
/// Safety: both functions read `bytes` only at indices inside `range`, which the caller takes
/// from `0..<bytes.count` of a buffer that outlives the call.
package enum JSONBytes {
    /// The text of a JSON string's contents in `range` (between its quotes, escapes included),
    /// or nil when an escape is malformed or the result is not valid UTF-8.
    package static func unescape(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String? {
        var output: [UInt8] = []
        output.reserveCapacity(range.count)
        var index = range.lowerBound
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= range.upperBound else { return nil }
            var value: UInt32 = 0
            for offset in 0..<4 {
                let byte = bytes[at + offset]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        while index < range.upperBound {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                index += 1
                continue
            }
            guard index + 1 < range.upperBound else { return nil }
            let escape = bytes[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                guard var code = hex4(index) else { return nil }
                index += 4
                if (0xD800..<0xDC00).contains(code) {
                    guard index + 6 <= range.upperBound, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u"),
                        let low = hex4(index + 2), (0xDC00..<0xE000).contains(low)
                    else { return nil }
                    index += 6
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { return nil }
                output.append(contentsOf: String(Character(scalar)).utf8)
            default: return nil
            }
        }
        return String(validating: output, as: UTF8.self)
    }

    /// Whether the number token in `range` follows JSON's grammar: `-? (0 | [1-9][0-9]*)
    /// (. [0-9]+)? ([eE] [+-]? [0-9]+)?` (no leading zeros, no bare `.5` or `1.`, no `+1`).
    package static func isNumber(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        var index = range.lowerBound
        func digits() -> Int {
            let start = index
            while index < range.upperBound, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            return index - start
        }
        if index < range.upperBound, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < range.upperBound else { return false }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return false
        }
        if index < range.upperBound, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if index < range.upperBound, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < range.upperBound, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return index == range.upperBound
    }
}
