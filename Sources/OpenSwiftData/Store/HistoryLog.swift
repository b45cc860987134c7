import Foundation
import GRDB

/// One row change as the history log records it: an entity's row and named stored values, no
/// model objects.
struct HistoryRecord: Hashable {
    enum Kind: UInt8 {
        case insert = 1
        case update = 2
        case delete = 3
    }

    var kind: Kind
    var entity: String
    var primaryKey: Int64
    /// The changed properties: every stored one for an insert, the preserved ones for a delete.
    /// Inserts of one entity share one array (and the encoder its interned names).
    var names: [String]
    /// The new stored value of each property in `names`.
    var values: [DatabaseValue]
    /// Positions in `names` of properties without a stored value (a to-many relationship kept by
    /// the other side's foreign key); their `values` entry is NULL.
    var valueless: [Int] = []

    /// The properties with their values (nil for the valueless).
    var properties: [(name: String, value: DatabaseValue?)] {
        names.indices.map { index in (names[index], valueless.contains(index) ? nil : values[index]) }
    }
}

/// One transaction of the history log.
struct HistoryEntry {
    let id: Int64
    let timestamp: Date
    let author: String?
    let bundle: String
    let process: String
    var records: [HistoryRecord]
}

/// The history log: one row per committed save, written in the save's own transaction, with the
/// changes of the save packed in one blob (a bulk insert costs one row, not one per model).
///
/// Also keeps, per entity, the largest primary key ever used, so that a deleted row's key is
/// never given to another row: a key named in the history keeps naming one record.
enum HistoryLog {
    static let table = "osd_history"
    static let sequenceTable = "osd_sequence"
    /// The metadata key of the largest transaction number removed by `deleteHistory`.
    static let deletedThroughKey = "historyDeletedThrough"

    /// The tables the log needs, created when missing (stores made by earlier versions).
    static let createStatements = [
        """
        CREATE TABLE IF NOT EXISTS \(quoted(table)) (\
        "id" INTEGER PRIMARY KEY AUTOINCREMENT, "timestamp" REAL NOT NULL, "author" TEXT, \
        "bundle" TEXT NOT NULL, "process" TEXT NOT NULL, "changes" BLOB NOT NULL) STRICT
        """,
        "CREATE TABLE IF NOT EXISTS \(quoted(sequenceTable)) (\"entity\" TEXT PRIMARY KEY NOT NULL, \"largest\" INTEGER NOT NULL) STRICT",
    ]

    /// The log's own tables, which migrations keep.
    static let tables: Set<String> = [table, sequenceTable, "sqlite_sequence"]

    /// This process, as transactions name it.
    static let bundle: String = {
        let arguments = ProcessInfo.processInfo.arguments
        return arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? ProcessInfo.processInfo.processName
    }()
    static let process = String(ProcessInfo.processInfo.processIdentifier)

    /// Appends one transaction; returns its number, or nil when there is nothing to record.
    @discardableResult
    static func append(_ changes: HistoryCoding.Encoder, author: String?, timestamp: Date = Date(), in db: Database) throws -> Int64? {
        guard changes.count > 0 else { return nil }
        let statement = try db.cachedStatement(
            sql: "INSERT INTO \(quoted(table)) (timestamp, author, bundle, process, changes) VALUES (?, ?, ?, ?, ?)")
        try statement.execute(arguments: [timestamp.timeIntervalSince1970, author, bundle, process, changes.finish()])
        return db.lastInsertedRowID
    }

