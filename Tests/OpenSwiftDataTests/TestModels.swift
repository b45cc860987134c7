import Foundation
import OpenSwiftData

enum Status: String, Codable, CaseIterable {
    case pending, active, done
}

enum Priority: Int, Codable {
    case low = 1, high = 9
}

struct Address: Codable, Hashable {
    var street: String
    var city: String
    var zip: Int?
}

enum Shape: Codable, Hashable {
    case circle(radius: Double)
    case square(side: Double)
    case none
}

@Model
final class Note {
    var title: String
    var body: String = ""
    var count = 0
    var status: Status = .pending
    var createdAt = Date(timeIntervalSinceReferenceDate: 0)

    init(title: String) {
        self.title = title
    }

    init(title: String, count: Int, status: Status) {
        self.title = title
        self.count = count
        self.status = status
    }
}

/// Every storable property type, each optional too.
@Model
final class Everything {
    var bool: Bool
    var int: Int
    var int8: Int8
    var int16: Int16
    var int32: Int32
    var int64: Int64
    var uint: UInt
    var uint8: UInt8
    var uint16: UInt16
    var uint32: UInt32
    var uint64: UInt64
    var double: Double
    var float: Float
    var decimal: Decimal
    var string: String
    var date: Date
    var data: Data
    var uuid: UUID
    var url: URL
    var status: Status
    var priority: Priority
    var address: Address
    var shape: Shape
    var tags: [String]
    var scores: [Int: Double]
    var addresses: [Address]
    var optionalBool: Bool?
    var optionalInt: Int?
    var optionalUInt64: UInt64?
    var optionalDouble: Double?
    var optionalFloat: Float?
    var optionalDecimal: Decimal?
    var optionalString: String?
    var optionalDate: Date?
    var optionalData: Data?
    var optionalUUID: UUID?
    var optionalURL: URL?
    var optionalStatus: Status?
    var optionalAddress: Address?
    var optionalShape: Shape?
    var optionalTags: [String]?
    var optionalDictionary: [String: Int]?

    init(seed: Int) {
        bool = seed % 2 == 0
        int = Int.max - seed
        int8 = Int8.min
        int16 = Int16.max
        int32 = Int32.min + Int32(seed)
        int64 = Int64.min
        uint = UInt(Int64.max)
        uint8 = UInt8.max
        uint16 = UInt16.max
        uint32 = UInt32.max
        uint64 = UInt64(Int64.max) - UInt64(seed)
        double = 0.1 + Double(seed) * 1e-300
        float = Float.pi
        decimal = Decimal(string: "12345678901234567890.123456789") ?? 0
        string = "héllo 👋🏽 \(seed) 'quote' \"double\" e\u{301}"
        date = Date(timeIntervalSinceReferenceDate: 123_456_789.123_456_7 + Double(seed))
        data = Data([0, 1, 2, 255, UInt8(seed % 256)])
        uuid = UUID()
        url = URL(string: "https://example.com/a%20b?q=1#frag") ?? URL(fileURLWithPath: "/")
        status = .active
        priority = .high
        address = Address(street: "1 Main St", city: "Kyiv", zip: nil)
        shape = .circle(radius: 2.5)
        tags = ["b", "a", "b"]
        scores = [1: 1.5, 2: -0.25]
        addresses = [Address(street: "x", city: "y", zip: 1)]
        optionalBool = nil
        optionalInt = seed
        optionalUInt64 = nil
        optionalDouble = -2.5e-10
        optionalFloat = nil
        optionalDecimal = Decimal(-5)
        optionalString = nil
        optionalDate = Date(timeIntervalSince1970: 0)
        optionalData = nil
        optionalUUID = UUID()
        optionalURL = nil
        optionalStatus = .done
        optionalAddress = nil
        optionalShape = Shape.none
        optionalTags = []
        optionalDictionary = ["k": 1]
    }
}

@Model
final class Account {
    @Attribute(.unique) var email: String
    var name: String
    var logins: Int = 0

    init(email: String, name: String) {
        self.email = email
        self.name = name
    }
}

@Model
final class Person {
    #Unique<Person>([\.givenName, \.familyName])
    #Index<Person>([\.familyName], [\.age, \.familyName])

    var givenName: String
    var familyName: String
    var age: Int

    init(givenName: String, familyName: String, age: Int) {
        self.givenName = givenName
        self.familyName = familyName
        self.age = age
    }
}

@Model
final class Gadget {
    var name: String
    @Attribute(.ephemeral) var draft: String = "none"
    @Attribute(.externalStorage) var photo: Data?
    @Attribute(.spotlight, .allowsCloudEncryption, .preserveValueOnDeletion) var serial: String = ""
    @Attribute(originalName: "label", hashModifier: "v2") var title: String = ""
    @Transient var cacheHits = 0

    var computed: String { name.uppercased() }

    init(name: String) {
        self.name = name
    }
}

/// Same entity name as `Note`, different layout: used to open a store with another schema.
enum OtherSchema {
    @Model
    final class Note {
        var title: String
        var priority: Int

        init(title: String, priority: Int) {
            self.title = title
            self.priority = priority
        }
    }
}

func inMemoryContainer(_ types: any PersistentModel.Type...) throws -> ModelContainer {
    try ModelContainer(for: Schema(types), configurations: [ModelConfiguration(isStoredInMemoryOnly: true)])
}

/// Shapes older model code uses: implicitly unwrapped optionals, backticked names.
@Model
final class Legacy {
    var nickname: String! = "n"
    var `default`: Int = 1

    init() {}
}

/// A model that declares its own `id`, as much SwiftData code does.
@Model
public final class Message {
    @Attribute(.unique) public var id: UUID
    public var text: String

    public init(id: UUID = UUID(), text: String) {
        self.id = id
        self.text = text
    }
}

/// A model with no persisted property at all: a row that is only an identity.
@Model
final class Marker {
    @Transient var label = ""

    init() {}
}
