import Foundation
import GRDB

/// A record of the GRDB baseline: a plain struct decoded by hand from a `Row`.
struct BenchRecord {
    var id: Int64
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

    /// A record not yet stored (its `id` is assigned by SQLite).
    init(_ values: SampleValues) {
        id = 0
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

    /// Decodes a row of ``GRDBBaseline/selectSQL``.
    init(row: Row) throws {
        id = row[0]
        serial = row[1]
        title = row[2]
        category = row[3]
        quantity = row[4]
        price = row[5]
        isActive = row[6]
        createdAt = Date(timeIntervalSinceReferenceDate: row[7])
        token = row[8]
        note = row[9]
        let rawStatus: String = row[10]
        guard let status = Status(rawValue: rawStatus) else {
            throw BenchmarkError("row \(id) has an unknown status \(rawStatus)")
        }
        self.status = status
    }

    /// The insert arguments, in ``GRDBBaseline/insertSQL`` order.
    var insertArguments: StatementArguments {
        [serial, title, category, quantity, price, isActive, createdAt.timeIntervalSinceReferenceDate, token, note, status.rawValue]
    }
}

/// Hand-written GRDB code on a `DatabasePool`: prepared statements, unchecked arguments and
/// manual row decoding, over a STRICT table laid out as OpenSwiftData lays out its own.
enum GRDBBaseline: Contender {
    static let key = "grdb"

    static let createSQL = """
        CREATE TABLE bench_item (
            _pk INTEGER PRIMARY KEY, serial INTEGER NOT NULL, title TEXT NOT NULL, category TEXT NOT NULL,
            quantity INTEGER NOT NULL, price REAL NOT NULL, isActive INTEGER NOT NULL, createdAt REAL NOT NULL,
            token BLOB NOT NULL, note TEXT, status TEXT NOT NULL
        ) STRICT
        """
    static let insertSQL = """
        INSERT INTO bench_item (serial, title, category, quantity, price, isActive, createdAt, token, note, status)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    static let selectSQL = """
        SELECT _pk, serial, title, category, quantity, price, isActive, createdAt, token, note, status
        FROM bench_item ORDER BY _pk
        """

    static func populate(at url: URL, count: Int) throws {
        let pool = try createStore(at: url)
        try insert(count: count, into: pool)
        try pool.close()
    }

    static func timeInsert(count: Int, at url: URL) throws -> Duration {
        let pool = try createStore(at: url)
        // The records outlive the measurement, as OpenSwiftData's context keeps its models.
        var records: [BenchRecord] = []
        let elapsed = try ContinuousClock().measure {
            records = try insert(count: count, into: pool)
        }
        try expect(try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM bench_item") } ?? 0, count, "rows after insert")
        try expect(records.count, count, "records after insert")
        try pool.close()
        return elapsed
    }

    static func timeFetch(at url: URL) throws -> (elapsed: Duration, checksum: Checksum) {
        let pool = try DatabasePool(path: url.path)
        var checksum = Checksum()
        let elapsed = try ContinuousClock().measure {
            let records = try fetchAll(pool)
            checksum = fold(records)
        }
        try pool.close()
        return (elapsed, checksum)
    }

    static func timeUpdate(every step: Int, at url: URL) throws -> Duration {
        let pool = try DatabasePool(path: url.path)
        var records = try fetchAll(pool)
        let elapsed = try ContinuousClock().measure {
            try pool.write { db in
                let statement = try db.makeStatement(sql: "UPDATE bench_item SET quantity = ?, note = ? WHERE _pk = ?")
                for index in stride(from: 0, to: records.count, by: step) {
                    records[index].quantity += 1
                    records[index].note = "updated"
                    statement.setUncheckedArguments([records[index].quantity, records[index].note, records[index].id])
                    try statement.execute()
                }
            }
        }
        let updated = try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM bench_item WHERE note = 'updated'") } ?? 0
        try expect(updated, (records.count + step - 1) / step, "updated rows")
        try pool.close()
        return elapsed
    }

    static func timeDelete(every step: Int, at url: URL) throws -> Duration {
        let pool = try DatabasePool(path: url.path)
        let records = try fetchAll(pool)
        let elapsed = try ContinuousClock().measure {
            try pool.write { db in
                let statement = try db.makeStatement(sql: "DELETE FROM bench_item WHERE _pk = ?")
                for index in stride(from: 0, to: records.count, by: step) {
                    statement.setUncheckedArguments([records[index].id])
                    try statement.execute()
                }
            }
        }
        let remaining = try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM bench_item") } ?? 0
        try expect(remaining, records.count - (records.count + step - 1) / step, "rows after delete")
        try pool.close()
        return elapsed
    }

    static func readAll(at url: URL) throws -> (count: Int, checksum: Checksum) {
        let pool = try DatabasePool(path: url.path)
        let records = try fetchAll(pool)
        return (records.count, fold(records))
    }

    // MARK: Helpers

    private static func createStore(at url: URL) throws -> DatabasePool {
        let pool = try DatabasePool(path: url.path)
        try pool.write { db in try db.execute(sql: createSQL) }
        return pool
    }

    /// Builds `count` records and inserts them with one prepared statement in one transaction;
    /// returns them with their primary keys.
    @discardableResult
    private static func insert(count: Int, into pool: DatabasePool) throws -> [BenchRecord] {
        var records = (0..<count).map { BenchRecord(SampleValues(index: $0)) }
        try pool.write { db in
            let statement = try db.makeStatement(sql: insertSQL)
            for index in records.indices {
                statement.setUncheckedArguments(records[index].insertArguments)
                try statement.execute()
                records[index].id = db.lastInsertedRowID
            }
        }
        return records
    }

    /// Every record, in primary key order, through a row cursor.
    static func fetchAll(_ pool: DatabasePool) throws -> [BenchRecord] {
        try pool.read { db in
            let statement = try db.cachedStatement(sql: selectSQL)
            var records: [BenchRecord] = []
            let rows = try Row.fetchCursor(statement)
            while let row = try rows.next() {
                records.append(try BenchRecord(row: row))
            }
            return records
        }
    }

    static func fold(_ records: [BenchRecord]) -> Checksum {
        var checksum = Checksum()
        for record in records {
            checksum.add(
                serial: record.serial, title: record.title, category: record.category, quantity: record.quantity,
                price: record.price, isActive: record.isActive, createdAt: record.createdAt, token: record.token,
                note: record.note, status: record.status
            )
        }
        return checksum
    }
}