    /// The primary key the next inserted row of `entity` takes: above every key in the table and
    /// every key the table ever held.
    /// `sequence` is the quoted name of the sequence table that keeps the entity's keys (the
    /// table's own file's, in a container with several configurations).
    static func nextPrimaryKey(of entity: String, sequence: String = quoted(sequenceTable), in db: Database) throws -> Int64 {
        let largestNow = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(\(quoted(TableDescription.primaryKey))), 0) FROM \(quoted(entity))") ?? 0
        let largestEver = try Int64.fetchOne(db, sql: "SELECT largest FROM \(sequence) WHERE entity = ?", arguments: [entity]) ?? 0
        return max(largestNow, largestEver) + 1
    }

    /// Records the table's largest key as used, unless the sequence already knows the entity.
    static func seedPrimaryKeySequence(of entity: String, in db: Database) throws {
        try db.execute(
            sql:
                "INSERT OR IGNORE INTO \(quoted(sequenceTable)) (entity, largest) SELECT ?, COALESCE(MAX(\(quoted(TableDescription.primaryKey))), 0) FROM \(quoted(entity))",
            arguments: [entity]
        )
    }

    /// Records the largest primary key given to a row of `entity`.
    static func recordLargestPrimaryKey(_ key: Int64, of entity: String, sequence: String = quoted(sequenceTable), in db: Database) throws {
        try db.execute(
            sql:
                "INSERT INTO \(sequence) (entity, largest) VALUES (?, ?) ON CONFLICT (entity) DO UPDATE SET largest = MAX(largest, excluded.largest)",
            arguments: [entity, key]
        )
    }

    /// Whether the log's tables exist (a read-only store made by an earlier version lacks them).
    static func exists(in db: Database) throws -> Bool {
        try db.tableExists(table)
    }

    /// The transactions whose row matches `condition` (SQL over the columns `id`, `timestamp`,
    /// `author`), in transaction order, at most `limit`.
    static func entries(where condition: (sql: String, arguments: [DatabaseValue])?, limit: Int?, in db: Database) throws -> [HistoryEntry] {
        guard try exists(in: db) else { return [] }
        let (sql, arguments) = select("id, timestamp, author, bundle, process, changes", where: condition, limit: limit)
        return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
            let id: Int64 = row[0]
            let blob: Data = row[5]
            guard let records = HistoryCoding.decode(blob) else {
                throw SwiftDataError(.storeFailure, "history transaction \(id) is corrupt and cannot be read")
            }
            return HistoryEntry(
                id: id, timestamp: Date(timeIntervalSince1970: row[1]), author: row[2], bundle: row[3], process: row[4], records: records)
        }
    }

    /// The numbers of the transactions whose row matches `condition`, in order.
    static func transactionIDs(where condition: (sql: String, arguments: [DatabaseValue])?, in db: Database) throws -> [Int64] {
        guard try exists(in: db) else { return [] }
        let (sql, arguments) = select("id", where: condition, limit: nil)
        return try Int64.fetchAll(db, sql: sql, arguments: arguments)
    }

    /// A query of the log's rows, in transaction order.
    private static func select(
        _ columns: String, where condition: (sql: String, arguments: [DatabaseValue])?, limit: Int?
    ) -> (String, StatementArguments) {
        var sql = "SELECT \(columns) FROM \(quoted(table))"
        if let condition { sql += " WHERE " + condition.sql }
        sql += " ORDER BY id"
        if let limit { sql += " LIMIT \(limit)" }
        return (sql, StatementArguments(condition?.arguments ?? []))
    }

    /// Deletes the transactions with the given numbers and remembers the largest one deleted,
    /// so that a token from before it is known to be expired.
    static func delete(_ ids: [Int64], in db: Database) throws {
        guard let largest = ids.max(), try exists(in: db) else { return }
        try db.execute(
            sql: "DELETE FROM \(quoted(table)) WHERE id IN (SELECT value FROM json_each(?))",
            arguments: [jsonKeyArray(ids)]
        )
        let previous = try deletedThrough(in: db)
        if largest > previous {
            try db.execute(
                sql: "INSERT OR REPLACE INTO \(quoted(SQLiteStore.metadataTable)) (key, value) VALUES (?, ?)",
                arguments: [deletedThroughKey, String(largest)]
            )
        }
    }

    /// The largest transaction number `deleteHistory` removed (0 when none was).
    static func deletedThrough(in db: Database) throws -> Int64 {
        let value = try String.fetchOne(
            db, sql: "SELECT value FROM \(quoted(SQLiteStore.metadataTable)) WHERE key = ?", arguments: [deletedThroughKey])
        return value.flatMap { Int64($0) } ?? 0
    }
}

/// The compact binary form of a transaction's changes: a table of the names used, then each
/// change as kind, entity, key and (name, value) pairs, with integers as variable-length
/// numbers.
enum HistoryCoding {
    private static let formatVersion: UInt8 = 1

    private enum Tag: UInt8 {
        case absent = 0, null, integer, real, text, blob
    }

    /// Encodes changes as a save writes them, straight into the blob's bytes (no record objects
    /// in between: a bulk insert's values are encoded from the arrays bound to its statements).
    final class Encoder {
        private var nameIndexes: [String: Int] = [:]
        private var names: [String] = []
        private let body = ByteWriter(capacity: 4096)
        /// How many changes were appended.
        private(set) var count = 0
        // Consecutive changes usually share their names array (the inserts of one entity) and
        // their entity.
        private var lastNames: [String] = []
        private var lastIndexes: [Int] = []
        private var lastEntity = ""
        private var lastEntityIndex = -1

        private func intern(_ name: String) -> Int {
            if let index = nameIndexes[name] { return index }
            nameIndexes[name] = names.count
            names.append(name)
            return names.count - 1
        }

