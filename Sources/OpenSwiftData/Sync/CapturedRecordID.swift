import Foundation

/// A record id as a save's capture holds it: the two words of a UUID in canonical text (what
/// capture makes for new rows, and any id whose text is a canonical UUID) or any other text.
///
/// A bulk insert makes one id per row; keeping it as two words spares the 36-character string
/// (a heap allocation), its parsing back into bytes for `osd_sync_records`, and 20 bytes of the
/// log entry. The mapping to text is the one `SyncRecords.storedID` uses, so it is one to one.
enum CapturedRecordID: Equatable {
    case uuid(high: UInt64, low: UInt64)
    /// Text that is not a canonical UUID (the initializer turns canonical text into `.uuid`).
    case text(String)

    init(_ text: String) {
        if let words = SyncRecords.uuidWords(text) {
            self = .uuid(high: words.high, low: words.low)
        } else {
            self = .text(text)
        }
    }

    init(_ uuid: UUID) {
        let bytes = uuid.uuid
        let high = withUnsafeBytes(of: bytes) { raw in raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        let low = withUnsafeBytes(of: bytes) { raw in raw.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        self = .uuid(high: high, low: low)
    }

    /// The id's text (a UUID's canonical uppercase form).
    var text: String {
        switch self {
        case let .uuid(high, low): return RandomRecordID.format(high: high, low: low)
        case let .text(text): return text
        }
    }
}
