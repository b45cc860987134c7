import Foundation

/// Record ids for synced rows that have neither a unique attribute nor a temporary identifier:
/// time-ordered UUIDs (version 7, RFC 9562), so that the rows a save creates get ids in
/// increasing order and their entries in the `(entity, record_id)` index are appended at the
/// index's end instead of scattered over its pages (random version 4 ids made every insert
/// land on a different page).
///
/// Layout: 48 bits of Unix milliseconds, the version (7), 12 bits of a counter that orders the
/// ids made in the same millisecond (RFC 9562 §6.2, method 1), the variant, 62 bits that start
/// at a random number (see below).
/// One generator serves one save; a save that makes more than 4,096 ids in one millisecond
/// carries into the next millisecond, so its ids stay strictly increasing.
///
/// The 62 low bits are a random number drawn once per generator (per save) from
/// `SystemRandomNumberGenerator` (`getrandom` on Linux), plus the number of ids made before:
/// ids of different saves or devices collide only if two random starts fall within a save's
/// count of each other (about n / 2^62), and consecutive ids of a save differ by one in their
/// low word, which the sync log writes in a byte (`SyncLogCoding`, format 3) instead of eight.
/// The bits are for uniqueness, not secrecy. (A system call per id made each new row of a bulk
/// insert pay for two; Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for
/// each UUID.)
struct RandomRecordID {
    private var lastMilliseconds: UInt64 = 0
    private var counter: UInt64 = 0
    /// How many ids were made (the clock is read for every 64th).
    private var made: UInt64 = 0
    private var low: UInt64
    private let clock: () -> UInt64

    /// A generator reading the wall clock in milliseconds since 1970 from `clock`.
    init(clock: @escaping () -> UInt64 = RandomRecordID.wallClockMilliseconds) {
        var system = SystemRandomNumberGenerator()
        low = system.next()
        self.clock = clock
    }

    static func wallClockMilliseconds() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    /// The next id's text (uppercase, as `UUID.uuidString` writes it).
    mutating func make() -> String {
        let words = makeWords()
        return RandomRecordID.format(high: words.high, low: words.low)
    }

    /// The next id as its two words (most significant first), without its text.
    mutating func makeWords() -> (high: UInt64, low: UInt64) {
        // The clock is read for every 64th id only (a bulk insert made one clock read per row,
        // about 4% of its time): the ids in between count on in the last millisecond read, as
        // ids made within one millisecond do, so they stay strictly increasing, and their time
        // is at most 63 ids' making behind.
        let now = made & 63 == 0 ? clock() & 0xFFFF_FFFF_FFFF : lastMilliseconds
        made &+= 1
        if now > lastMilliseconds {
            lastMilliseconds = now
            counter = 0
        } else {
            counter += 1
            if counter > 0xFFF {
                lastMilliseconds += 1
                counter = 0
            }
        }
        let high = (lastMilliseconds << 16) | 0x7000 | counter
        low &+= 1
        return (high, (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000)
    }

    /// The canonical text (8-4-4-4-12 uppercase hex digits) of the UUID whose 16 bytes are
    /// `high` then `low`, most significant byte first.
    static func format(high: UInt64, low: UInt64) -> String {
        let digits: StaticString = "0123456789ABCDEF"
        // Safety: `initializingUTF8With` hands over a buffer of exactly 36 bytes; the loop writes
        // 36 bytes (32 hex digits and 4 hyphens) at indexes 0..<36 and returns 36, the count it
        // initialized. `digits` is a 16-byte ASCII literal indexed by a nibble (0...15).
        return String(unsafeUninitializedCapacity: 36) { buffer in
            digits.withUTF8Buffer { hex in
                var out = 0
                for nibble in 0..<32 {
                    if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 {
                        buffer[out] = UInt8(ascii: "-")
                        out += 1
                    }
                    let word = nibble < 16 ? high : low
                    let shift = UInt64(60 - 4 * (nibble % 16))
                    buffer[out] = hex[Int((word >> shift) & 0xF)]
                    out += 1
                }
                return out
            }
        }
    }

    /// The canonical text of a UUID, written by hand (`uuidString` goes through Foundation's
    /// formatting on Linux).
    static func format(_ uuid: UUID) -> String {
        let bytes = uuid.uuid
        let high = withUnsafeBytes(of: bytes) { raw in
            raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        let low = withUnsafeBytes(of: bytes) { raw in
            raw.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        return format(high: high, low: low)
    }
}
