// A save writes a whole string: the edit is what changed between the value the saving context
// saw and the one it wrote, found as one replaced stretch between their common prefix and
// suffix (compared byte for byte, then moved to grapheme boundaries of both, so a character
// made of several scalars, an emoji with its skin tone or a letter with its accent, is deleted
// or kept whole and never cut).
extension TextDocument {
    /// Edits the text, as `replica`, from the value a saving context saw (`seen`; nil: the text
    /// as it reads now) to the value it wrote; returns the operation to send.
    ///
    /// When the text changed since the context read it (another device's edits were merged in
    /// meanwhile), only the scalars the context saw and removed are deleted, and its insertion
    /// goes where it was typed: after what precedes it in both versions. Others' edits stay.
    @discardableResult
    public mutating func update(to written: String, seen: String? = nil, replica: UInt64) -> TextOperation {
        let current = text
        let seen = seen ?? current
        let local = Self.affixes(seen, written)
        let seenBytes = seen.utf8.count
        let writtenBytes = written.utf8.count
        // What the context replaced, in `seen`, and its replacement.
        let removedRange = local.prefix..<(seenBytes - local.suffix)
        let inserted = Self.slice(written, local.prefix..<(writtenBytes - local.suffix))

        // Where `seen` and the current text differ (others' edits merged since it was read), compared by
        // bytes: `==` on strings is canonical equivalence, and the text keeps what was typed.
        let remote = Self.sameBytes(seen, current) ? (prefix: seenBytes, suffix: 0) : Self.affixes(seen, current)
        let remoteEnd = seenBytes - remote.suffix
        let shift = current.utf8.count - seenBytes
        func mapped(_ offset: Int) -> Int { offset <= remote.prefix ? offset : offset >= remoteEnd ? offset + shift : remote.prefix }

        // The stretches of the current text to delete: what was seen and is still there, before
        // and after what others changed.
        var deletions: [Range<Int>] = []
        let beforeEnd = min(removedRange.upperBound, remote.prefix)
        if removedRange.lowerBound < beforeEnd { deletions.append(removedRange.lowerBound..<beforeEnd) }
        let afterStart = max(removedRange.lowerBound, remoteEnd)
        if afterStart < removedRange.upperBound { deletions.append((afterStart + shift)..<(removedRange.upperBound + shift)) }
        let insertionPoint = Self.scalarOffset(current, bytes: mapped(removedRange.lowerBound))

        var operation = TextOperation()
        for range in deletions.reversed() {
            let start = Self.scalarOffset(current, bytes: range.lowerBound)
            let end = Self.scalarOffset(current, bytes: range.upperBound)
            operation.append(delete(at: start, count: end - start))
        }
        if !inserted.isEmpty { operation.append(insert(inserted, at: insertionPoint, replica: replica)) }
        // Nobody else's edits were in between: the text now reads as written.
        if remote.suffix == 0, remote.prefix == seenBytes, current.utf8.count == seenBytes { cachedText = written }
        return operation
    }

    /// The lengths in UTF-8 bytes of the common prefix and the common suffix of two strings
    /// (not overlapping), each ending or starting at a grapheme boundary of both.
    static func affixes(_ a: String, _ b: String) -> (prefix: Int, suffix: Int) {
        var a = a
        var b = b
        let limit = min(a.utf8.count, b.utf8.count)
        let prefix = a.withUTF8 { x in
            b.withUTF8 { y in
                var prefix = 0
                while prefix < limit, x[prefix] == y[prefix] { prefix += 1 }
                return prefix
            }
        }
        // The suffix is measured after the prefix moved back to a boundary: measured up to the
        // raw prefix, it would stop inside a character the two strings share the first bytes
        // of ("丁丂" and "丁七丂" share a byte past "丁"), and the edit would delete and type
        // again the characters after it, which another device may be editing.
        let snapped = snapDown(prefix, a, b)
        let suffix = a.withUTF8 { x in
            b.withUTF8 { y in
                var suffix = 0
                while suffix < limit - snapped, x[x.count - 1 - suffix] == y[y.count - 1 - suffix] { suffix += 1 }
                return suffix
            }
        }
        return (snapped, snapSuffix(suffix, a, b))
    }

    /// Whether two strings hold the same UTF-8 bytes.
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in b.withUTF8 { y in x.count == y.count && x.elementsEqual(y) } }
    }

    /// Moves a common prefix's end back to a grapheme boundary of both strings.
    static func snapDown(_ bytes: Int, _ a: String, _ b: String) -> Int {
        var offset = bytes
        while offset > 0 {
            if isBoundary(a, offset), isBoundary(b, offset) { return offset }
            offset -= 1
        }
        return 0
    }

    /// Shortens a common suffix until its start is a grapheme boundary of both strings.
    static func snapSuffix(_ bytes: Int, _ a: String, _ b: String) -> Int {
        var length = bytes
        while length > 0 {
            if isBoundary(a, a.utf8.count - length), isBoundary(b, b.utf8.count - length) { return length }
            length -= 1
        }
        return 0
    }

    /// Whether a UTF-8 offset is a grapheme boundary of a string.
    static func isBoundary(_ string: String, _ offset: Int) -> Bool {
        let utf8 = string.utf8
        if offset == 0 || offset == utf8.count { return true }
        let index = utf8.index(utf8.startIndex, offsetBy: offset)
        // Inside a scalar: not a boundary.
        guard index.samePosition(in: string.unicodeScalars) != nil else { return false }
        return index.samePosition(in: string) != nil
    }

    /// The scalars of a string between two UTF-8 offsets (both on scalar boundaries).
    static func slice(_ string: String, _ range: Range<Int>) -> Substring {
        guard !range.isEmpty else { return "" }
        let utf8 = string.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: range.lowerBound)
        let end = utf8.index(start, offsetBy: range.count)
        return string[start..<end]
    }

    /// The number of scalars in a string's first `bytes` UTF-8 bytes (every byte that does not
    /// continue a scalar starts one).
    static func scalarOffset(_ string: String, bytes: Int) -> Int {
        var string = string
        return string.withUTF8 { buffer in
            var count = 0
            for byte in buffer[..<bytes] where byte & 0xC0 != 0x80 { count += 1 }
            return count
        }
    }
}
