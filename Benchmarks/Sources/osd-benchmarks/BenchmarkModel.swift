import Foundation
import OpenSwiftData

/// The status of a benchmark record, stored by its `String` raw value on both sides.
enum Status: String, Codable, CaseIterable, Sendable {
    case draft, active, archived
}

/// The OpenSwiftData model of the benchmark: ten properties of mixed types.
@Model
final class BenchItem {
    var serial: Int
    var title: String
    var category: String
    var quantity: Int
    var price: Double
    var isActive: Bool
    var createdAt: Date
    var token: UUID
    var note: String?
    var status: Status

    init(_ values: SampleValues) {
        serial = values.serial
        title = values.title
        category = values.category
        quantity = values.quantity
        price = values.price
        isActive = values.isActive
        createdAt = values.createdAt
        token = values.token
        note = values.note
        status = values.status
    }
}
