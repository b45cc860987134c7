import Foundation
import Observation
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

/// A model class with a subclass, as SwiftData (since its 2025 release) lets models inherit.
@Model
class Vehicle {
    var name: String
    var wheels: Int = 4

    init(name: String) {
        self.name = name
    }

    /// Overridable behaviour, as any class has.
    func summary() -> String { "\(name) on \(wheels) wheels" }
}

@Model
final class Car: Vehicle {
    var doors: Int
    var sunroof: Bool = false

    init(name: String, doors: Int) {
        self.doors = doors
        super.init(name: name)
    }

    override func summary() -> String { super.summary() + ", \(doors) doors" }
}

@Suite("Model inheritance")
struct InheritanceTests {
    @Test("the schema has the superclass and the subclass, linked, with the inherited properties first")
    func schema() throws {
        let schema = Schema([Car.self])
        let names = Set(schema.entities.map(\.name))
        #expect(names == ["Car", "Vehicle"])
        let car = try #require(schema.entitiesByName["Car"])
        let vehicle = try #require(schema.entitiesByName["Vehicle"])
        #expect(car.superentityName == "Vehicle")
        #expect(car.superentity === vehicle)
        #expect(vehicle.subentities.map(\.name) == ["Car"])
        #expect(vehicle.superentity == nil)
        #expect(car.properties.map(\.name) == ["name", "wheels", "doors", "sunroof"])
        #expect(car.inheritedProperties.map(\.name) == ["name", "wheels"])
        #expect(Set(car.inheritedPropertiesByName.keys) == ["name", "wheels"])
        #expect(Car.schemaMetadata.map(\.name) == ["doors", "sunroof"], "a subclass lists its own properties, as in SwiftData")
    }

    @Test("PersistentModel.Root is the topmost model class: the class itself, or for a subclass its model superclass")
    func root() {
        func root<T: PersistentModel>(of type: T.Type) -> ObjectIdentifier { ObjectIdentifier(T.Root.self) }
        #expect(root(of: Car.self) == ObjectIdentifier(Vehicle.self))
        #expect(root(of: Vehicle.self) == ObjectIdentifier(Vehicle.self))
        #expect(root(of: ParkedCar.self) == ObjectIdentifier(Parked.self))
        #expect(root(of: Note.self) == ObjectIdentifier(Note.self))
    }

    @Test("a hand-written entity with subentities links them")
    func handWritten() {
        let sub = Schema.Entity("Sub")
        let base = Schema.Entity(
            "Base", subentities: sub,
            properties: Schema.Attribute(name: "a", originalName: nil, options: [], valueType: Int.self, defaultValue: nil, hashModifier: nil))
        #expect(base.subentities == [sub])
        #expect(sub.superentity === base)
        #expect(sub.superentityName == "Base")
    }

    @Test("a subclass instance keeps the values of both initializers, and reads and writes both kinds of property")
    func values() {
        let car = Car(name: "Zoe", doors: 5)
        #expect(car.name == "Zoe")
        #expect(car.wheels == 4)
        #expect(car.doors == 5)
        #expect(car.sunroof == false)
        car.name = "Kangoo"
        car.doors = 3
        car.wheels = 6
        #expect(car.name == "Kangoo" && car.doors == 3 && car.wheels == 6)
        #expect(car.summary() == "Kangoo on 6 wheels, 3 doors")
        let vehicle: Vehicle = car
        #expect(vehicle.name == "Kangoo")
    }

    @Test("observers of an inherited and of an own property are told of changes")
    func observation() {
        let car = Car(name: "Zoe", doors: 5)
        final class Flag: @unchecked Sendable { var count = 0 }
        let flag = Flag()
        withObservationTracking {
            _ = car.name
        } onChange: {
            flag.count += 1
        }
        car.name = "Clio"
        withObservationTracking {
            _ = car.doors
        } onChange: {
            flag.count += 10
        }
        car.doors = 3
        #expect(flag.count == 11)
    }

