/// A merged set's elements as texts: each element is identified by its canonical JSON text (as
/// `JSONEncoder` writes it with sorted keys, no whitespace), and a set's value is the JSON array
/// of those texts in order.
///
/// ```swift
/// let seen = SetElements.split("[\"ann\",\"bob\"]") ?? []       // ["\"ann\"", "\"bob\""]
/// let written = SetElements.split("[\"bob\",\"carol\"]") ?? []
/// let change = SetElements.difference(from: seen, to: written)  // adds ["\"carol\""], removes ["\"ann\""]
/// SetElements.json(SetElements.applying(change.adds, removing: change.removes, to: seen))
/// // "[\"bob\",\"carol\"]"
/// ```
public enum SetElements {
    /// The largest element, in UTF-8 bytes of its JSON text.
    public static let maximumElementBytes = 4096
    /// The most elements a set holds.
    public static let maximumCount = 10_000
    /// The largest set, in UTF-8 bytes of its value's JSON array (each change of a set carries
    /// its whole value to the readers).
    public static let maximumBytes = 1 << 20

    /// The texts of a JSON array's elements, in order (whitespace around them dropped), or nil
    /// when `json` is not one JSON array.
    public static func split(_ json: String) -> [String]? {
        let bytes = Array(json.utf8)
        var index = 0
        func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "[") else { return nil }
        index += 1
        var elements: [String] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            skipSpace()
            return index == bytes.count ? [] : nil
        }
        while true {
            skipSpace()
            let start = index
            var depth = 0
            var inString = false
            scan: while index < bytes.count {
                let byte = bytes[index]
                if inString {
                    if byte == UInt8(ascii: "\\") {
                        index += 2
                        continue
                    }
                    if byte == UInt8(ascii: "\"") { inString = false }
                    index += 1
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    if depth == 0 { break scan }
                    depth -= 1
                case UInt8(ascii: ","):
                    if depth == 0 { break scan }
                default: break
                }
                index += 1
            }
            guard index < bytes.count, !inString, depth == 0 else { return nil }
            var end = index
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D || bytes[end - 1] == 0x09 { end -= 1 }
            guard end > start else { return nil }
            elements.append(String(decoding: bytes[start..<end], as: UTF8.self))
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { return nil }
            index += 1
            skipSpace()
            return index == bytes.count ? elements : nil
        }
    }

    /// The JSON array of `elements` (each already a JSON text).
    public static func json(_ elements: [String]) -> String {
        "[" + elements.joined(separator: ",") + "]"
    }

    /// `elements` without repeats, each kept where it first appears.
    public static func unique(_ elements: [String]) -> [String] {
        var seen = Set<String>()
        return elements.filter { seen.insert($0).inserted }
    }

    /// What a save did to a set: the elements it added (in `written`, not in `seen`, in written
    /// order) and removed (in `seen`, not in `written`, in seen order). A pure reorder, or a
    /// repeat, changes nothing.
    public static func difference(from seen: [String], to written: [String]) -> (adds: [String], removes: [String]) {
        let before = Set(seen)
        let after = Set(written)
        return (unique(written.filter { !before.contains($0) }), unique(seen.filter { !after.contains($0) }))
    }

    /// A replica's prediction of a change it has not had confirmed: `elements` without
    /// `removes`, then the `adds` it does not hold appended in order.
    public static func applying(_ adds: [String], removing removes: [String], to elements: [String]) -> [String] {
        let removed = Set(removes)
        var result = unique(elements.filter { !removed.contains($0) })
        var present = Set(result)
        for element in adds where present.insert(element).inserted { result.append(element) }
        return result
    }

    /// Whether `lhs` comes before `rhs` in the order of their UTF-8 bytes.
    public static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}
