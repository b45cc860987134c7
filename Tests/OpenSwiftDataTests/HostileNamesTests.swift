import Foundation
import Observation
import Testing

@testable import OpenSwiftData

/// A model whose members take every name the code `@Model`, `@_PersistedProperty`, `#Unique`,
/// `#Index` and `#Predicate` generate refers to (or that the library's own protocols use), so
/// that generated code which names one of them unqualified fails to compile here.
///
/// What cannot be declared, here as in Apple's SwiftData: a nested *type* named `Swift`,
/// `Foundation`, `Observation` or `OpenSwiftData`. Inside the class it hides the module in type
/// positions too, and the generated members' types must name the module (`any
/// OpenSwiftData.BackingData<Self>`, `Observation.ObservationRegistrar`, `Swift.KeyPath`: a
/// bare `KeyPath` could be a nested type of the user's, as `KeyPath` is below). Members of
/// those names that are not types (properties, methods, cases) are fine: generated code names
/// no module in an expression. Nor can a model declare `access(keyPath:)` or
/// `withMutation(keyPath:_:)`: Observation's protocol, which `@Model` adopts as `@Observable`
/// does, expects these names.
@Model
final class HostileNames {
    #Unique<HostileNames>([\.key])
    #Index<HostileNames>([\.type], [\.value, \.index])

    // Properties named like the generated code's locals, parameters and members.
    var type: Element
    var id: UUID
    var hash: String
    var description: String
    var data: Data
    var storage: Int
    var context: String
    var schema: String
    var keyPath: String
    var value: Int
    var values: [Int]
    var layout: String
    var fill: Double
    var Swift: Int
    var Foundation: String
    var OpenSwiftData: Bool
    var Observation: Int = 0
    var index: Int = 0
    var key: String
    var backingData: String = ""
    var initialValue: Int = 1
    var newValue: Int = 2
    var mutation: String = ""
    var member: String = ""
    var metadata: String = ""
    var defaultValue: Int = 3
    var name: String = ""
    var options: Int = 0
    var modelType: String = ""
    var persistentModelIDText: String = ""
    var shape: Value = Value(Root: 4)
    @Attribute(originalName: "previousNote") var note: String = ""
    @Relationship(deleteRule: .cascade, inverse: \HostileChild.owner) var children: [HostileChild] = []

    // Nested types named like the generic parameters and standard-library types it uses.
    enum Element: String, Codable, CaseIterable {
        case type, id, hash, description, data, storage, context, value, values, notify, layout, fill
        case Swift, Foundation, OpenSwiftData, Element, Value, Root
    }

    struct Value: Codable, Hashable {
        var Root: Int
    }

    // No nested `Root`: it is `PersistentModel`'s associated type (the topmost model class), as
    // in SwiftData, which a model's own type of that name would take the place of.
    struct KeyPath {}
    struct AnyKeyPath {}
    struct Sendable {}
    struct Schema {}
    struct BackingData {}
    struct PersistentModel {}
    struct Observable {}
    struct ObservationRegistrar {}
    struct Predicate {}
    struct PredicateExpressions {}
    struct Expression {}
    struct PropertyMetadata {}
    struct ModelContext {}
    struct Optional {}
    struct Array {}
    struct Int64 {}

    // Methods named like the library's entry points and the generated code's helpers.
    func notify() -> String { "notified" }
    func modelContext(_ label: String) -> String { label }
    func storage(_ index: Int) -> Int { index }
    static func fill() -> Double { 1 }
    static func layout() -> String { "layout" }
    func type(of value: Int) -> String { "not Swift.type(of:)" }
    func unsafeDowncast(_ value: Int) -> Int { value }
    func _openExistential(_ value: Int) -> Int { value }

    /// A predicate written inside the model, where every member above is in scope.
    static func matching(foundation: String) -> Foundation.Predicate<HostileNames> {
        #Predicate<HostileNames> { $0.Foundation == foundation && $0.OpenSwiftData }
    }

    init(type: Element, key: String, value: Int, Swift: Int, Foundation: String, OpenSwiftData: Bool) {
        self.type = type
        self.id = UUID()
        self.hash = "h-\(key)"
        self.description = "d-\(key)"
        self.data = Data(key.utf8)
        self.storage = value * 10
        self.context = "c"
        self.schema = "s"
        self.keyPath = "k"
        self.value = value
        self.values = [value, value + 1]
        self.layout = "l"
        self.fill = Double(value) / 2
        self.Swift = Swift
        self.Foundation = Foundation
        self.OpenSwiftData = OpenSwiftData
        self.key = key
    }
}

@Model
final class HostileChild {
    var value: String
    var owner: HostileNames?
    var Swift: Int = 0

    init(value: String) {
        self.value = value
    }
}

/// `@ModelActor` on an actor whose members shadow the module and the generated initializer's
/// locals.
@ModelActor
actor HostileActor {
    var OpenSwiftData = 0
    var modelExecutorName = "executor"

    func count() throws -> Int {
        try modelContext.fetchCount(FetchDescriptor<HostileNames>())
    }
}

