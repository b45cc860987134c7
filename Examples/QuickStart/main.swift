import Foundation
import SwiftData

@Model
final class Trip {
    @Attribute(.unique) var name: String
    var startDate: Date
    var visits = 0

    init(name: String, startDate: Date) {
        self.name = name
        self.startDate = startDate
    }
}

let container = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
let context = ModelContext(container)
context.insert(Trip(name: "Lisbon", startDate: .now))
context.insert(Trip(name: "Kyoto", startDate: .now.addingTimeInterval(86_400)))
try context.save()

let trips = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate)]))
print(trips.map(\.name))  // ["Lisbon", "Kyoto"]
