import Foundation
import OpenSwiftData

enum TripsV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [Trip.self] }

    @Model final class Trip {
        var name: String
        init(name: String) { self.name = name }
    }
}

enum TripsV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Trip.self] }

    @Model final class Trip {
        @Attribute(originalName: "name") var title: String
        var slug: String = ""
        init(title: String) { self.title = title }
    }
}

enum TripsPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [TripsV1.self, TripsV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: TripsV1.self, toVersion: TripsV2.self, willMigrate: nil, didMigrate: { context in
            for trip in try context.fetch(FetchDescriptor<TripsV2.Trip>()) {
                trip.slug = trip.title.lowercased().replacingOccurrences(of: " ", with: "-")
            }
        })]
    }
}

let url = FileManager.default.temporaryDirectory.appendingPathComponent("trips-\(UUID().uuidString).store")
let v1 = ModelContext(try ModelContainer(for: Schema(versionedSchema: TripsV1.self), configurations: [ModelConfiguration(url: url)]))
v1.insert(TripsV1.Trip(name: "Summer in Lisbon"))
try v1.save()

// The next version of the app opens the same file with its plan: the column is renamed and
// the new one filled in, in one stage that either completes or leaves version 1 in place.
let container = try ModelContainer(for: Schema(versionedSchema: TripsV2.self), migrationPlan: TripsPlan.self, configurations: [ModelConfiguration(url: url)])
print(try ModelContext(container).fetch(FetchDescriptor<TripsV2.Trip>()).map { "\($0.title) → \($0.slug)" })
// ["Summer in Lisbon → summer-in-lisbon"]
