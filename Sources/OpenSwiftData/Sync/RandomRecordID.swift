import Foundation

/// Record ids for synced rows that have neither a unique attribute nor a temporary identifier.
enum RandomRecordID {
    /// A new random (version 4) UUID's text, drawn from `SystemRandomNumberGenerator`
    /// (`getrandom` on Linux). Foundation's `UUID()` on Linux opens, reads and closes
    /// `/dev/urandom` for each UUID: three system calls per new row of a bulk insert.
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        let uuid = withUnsafeMutableBytes(of: &bytes) { raw -> uuid_t in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 4122 variant
            return (raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                    raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15])
        }
        return UUID(uuid: uuid).uuidString
    }
}
