import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

@Suite("Property types")
struct PropertyTypeTests {
    @Test("every supported type round-trips exactly through a store file")
    func roundTrip() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("types.store")
        let original = Everything(seed: 3)
        let snapshot = Snapshot(original)
        do {
            let container = try ModelContainer(for: Everything.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(original)
            try context.save()
        }
        let container = try ModelContainer(for: Everything.self, configurations: ModelConfiguration(url: url))
        let fetched = try #require(try ModelContext(container).fetch(FetchDescriptor<Everything>()).first)
        #expect(fetched !== original)
        #expect(Snapshot(fetched) == snapshot)
    }

    @Test("columns are real SQLite columns of the mapped types")
    func columnTypes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("columns.store")
        _ = try ModelContainer(for: Everything.self, configurations: ModelConfiguration(url: url))
        let queue = try DatabaseQueue(path: url.path)
        let columns = try queue.read { db in
            try Row.fetchAll(db, sql: "PRAGMA table_info(\"Everything\")").map { row -> (String, String, Bool) in
                (row["name"], row["type"], row["notnull"] as Int == 1)
            }
        }
        let byName = Dictionary(uniqueKeysWithValues: columns.map { ($0.0, ($0.1, $0.2)) })
        #expect(byName["_pk"]?.0 == "INTEGER")
        #expect(byName["bool"]?.0 == "INTEGER")
        #expect(byName["int"]?.0 == "INTEGER")
        #expect(byName["double"]?.0 == "REAL")
        #expect(byName["date"]?.0 == "REAL")
        #expect(byName["string"]?.0 == "TEXT")
        #expect(byName["decimal"]?.0 == "TEXT")
        #expect(byName["uuid"]?.0 == "BLOB")
        #expect(byName["data"]?.0 == "BLOB")
        #expect(byName["status"]?.0 == "TEXT", "String-backed enums are stored as their raw value")
        #expect(byName["priority"]?.0 == "INTEGER", "Int-backed enums are stored as their raw value")
        #expect(byName["address"]?.0 == "TEXT")
        #expect(byName["string"]?.1 == true, "non-optional properties are NOT NULL")
        #expect(byName["optionalString"]?.1 == false, "optional properties are nullable")
        #expect(columns.count == Everything.schemaMetadata.count + 1)

        let stored = try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT COUNT(*) AS n FROM \"Everything\"")
        }
        #expect(stored?["n"] == 0)
    }

    @Test("enums are stored as their raw values, so SQL can compare them")
    func enumRawValues() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = directory.file("enums.store")
        do {
            let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Note(title: "x", count: 1, status: .done))
            try context.save()
        }
        let queue = try DatabaseQueue(path: url.path)
        let raw = try queue.read { db in try String.fetchOne(db, sql: "SELECT status FROM \"Note\"") }
        #expect(raw == "done")
    }
}

/// The values of an `Everything`, compared field by field (Data, Decimal, URL, Date exactly).
struct Snapshot: Equatable {
    let values: [String]

    init(_ model: Everything) {
        values = [
            "\(model.bool)", "\(model.int)", "\(model.int8)", "\(model.int16)", "\(model.int32)", "\(model.int64)",
            "\(model.uint)", "\(model.uint8)", "\(model.uint16)", "\(model.uint32)", "\(model.uint64)",
            "\(model.double.bitPattern)", "\(model.float.bitPattern)", "\(model.decimal)", model.string,
            "\(model.date.timeIntervalSinceReferenceDate.bitPattern)", "\(Array(model.data))", model.uuid.uuidString,
            model.url.absoluteString, "\(model.status)", "\(model.priority)", "\(model.address)", "\(model.shape)",
            "\(model.tags)", "\(model.scores.sorted { $0.key < $1.key })", "\(model.addresses)",
            "\(String(describing: model.optionalBool))", "\(String(describing: model.optionalInt))",
            "\(String(describing: model.optionalUInt64))", "\(String(describing: model.optionalDouble?.bitPattern))",
            "\(String(describing: model.optionalFloat))", "\(String(describing: model.optionalDecimal))",
            "\(String(describing: model.optionalString))",
            "\(String(describing: model.optionalDate?.timeIntervalSinceReferenceDate.bitPattern))",
            "\(String(describing: model.optionalData))", "\(String(describing: model.optionalUUID))",
            "\(String(describing: model.optionalURL))", "\(String(describing: model.optionalStatus))",
            "\(String(describing: model.optionalAddress))", "\(String(describing: model.optionalShape))",
            "\(String(describing: model.optionalTags))", "\(String(describing: model.optionalDictionary))",
        ]
    }
}