        /// Appends one change; `values` holds a value per name (NULL at `valueless` positions,
        /// which are recorded as having no value).
        func append(
            _ kind: HistoryRecord.Kind, entity: String, primaryKey: Int64, names recordNames: [String], values: [DatabaseValue], valueless: [Int] = []
        ) {
            count += 1
            body.byte(kind.rawValue)
            if lastEntityIndex < 0 || entity != lastEntity {
                lastEntity = entity
                lastEntityIndex = intern(entity)
            }
            body.unsigned(UInt64(lastEntityIndex))
            body.signed(primaryKey)
            body.unsigned(UInt64(recordNames.count))
            if recordNames != lastNames {
                lastNames = recordNames
                lastIndexes = recordNames.map(intern)
            }
            values.withUnsafeBufferPointer { values in
                for index in 0..<recordNames.count {
                    body.unsigned(UInt64(lastIndexes[index]))
                    if index >= values.count || (!valueless.isEmpty && valueless.contains(index)) {
                        body.byte(Tag.absent.rawValue)
                    } else {
                        body.value(values[index])
                    }
                }
            }
        }

        /// The blob: the format version, the names used, the number of changes, the changes.
        func finish() -> Data {
            let blob = ByteWriter(capacity: body.count + 16 * names.count + 32)
            blob.byte(formatVersion)
            blob.unsigned(UInt64(names.count))
            for name in names { blob.string(name) }
            blob.unsigned(UInt64(count))
            blob.append(body)
            return blob.data
        }
    }

    /// The records of a blob, or nil when it is not a valid encoding.
    static func decode(_ data: Data) -> [HistoryRecord]? {
        var reader = ByteReader(bytes: [UInt8](data))
        guard reader.byte() == formatVersion, let nameCount = reader.count() else { return nil }
        var names: [String] = []
        names.reserveCapacity(nameCount)
        for _ in 0..<nameCount {
            guard let name = reader.string() else { return nil }
            names.append(name)
        }
        func name(_ index: Int?) -> String? {
            guard let index, index < names.count else { return nil }
            return names[index]
        }
        guard let count = reader.count() else { return nil }
        var records: [HistoryRecord] = []
        records.reserveCapacity(count)
        for _ in 0..<count {
            guard let kind = reader.byte().flatMap(HistoryRecord.Kind.init(rawValue:)),
                let entity = name(reader.count()), let key = reader.signed(),
                let propertyCount = reader.count()
            else { return nil }
            var record = HistoryRecord(kind: kind, entity: entity, primaryKey: key, names: [], values: [])
            record.names.reserveCapacity(propertyCount)
            record.values.reserveCapacity(propertyCount)
            for index in 0..<propertyCount {
                guard let property = name(reader.count()), let value = reader.value() else { return nil }
                record.names.append(property)
                record.values.append(value ?? .null)
                if value == nil { record.valueless.append(index) }
            }
            records.append(record)
        }
        return reader.isAtEnd ? records : nil
    }

    /// An append-only byte buffer written through a raw pointer: encoding a bulk insert's
    /// million values must cost little next to writing the rows.
    final class ByteWriter {
        private var base: UnsafeMutableRawPointer
        private var capacity: Int
        private(set) var count = 0

        init(capacity: Int) {
            self.capacity = max(capacity, 64)
            base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
        }

        deinit { base.deallocate() }

        @inline(__always)
        private func reserve(_ extra: Int) {
            guard count + extra > capacity else { return }
            let newCapacity = max(capacity * 2, count + extra)
            let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
            grown.copyMemory(from: base, byteCount: count)
            base.deallocate()
            base = grown
            capacity = newCapacity
        }

        @inline(__always)
        func byte(_ value: UInt8) {
            reserve(1)
            base.storeBytes(of: value, toByteOffset: count, as: UInt8.self)
            count += 1
        }

        @inline(__always)
        func unsigned(_ value: UInt64) {
            reserve(10)
            var value = value
            while value >= 0x80 {
                base.storeBytes(of: UInt8(truncatingIfNeeded: value) | 0x80, toByteOffset: count, as: UInt8.self)
                count += 1
                value >>= 7
            }
            base.storeBytes(of: UInt8(value), toByteOffset: count, as: UInt8.self)
            count += 1
        }

