import Foundation

/// The deterministic values of record number `index`, shared by both sides so that they store,
/// and read back, exactly the same data.
struct SampleValues {
    let serial: Int
    let title: String
    let category: String
    let quantity: Int
    let price: Double
    let isActive: Bool
    let createdAt: Date
    let token: UUID
    let note: String?
    let status: Status

    init(index: Int) {
        serial = index
        title = "Item number \(index)"
        category = Self.categories[index % Self.categories.count]
        quantity = index % 1_000
        price = Double(index) * 0.25
        isActive = index % 3 != 0
        createdAt = Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(index) * 60)
        token = Self.uuid(index)
        note = index % 4 == 0 ? nil : "note \(index)"
        status = Status.allCases[index % Status.allCases.count]
    }

    private static let categories = ["books", "garden", "kitchen", "music", "office", "sports", "tools", "toys"]

    /// A UUID whose bytes spell out `index`, so that every run produces the same tokens.
    private static func uuid(_ index: Int) -> UUID {
        let value = UInt64(truncatingIfNeeded: index)
        var bytes: uuid_t = (0x0b, 0xe1, 0xc4, 0x00, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { buffer in
            withUnsafeBytes(of: value.bigEndian) { source in
                buffer[8..<16].copyBytes(from: source)
            }
        }
        return UUID(uuid: bytes)
    }
}
