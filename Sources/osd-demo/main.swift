import Foundation
import OpenSwiftData

/// A small model, written exactly as for Apple's SwiftData.
@Model
final class Trip {
    enum Kind: String, Codable {
        case business, leisure
    }

    @Attribute(.unique) var name: String
    var startDate: Date
    var kind: Kind = Kind.leisure
    var visits = 0
    var tags: [String] = []
    var budget: Decimal?

    init(name: String, startDate: Date, kind: Kind = .leisure) {
        self.name = name
        self.startDate = startDate
        self.kind = kind
    }
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-demo-\(getpid())")
let url = directory.appendingPathComponent("trips.store")
print("Creating a store at \(url.path)")

do {
    let container = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
    let context = ModelContext(container)
    let lisbon = Trip(name: "Lisbon", startDate: Date(timeIntervalSince1970: 1_700_000_000), kind: .business)
    lisbon.tags = ["work", "conference"]
    lisbon.budget = Decimal(string: "1250.50")
    context.insert(lisbon)
    context.insert(Trip(name: "Kyoto", startDate: Date(timeIntervalSince1970: 1_710_000_000)))
    context.insert(Trip(name: "Oslo", startDate: Date(timeIntervalSince1970: 1_690_000_000)))
    try context.save()
    print("Saved \(try context.fetchCount(FetchDescriptor<Trip>())) trips; Lisbon is \(lisbon.persistentModelID)")
}

do {
    print("Reopening the store")
    let container = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
    let context = ModelContext(container)
    let trips = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate)]))
    for trip in trips {
        print("  \(trip.name): \(trip.kind.rawValue), starts \(trip.startDate), tags \(trip.tags), budget \(trip.budget.map { "\($0)" } ?? "none")")
    }
    let business = try context.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.visits == 0 && $0.name.contains("o") }))
    print("Trips with an 'o' not yet visited: \(business.map(\.name).sorted())")
}

try? FileManager.default.removeItem(at: directory)
print("Done; removed \(directory.path)")
