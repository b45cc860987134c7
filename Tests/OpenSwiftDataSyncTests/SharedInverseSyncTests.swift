import Foundation
import OpenSwiftData
import OpenSwiftDataSync
import OpenSwiftDataSyncTesting
import OpenSwiftDataTestSupport
import Testing

/// A cupboard with two shelves of cups, both named `Cup.cupboard` as their inverse.
@Model
final class Cupboard {
    var name: String
    @Relationship(inverse: \Cup.cupboard) var top: [Cup] = []
    @Relationship(inverse: \Cup.cupboard) var bottom: [Cup] = []

    init(name: String) { self.name = name }
}

@Model
final class Cup {
    var colour: String
    var cupboard: Cupboard?

    init(colour: String) { self.colour = colour }
}

/// The same shape with a different delete rule on each shelf, which sync cannot carry.
@Model
final class Pantry {
    @Relationship(deleteRule: .cascade, inverse: \Jar.pantry) var top: [Jar] = []
    @Relationship(inverse: \Jar.pantry) var bottom: [Jar] = []
    init() {}
}

@Model
final class Jar {
    var pantry: Pantry?
    init() {}
}

@Suite("Sync of collections sharing one inverse")
struct SharedInverseSyncTests {
    private func device(_ server: TestServer, _ directory: TemporaryDirectory, _ name: String) throws -> (ModelContainer, SyncEngine) {
        let container = try ModelContainer(for: Cupboard.self, configurations: ModelConfiguration(url: directory.file("\(name).sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(Cupboard.self)
        configuration.sync(Cup.self)
        let engine = try SyncEngine(
            container: container, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
            configuration: configuration, clock: server.clock, seed: seed(of: name))
        return (container, engine)
    }

    @Test("each shelf's cups, and a cup moved between shelves, reach another device on the same shelf")
    func shelvesConverge() async throws {
        let server = try await TestServer()
        defer { server.directory.cleanUp() }
        let (first, firstEngine) = try device(server, server.directory, "first")
        let (second, secondEngine) = try device(server, server.directory, "second")

        let context = ModelContext(first)
        let cupboard = Cupboard(name: "kitchen")
        context.insert(cupboard)
        cupboard.top = [Cup(colour: "red"), Cup(colour: "blue")]
        cupboard.bottom = [Cup(colour: "green")]
        try context.save()
        try await firstEngine.syncNow()
        try await secondEngine.syncNow()

        let reader = ModelContext(second)
        var copy = try #require(try reader.fetch(FetchDescriptor<Cupboard>()).first)
        #expect(copy.top.map(\.colour).sorted() == ["blue", "red"])
        #expect(copy.bottom.map(\.colour) == ["green"])

        let blue = try #require(cupboard.top.first { $0.colour == "blue" })
        cupboard.bottom.append(blue)
        try context.save()
        try await firstEngine.syncNow()
        try await secondEngine.syncNow()

        let later = ModelContext(second)
        copy = try #require(try later.fetch(FetchDescriptor<Cupboard>()).first)
        #expect(copy.top.map(\.colour) == ["red"])
        #expect(copy.bottom.map(\.colour).sorted() == ["blue", "green"])
        #expect((copy.top + copy.bottom).allSatisfy { $0.cupboard === copy })
    }

    @Test("an engine refuses collections sharing an inverse with different delete rules, naming them")
    func differentDeleteRulesRefused() async throws {
        let server = try await TestServer()
        defer { server.directory.cleanUp() }
        let container = try ModelContainer(for: Pantry.self, configurations: ModelConfiguration(url: server.directory.file("pantry.sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(Pantry.self)
        configuration.sync(Jar.self)
        let error = #expect(throws: SyncEngineError.self) {
            _ = try SyncEngine(
                container: container, transport: InMemorySyncTransport(service: server.service, user: "alice"), user: "alice",
                configuration: configuration, clock: server.clock, seed: 1)
        }
        #expect(error?.description.contains("Jar.pantry is the inverse of Pantry.top and Pantry.bottom") == true)
    }
}
