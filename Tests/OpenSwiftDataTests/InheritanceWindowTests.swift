import Foundation
import Testing

@testable import OpenSwiftData

@Suite("Model inheritance: sorting and windows over a hierarchy in SQL")
struct InheritanceWindowTests {
    /// Vehicles and cars whose names and wheel counts interleave.
    private func fleet() throws -> ModelContainer {
        let container = try ModelContainer(for: Vehicle.self, Car.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for (name, wheels) in [("Bike", 2), ("Cart", 4), ("Dray", 6)] {
            let vehicle = Vehicle(name: name)
            vehicle.wheels = wheels
            context.insert(vehicle)
        }
        for (name, wheels) in [("Audi", 4), ("Clio", 3), ("Zoe", 4), ("Ebro", 6)] {
            let car = Car(name: name, doors: 5)
            car.wheels = wheels
            context.insert(car)
        }
        try context.save()
        return container
    }

    @Test("sort, offset and limit across the classes give the order of one sorted list, in one SQL query")
    func window() throws {
        let container = try fleet()
        let context = ModelContext(container)
        // SwiftData's order: every matching model sorted, then the window.
        var descriptor = FetchDescriptor<Vehicle>(sortBy: [SortDescriptor(\.name)])
        descriptor.fetchOffset = 2
        descriptor.fetchLimit = 3
        let page = try context.fetch(descriptor)
        #expect(page.map(\.name) == ["Cart", "Clio", "Dray"])
        #expect(page.map { $0 is Car } == [false, true, false])
        #expect((page[1] as? Car)?.doors == 5)
        let plan = try context.explain(descriptor)
        #expect(plan.runsEntirelyInSQL)
        #expect(plan.sql.contains("UNION ALL"))

        var byWheels = FetchDescriptor<Vehicle>(
            predicate: #Predicate { $0.wheels > 2 }, sortBy: [SortDescriptor(\.wheels, order: .reverse), SortDescriptor(\.name)])
        byWheels.fetchOffset = 1
        byWheels.fetchLimit = 4
        #expect(try context.fetch(byWheels).map(\.name) == ["Ebro", "Audi", "Cart", "Zoe"])
        #expect(try context.fetchCount(byWheels) == 4)
        byWheels.fetchLimit = 10
        #expect(try context.fetchCount(byWheels) == 5)
        #expect(try context.fetch(byWheels).count == 5)

        // The identifiers come in the same order, each under its own class's entity.
        let identifiers = try context.fetchIdentifiers(descriptor)
        #expect(identifiers == page.map(\.persistentModelID))
        #expect(identifiers.map(\.entityName) == ["Vehicle", "Car", "Vehicle"])
    }

    @Test("unsaved changes move the fetch to memory, which gives the order SQL gives once they are saved")
    func memoryAgrees() throws {
        let container = try fleet()
        let context = ModelContext(container)
        var descriptor = FetchDescriptor<Vehicle>(
            predicate: #Predicate { $0.name.contains("r") || $0.wheels == 4 }, sortBy: [SortDescriptor(\.name, order: .reverse)])
        descriptor.fetchOffset = 1
        descriptor.fetchLimit = 3
        #expect(try context.explain(descriptor).runsEntirelyInSQL)
        #expect(try context.fetch(descriptor).map(\.name) == ["Ebro", "Dray", "Cart"])
        context.insert(Car(name: "Dacia", doors: 3))
        #expect(try context.explain(descriptor).mergesPendingChanges)
        #expect(try context.fetch(descriptor).map(\.name) == ["Ebro", "Dray", "Dacia"])
        try context.save()
        #expect(try context.explain(descriptor).runsEntirelyInSQL)
        #expect(try context.fetch(descriptor).map(\.name) == ["Ebro", "Dray", "Dacia"])
        #expect(try ModelContext(container).fetch(descriptor).map(\.name) == ["Ebro", "Dray", "Dacia"])
    }

    @Test("a fetch of the superclass prefetches the named relationships of every class's models")
    func prefetching() throws {
        let container = try ModelContainer(
            for: Keeper.self, Sticker.self, Pet.self, Cat.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let sticker = Sticker(label: "gold")
        context.insert(sticker)
        sticker.pets = [Pet(name: "Rex"), Cat(name: "Tom", lives: 9), Cat(name: "Kit", lives: 3)]
        try context.save()

        let reader = ModelContext(container)
        var descriptor = FetchDescriptor<Pet>(sortBy: [SortDescriptor(\.name)])
        descriptor.fetchLimit = 2
        descriptor.relationshipKeyPathsForPrefetching = [\.stickers]
        let pets = try reader.fetch(descriptor)
        #expect(pets.map(\.name) == ["Kit", "Rex"])
        let catLayout = try container.requireLayout(for: Cat.self)
        let petLayout = try container.requireLayout(for: Pet.self)
        let catStickers = try #require(catLayout.properties.first { $0.name == "stickers" })
        let petStickers = try #require(petLayout.properties.first { $0.name == "stickers" })
        for (pet, property) in zip(pets, [catStickers, petStickers]) {
            guard case let .loaded(refs?) = pet.storageBase.toManySlot(property) else {
                Issue.record("\(pet.name)'s stickers were not prefetched")
                continue
            }
            #expect(refs.count == 1)
        }
        #expect(pets.map { $0.stickers.map(\.label) } == [["gold"], ["gold"]])
    }
}

@Suite("Model inheritance: sorting through a to-one into a hierarchy")
struct InheritanceToOneSortTests {
    @Test("sorting by a property of a to-one whose destination has subclasses orders subclass rows by their own values")
    func sortThroughToOne() throws {
        let container = try ModelContainer(for: Garage.self, ParkedCar.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for (name, plate, isCar) in [("West", "D-4", true), ("North", "B-2", false), ("East", "A-1", true), ("South", "C-3", false)] {
            let garage = Garage(name: name)
            context.insert(garage)
            let parked = isCar ? ParkedCar(plate: plate, seats: 4) : Parked(plate: plate)
            garage.parked.append(parked)
            garage.favorite = parked
        }
        try context.save()
        let fresh = ModelContext(container)
        let byPlate = try fresh.fetch(FetchDescriptor<Garage>(sortBy: [SortDescriptor(\.favorite?.plate)]))
        #expect(byPlate.map(\.name) == ["East", "North", "South", "West"])
        var window = FetchDescriptor<Garage>(sortBy: [SortDescriptor(\.favorite?.plate, order: .reverse)])
        window.fetchOffset = 1
        window.fetchLimit = 2
        #expect(try fresh.fetch(window).map(\.name) == ["South", "North"])
    }
}