@Suite("Macro hygiene: a model may use any member name")
struct HostileNamesTests {
    private func makeContainer() throws -> ModelContainer {
        try inMemoryContainer(HostileNames.self, HostileChild.self)
    }

    @Test("the hostile-names model saves, fetches and keeps every value")
    func saveAndFetch() throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        let model = HostileNames(type: .Swift, key: "a", value: 7, Swift: 3, Foundation: "f", OpenSwiftData: true)
        let child = HostileChild(value: "child")
        model.children.append(child)
        model.shape = .init(Root: 9)
        context.insert(model)
        try context.save()

        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<HostileNames>()).first)
        #expect(fetched !== model)
        #expect(fetched.type == .Swift)
        #expect(fetched.id == model.id)
        #expect(fetched.hash == "h-a")
        #expect(fetched.description == "d-a")
        #expect(fetched.data == Data("a".utf8))
        #expect(fetched.storage == 70)
        #expect(fetched.value == 7)
        #expect(fetched.values == [7, 8])
        #expect(fetched.fill == 3.5)
        #expect(fetched.Swift == 3)
        #expect(fetched.Foundation == "f")
        #expect(fetched.OpenSwiftData)
        #expect(fetched.initialValue == 1)
        #expect(fetched.newValue == 2)
        #expect(fetched.defaultValue == 3)
        #expect(fetched.shape == HostileNames.Value(Root: 9))
        #expect(fetched.children.map(\.value) == ["child"])
        #expect(fetched.children.first?.owner === fetched)
        #expect(fetched.notify() == "notified")
        #expect(fetched.type(of: 1) == "not Swift.type(of:)")
        #expect(fetched.modelContext("x") == "x")
    }

    @Test("#Predicate over the hostile names, written outside and inside the model")
    func predicates() throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        for (index, type) in HostileNames.Element.allCases.enumerated() {
            context.insert(
                HostileNames(
                    type: type, key: "k\(index)", value: index, Swift: index % 3, Foundation: index.isMultiple(of: 2) ? "even" : "odd",
                    OpenSwiftData: index < 10))
        }
        try context.save()

        let outside = try context.fetch(
            FetchDescriptor<HostileNames>(
                predicate: #Predicate { $0.type == .Foundation || ($0.Swift == 2 && $0.value > 10 && $0.values.contains(15)) },
                sortBy: [SortDescriptor(\.value)]
            ))
        #expect(outside.map(\.type) == [.Foundation, .OpenSwiftData])
        // The SQL translation agrees with Foundation's evaluation.
        let everything = try context.fetch(FetchDescriptor<HostileNames>(sortBy: [SortDescriptor(\.value)]))
        let inside = HostileNames.matching(foundation: "even")
        let evaluated = try everything.filter { try inside.evaluate($0) }.map(\.key)
        let fetched = try context.fetch(FetchDescriptor(predicate: inside, sortBy: [SortDescriptor(\.value)])).map(\.key)
        #expect(fetched == ["k0", "k2", "k4", "k6", "k8"])
        #expect(fetched == evaluated)
    }

    @Test("#Unique and #Index of the hostile model: constraints, upsert")
    func constraints() throws {
        #expect(HostileNames._$uniquenessConstraints == [[\HostileNames.key]])
        #expect(HostileNames._$indices == [[\HostileNames.type], [\HostileNames.value, \HostileNames.index]])
        let container = try makeContainer()
        let context = ModelContext(container)
        context.insert(HostileNames(type: .data, key: "same", value: 1, Swift: 0, Foundation: "", OpenSwiftData: false))
        try context.save()
        context.insert(HostileNames(type: .fill, key: "same", value: 2, Swift: 0, Foundation: "", OpenSwiftData: false))
        try context.save()
        let rows = try ModelContext(container).fetch(FetchDescriptor<HostileNames>())
        #expect(rows.map(\.type) == [.fill])
    }

    @Test("observers see the hostile model's changes")
    func observation() throws {
        let model = HostileNames(type: .id, key: "o", value: 1, Swift: 0, Foundation: "", OpenSwiftData: false)
        let changed = ChangeFlag()
        withObservationTracking {
            _ = model.Swift
        } onChange: {
            changed.set()
        }
        model.Swift = 5
        #expect(changed.isSet)
        #expect(model.Swift == 5)
    }

    @Test("@ModelActor on an actor with hostile member names")
    func modelActor() async throws {
        let container = try makeContainer()
        let context = ModelContext(container)
        context.insert(HostileNames(type: .id, key: "x", value: 1, Swift: 0, Foundation: "", OpenSwiftData: false))
        try context.save()
        let actor = HostileActor(modelContainer: container)
        #expect(try await actor.count() == 1)
    }
}

/// A flag an observation's `onChange` sets (it may run on any thread).
private final class ChangeFlag: @unchecked Sendable {
    // `@unchecked Sendable`: the one stored value is only read and written under `lock`.
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