        @inline(__always)
        func signed(_ value: Int64) {
            unsigned(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
        }

        func raw(_ bytes: UnsafeRawBufferPointer) {
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
            reserve(bytes.count)
            (base + count).copyMemory(from: source, byteCount: bytes.count)
            count += bytes.count
        }

        func string(_ value: String) {
            var value = value
            value.withUTF8 { utf8 in
                unsigned(UInt64(utf8.count))
                raw(UnsafeRawBufferPointer(utf8))
            }
        }

        func value(_ value: DatabaseValue) {
            switch value.storage {
            case .null:
                byte(Tag.null.rawValue)
            case let .int64(integer):
                byte(Tag.integer.rawValue)
                signed(integer)
            case let .double(double):
                byte(Tag.real.rawValue)
                reserve(8)
                base.storeBytes(of: double.bitPattern.littleEndian, toByteOffset: count, as: UInt64.self)
                count += 8
            case let .string(string):
                byte(Tag.text.rawValue)
                self.string(string)
            case let .blob(data):
                byte(Tag.blob.rawValue)
                unsigned(UInt64(data.count))
                data.withUnsafeBytes { raw($0) }
            }
        }

        func append(_ other: ByteWriter) {
            raw(UnsafeRawBufferPointer(start: other.base, count: other.count))
        }

        var data: Data { Data(bytes: base, count: count) }

        /// Eight bytes, most significant first (a sync log record id's word).
        @inline(__always)
        func bigEndian(_ value: UInt64) {
            reserve(8)
            base.storeBytes(of: value.bigEndian, toByteOffset: count, as: UInt64.self)
            count += 8
        }

        /// Calls `body` with the bytes written (valid only during the call: no copy).
        func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            try body(UnsafeRawBufferPointer(start: base, count: count))
        }

        /// Calls `body` with the bytes written from `offset` on (valid only during the call).
        func withBytes<Result>(from offset: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            // Safety: `start` is clamped to 0...count, so the buffer covers only written bytes of
            // the allocation, which lives as long as `self` (kept alive through the call).
            let start = min(max(offset, 0), count)
            return try body(UnsafeRawBufferPointer(start: base + start, count: count - start))
        }

        /// Grows the buffer to hold `total` bytes at least, once (a writer whose size is known
        /// ahead spares the copies of growing by doubling).
        func ensureCapacity(_ total: Int) {
            reserve(total - count)
        }

        /// Writes `count` zero bytes that ``overwrite(at:with:)`` fills in later (a header
        /// known only once what follows it is written).
        func skip(_ bytes: Int) {
            guard bytes > 0 else { return }
            reserve(bytes)
            // Safety: `reserve` made room for `bytes` more bytes after `count`.
            (base + count).initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
            count += bytes
        }

        /// Copies `other`'s bytes over the bytes written at `offset`; false (nothing written)
        /// when they do not fit within the bytes written.
        func overwrite(at offset: Int, with other: ByteWriter) -> Bool {
            guard offset >= 0, offset + other.count <= count else { return false }
            // Safety: the guard keeps the copy within the bytes written; two writers never share
            // an allocation, so source and destination do not overlap.
            if other.count > 0 { (base + offset).copyMemory(from: other.base, byteCount: other.count) }
            return true
        }
    }

    struct ByteReader {
        let bytes: [UInt8]
        var position = 0

        var isAtEnd: Bool { position == bytes.count }

        mutating func byte() -> UInt8? {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func unsigned() -> UInt64? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while let next = byte() {
                guard shift < 64 else { return nil }
                result |= UInt64(next & 0x7F) << shift
                if next < 0x80 { return result }
                shift += 7
            }
            return nil
        }

        /// A length or index: an unsigned number no larger than what is left to read could hold.
        mutating func count() -> Int? {
            guard let value = unsigned(), value <= UInt64(bytes.count) else { return nil }
            return Int(value)
        }

        mutating func signed() -> Int64? {
            guard let raw = unsigned() else { return nil }
            return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
        }

        mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
            guard count <= bytes.count - position else { return nil }
            defer { position += count }
            return bytes[position..<(position + count)]
        }

        /// Eight bytes, most significant first.
        mutating func bigEndian() -> UInt64? {
            guard let slice = take(8) else { return nil }
            return slice.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }

        mutating func string() -> String? {
            guard let length = count(), let slice = take(length) else { return nil }
            return String(decoding: slice, as: UTF8.self)
        }

        /// A value: `.some(nil)` for an absent one, nil when the bytes are not a value.
        mutating func value() -> DatabaseValue?? {
            guard let raw = byte(), let tag = Tag(rawValue: raw) else { return nil }
            switch tag {
            case .absent: return .some(nil)
            case .null: return .some(DatabaseValue.null)
            case .integer:
                guard let integer = signed() else { return nil }
                return .some(integer.databaseValue)
            case .real:
                guard let slice = take(8) else { return nil }
                var bits: UInt64 = 0
                for (shift, byte) in slice.enumerated() { bits |= UInt64(byte) << (8 * UInt64(shift)) }
                return .some(Double(bitPattern: bits).databaseValue)
            case .text:
                guard let text = string() else { return nil }
                return .some(text.databaseValue)
            case .blob:
                guard let length = count(), let slice = take(length) else { return nil }
                return .some(Data(slice).databaseValue)
            }
        }
    }
}