    @Test("a subclass saves and fetches its inherited and own values; predicates and sorts on either")
    func saveAndFetch() throws {
        let container = try ModelContainer(for: Car.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.insert(Car(name: "Zoe", doors: 5))
        let clio = Car(name: "Clio", doors: 3)
        clio.sunroof = true
        clio.wheels = 4
        context.insert(clio)
        try context.save()

        let reader = ModelContext(container)
        let cars = try reader.fetch(FetchDescriptor<Car>(sortBy: [SortDescriptor(\.name)]))
        #expect(cars.map(\.name) == ["Clio", "Zoe"])
        #expect(cars.map(\.doors) == [3, 5])
        #expect(cars.map(\.sunroof) == [true, false])
        #expect(cars.map(\.wheels) == [4, 4])
        let threeDoors = try reader.fetch(FetchDescriptor<Car>(predicate: #Predicate { $0.doors == 3 && $0.name.starts(with: "C") }))
        #expect(threeDoors.map(\.name) == ["Clio"])

        let first = try #require(cars.first)
        first.name = "Clio II"
        first.doors = 5
        try reader.save()
        let again = try ModelContext(container).fetch(FetchDescriptor<Car>(predicate: #Predicate { $0.name == "Clio II" }))
        #expect(again.map(\.doors) == [5])
    }
}

@Suite("Model inheritance: fetching the superclass")
struct InheritanceFetchTests {
    /// Two plain vehicles and two cars, saved.
    private func fleet() throws -> ModelContainer {
        let container = try ModelContainer(for: Vehicle.self, Car.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let bike = Vehicle(name: "Bike")
        bike.wheels = 2
        context.insert(bike)
        context.insert(Vehicle(name: "Cart"))
        context.insert(Car(name: "Zoe", doors: 5))
        let clio = Car(name: "Clio", doors: 3)
        clio.sunroof = true
        context.insert(clio)
        try context.save()
        return container
    }

    @Test("a fetch of the superclass returns the subclass's models as instances of the subclass; a fetch of the subclass only them")
    func polymorphic() throws {
        let container = try fleet()
        let context = ModelContext(container)
        let vehicles = try context.fetch(FetchDescriptor<Vehicle>(sortBy: [SortDescriptor(\.name)]))
        #expect(vehicles.map(\.name) == ["Bike", "Cart", "Clio", "Zoe"])
        #expect(vehicles.map { $0 is Car } == [false, false, true, true])
        let clio = try #require(vehicles[2] as? Car)
        #expect(clio.doors == 3 && clio.sunroof)
        #expect(clio.summary() == "Clio on 4 wheels, 3 doors")
        #expect(try context.fetch(FetchDescriptor<Car>()).count == 2)
        // One instance per row, whichever type fetched it.
        #expect(try context.fetch(FetchDescriptor<Car>(predicate: #Predicate { $0.name == "Clio" })).first === clio)
        #expect(try context.fetchCount(FetchDescriptor<Vehicle>()) == 4)
        #expect(try context.fetchCount(FetchDescriptor<Car>()) == 2)
        #expect(try context.fetchIdentifiers(FetchDescriptor<Vehicle>()).count == 4)
    }

    @Test("a predicate, sort, offset and limit on the superclass's properties apply to both classes")
    func predicates() throws {
        let container = try fleet()
        let context = ModelContext(container)
        let fourWheels = try context.fetch(
            FetchDescriptor<Vehicle>(predicate: #Predicate { $0.wheels == 4 }, sortBy: [SortDescriptor(\.name, order: .reverse)]))
        #expect(fourWheels.map(\.name) == ["Zoe", "Clio", "Cart"])
        var window = FetchDescriptor<Vehicle>(predicate: #Predicate { $0.name.contains("o") || $0.name == "Bike" }, sortBy: [SortDescriptor(\.name)])
        window.fetchOffset = 1
        window.fetchLimit = 1
        #expect(try context.fetch(window).map(\.name) == ["Clio"])
        #expect(try context.fetchCount(FetchDescriptor<Vehicle>(predicate: #Predicate { $0.wheels == 4 })) == 3)
        let cars = try context.fetch(FetchDescriptor<Car>(predicate: #Predicate { $0.wheels == 4 && $0.doors > 3 }))
        #expect(cars.map(\.name) == ["Zoe"])
    }

    @Test("a batch delete of the superclass deletes the subclasses' models too, unless told not to")
    func batchDelete() throws {
        let container = try fleet()
        let context = ModelContext(container)
        try context.delete(model: Vehicle.self, where: #Predicate { $0.wheels == 4 }, includeSubclasses: false)
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Vehicle>(sortBy: [SortDescriptor(\.name)])).map(\.name) == ["Bike", "Clio", "Zoe"])
        try context.delete(model: Vehicle.self, where: #Predicate { $0.name != "Bike" })
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Vehicle>()).map(\.name) == ["Bike"])
    }

    @Test("unsaved subclass models take part in a fetch of the superclass")
    func pending() throws {
        let container = try fleet()
        let context = ModelContext(container)
        context.insert(Car(name: "Twingo", doors: 3))
        let names = try context.fetch(FetchDescriptor<Vehicle>(predicate: #Predicate { $0.name.starts(with: "T") })).map(\.name)
        #expect(names == ["Twingo"])
        try context.save()
        let reread = try ModelContext(container).fetch(FetchDescriptor<Vehicle>(predicate: #Predicate { $0.name == "Twingo" }))
        #expect(reread.first is Car)
    }
}

@Suite("Model inheritance: casts in predicates, migrations and history")
struct InheritancePredicateTests {
    private func fleet() throws -> ModelContainer {
        let container = try ModelContainer(for: Vehicle.self, Car.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.insert(Vehicle(name: "Bike"))
        context.insert(Car(name: "Zoe", doors: 5))
        context.insert(Car(name: "Clio", doors: 3))
        try context.save()
        return container
    }

    @Test("`is` and `as?` in a predicate of the superclass select by class (`is` in SQL)")
    func casts() throws {
        let container = try fleet()
        let context = ModelContext(container)
        let cars = try context.fetch(FetchDescriptor<Vehicle>(predicate: #Predicate { $0 is Car }, sortBy: [SortDescriptor(\.name)]))
        #expect(cars.map(\.name) == ["Clio", "Zoe"])
        let plain = try context.fetch(FetchDescriptor<Vehicle>(predicate: #Predicate { !($0 is Car) }))
        #expect(plain.map(\.name) == ["Bike"])
        let threeDoors = try context.fetch(FetchDescriptor<Vehicle>(predicate: #Predicate { ($0 as? Car)?.doors == 3 }))
        #expect(threeDoors.map(\.name) == ["Clio"])
        #expect(try context.fetchCount(FetchDescriptor<Vehicle>(predicate: #Predicate { $0 is Car })) == 2)
        // In SQL: the class of a table decides the check.
        #expect(try context.explain(FetchDescriptor<Vehicle>(predicate: #Predicate { $0 is Car })).predicateInMemory.isEmpty)
        // The same predicates, evaluated by Foundation on the instances, agree.
        let all = try context.fetch(FetchDescriptor<Vehicle>())
        let isCar = #Predicate<Vehicle> { $0 is Car }
        #expect(try all.filter { try isCar.evaluate($0) }.count == 2)
    }

    @Test("history records a subclass's changes under its entity, with inherited and own properties")
    func history() throws {
        let container = try fleet()
        let context = ModelContext(container)
        let car = try #require(try context.fetch(FetchDescriptor<Car>(predicate: #Predicate { $0.name == "Zoe" })).first)
        car.name = "Zoe 2"
        car.doors = 3
        try context.save()
        let transactions = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        let updates = transactions.flatMap(\.changes).compactMap { change -> DefaultHistoryUpdate<Car>? in
            if case let .update(update) = change { return update as? DefaultHistoryUpdate<Car> }
            return nil
        }
        #expect(updates.count == 1)
        #expect(updates.first?.changedPersistentIdentifier == car.persistentModelID)
        #expect(updates.first?.updatedAttributes.count == 2)
    }
}

/// The fleet's first version: vehicles only.
enum FleetV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [Vehicle.self] }

    @Model class Vehicle {
        var name: String
        init(name: String) { self.name = name }
    }
}

/// The second: a property added to the superclass, and a subclass.
enum FleetV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Vehicle.self, Truck.self] }

    @Model class Vehicle {
        var name: String
        var wheels: Int = 4
        init(name: String) { self.name = name }
    }

    @Model final class Truck: Vehicle {
        var payload: Double = 0
        init(name: String, payload: Double) {
            self.payload = payload
            super.init(name: name)
        }
    }
}

enum FleetPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FleetV1.self, FleetV2.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: FleetV1.self, toVersion: FleetV2.self)] }
}

@Suite("Model inheritance: migrations")
struct InheritanceMigrationTests {
    @Test("a lightweight migration adds a subclass and a property of the superclass; old rows keep their values")
    func addSubclassAndProperty() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("fleet.store")
        do {
            let container = try ModelContainer(for: Schema(versionedSchema: FleetV1.self), configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(FleetV1.Vehicle(name: "Bike"))
            try context.save()
        }
        let container = try ModelContainer(
            for: Schema(versionedSchema: FleetV2.self), migrationPlan: FleetPlan.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        context.insert(FleetV2.Truck(name: "Actros", payload: 18))
        try context.save()
        let vehicles = try ModelContext(container).fetch(FetchDescriptor<FleetV2.Vehicle>(sortBy: [SortDescriptor(\.name)]))
        #expect(vehicles.map(\.name) == ["Actros", "Bike"])
        #expect(vehicles.map(\.wheels) == [4, 4])
        #expect((vehicles.first as? FleetV2.Truck)?.payload == 18)
        #expect(try StoreFile.metadata(at: url.path)["schemaVersion"] == "2.0.0")
    }
}

/// A garage whose vehicles are kept by their foreign key to it: it holds cars too.
@Model
final class Garage {
    var name: String
    @Relationship(deleteRule: .cascade, inverse: \Parked.garage) var parked: [Parked] = []
    var favorite: Parked?

    init(name: String) {
        self.name = name
    }
}

@Model
class Parked {
    var plate: String
    var garage: Garage?

    init(plate: String) {
        self.plate = plate
    }
}

@Model
final class ParkedCar: Parked {
    var seats: Int
    var driver: Driver?

    init(plate: String, seats: Int) {
        self.seats = seats
        super.init(plate: plate)
    }
}

/// A model related to a subclass through a relationship the subclass declares.
@Model
final class Driver {
    var name: String
    @Relationship(inverse: \ParkedCar.driver) var cars: [ParkedCar] = []

    init(name: String) {
        self.name = name
    }
}

@Suite("Model inheritance: relationships")
struct InheritanceRelationshipTests {
    @Test("a to-many relationship to the superclass holds subclass models, as their own class, after a save and a new fetch")
    func toMany() throws {
        let container = try ModelContainer(for: Garage.self, ParkedCar.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let garage = Garage(name: "North")
        context.insert(garage)
        garage.parked.append(Parked(plate: "B-1"))
        garage.parked.append(ParkedCar(plate: "C-2", seats: 4))
        try context.save()

        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<Garage>()).first)
        let parked = fetched.parked.sorted { $0.plate < $1.plate }
        #expect(parked.map(\.plate) == ["B-1", "C-2"])
        #expect((parked.last as? ParkedCar)?.seats == 4)
        #expect(parked.last?.garage === fetched)
        // Prefetching and predicates over the relationship see the car too.
        var descriptor = FetchDescriptor<Garage>(predicate: #Predicate { $0.parked.contains { $0.plate == "C-2" } })
        descriptor.relationshipKeyPathsForPrefetching = [\.parked]
        #expect(try ModelContext(container).fetch(descriptor).first?.parked.count == 2)
        // The cascade reaches the car.
        reader.delete(fetched)
        try reader.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Parked>()) == 0)
    }

    @Test("a to-one foreign key to the superclass holds a subclass model: keys are shared across the hierarchy, and deleting the row clears the key")
    func toOne() throws {
        let container = try ModelContainer(for: Garage.self, ParkedCar.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let garage = Garage(name: "South")
        context.insert(garage)
        context.insert(Parked(plate: "P-1"))
        garage.favorite = ParkedCar(plate: "F-1", seats: 2)
        try context.save()
        let parked = try ModelContext(container).fetch(FetchDescriptor<Parked>())
        #expect(Set(parked.map(\.persistentModelID.rowID)).count == 2, "one key space for the hierarchy")

        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<Garage>()).first)
        let favorite = try #require(fetched.favorite as? ParkedCar)
        #expect(favorite.plate == "F-1" && favorite.seats == 2)
        reader.delete(favorite)
        try reader.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Garage>()).first?.favorite == nil)
    }

    @Test("a subclass's own relationship keeps its inverse, after a save and a new fetch")
    func subclassRelationship() throws {
        let container = try ModelContainer(
            for: Garage.self, ParkedCar.self, Driver.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let ada = Driver(name: "Ada")
        context.insert(ada)
        let car = ParkedCar(plate: "A-1", seats: 2)
        ada.cars.append(car)
        #expect(car.driver === ada)
        try context.save()
        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<ParkedCar>()).first)
        #expect(fetched.driver?.name == "Ada")
        #expect(fetched.driver?.cars.map(\.plate) == ["A-1"])
        #expect(fetched.seats == 2)
    }
}

@Model
class Creature {
    var name: String
    init(name: String) { self.name = name }
}

@Model
class Hound: Creature {
    var breed: String
    init(name: String, breed: String) {
        self.breed = breed
        super.init(name: name)
    }
}

@Model
final class Whelp: Hound {
    var ageInWeeks: Int
    init(name: String, breed: String, ageInWeeks: Int) {
        self.ageInWeeks = ageInWeeks
        super.init(name: name, breed: breed)
    }
}

@Suite("Model inheritance: deeper hierarchies")
struct DeepInheritanceTests {
    @Test("a subclass of a subclass keeps every level's values and is fetched through each ancestor")
    func threeLevels() throws {
        let container = try ModelContainer(for: Creature.self, Hound.self, Whelp.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let puppy = Whelp(name: "Rex", breed: "Collie", ageInWeeks: 9)
        #expect(puppy.name == "Rex" && puppy.breed == "Collie" && puppy.ageInWeeks == 9)
        context.insert(puppy)
        context.insert(Hound(name: "Fido", breed: "Pug"))
        context.insert(Creature(name: "Tom"))
        try context.save()
        let reader = ModelContext(container)
        let animals = try reader.fetch(FetchDescriptor<Creature>(sortBy: [SortDescriptor(\.name)]))
        #expect(animals.map(\.name) == ["Fido", "Rex", "Tom"])
        #expect(animals.map { String(describing: type(of: $0)) } == ["Hound", "Whelp", "Creature"])
        let dogs = try reader.fetch(FetchDescriptor<Hound>(predicate: #Predicate { $0.breed == "Collie" }))
        #expect((dogs.first as? Whelp)?.ageInWeeks == 9)
        #expect(try reader.fetchCount(FetchDescriptor<Whelp>(predicate: #Predicate { $0.name == "Rex" && $0.breed == "Collie" })) == 1)
        let schema = container.schema
        #expect(schema.entitiesByName["Whelp"]?.superentity?.name == "Hound")
        #expect(schema.entitiesByName["Whelp"]?.inheritedProperties.map(\.name) == ["name", "breed"])
    }
}

/// A model that adopts a protocol first in its inheritance clause (not a superclass).
@Model
final class Badge: Identifiable, CustomStringConvertible {
    var label: String
    var description: String { label }

    init(label: String) {
        self.label = label
    }
}

@Suite("Model inheritance: roots with protocols")
struct InheritanceRootTests {
    @Test("a model whose inheritance clause lists protocols only is a root model")
    func protocolsOnly() throws {
        let container = try ModelContainer(for: Badge.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.insert(Badge(label: "gold"))
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Badge>()).map(\.description) == ["gold"])
        #expect(container.schema.entitiesByName["Badge"]?.superentity == nil)
    }
}
