import Foundation
import Logging
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import PostgresNIO

// The hot statements, prepared once per pooled connection (PostgresNIO caches them by name)
// and decoded into typed rows. Bulk writes bind whole columns as arrays and `unnest` them:
// one round trip for a push's records, one for its log entries, whatever the batch size.

/// The head row: last sequence number, compaction horizon, server clock.
struct HeadRow: Sendable {
    var seq: ServerVersion
    var horizon: ServerVersion
    var clock: HLCTimestamp

    /// Locks the head row for the rest of the transaction (writers queue here) and reads it.
    static func lock(_ connection: PostgresConnection, _ logger: Logger) async throws -> HeadRow {
        try first(await connection.checkedRows(LockHeadStatement(), logger: logger))
    }

    /// Reads the head row in the transaction's snapshot.
    static func read(_ connection: PostgresConnection, _ logger: Logger) async throws -> HeadRow {
        try first(await connection.checkedRows(ReadHeadStatement(), logger: logger))
    }

    private static func first(_ rows: [(Int64, Int64, Int64)]) throws -> HeadRow {
        guard let (seq, horizon, clock) = rows.first else { throw SyncServiceError(500, .internalError, "the database has no head row") }
        return HeadRow(seq: seq, horizon: horizon, clock: HLCTimestamp(rawValue: UInt64(bitPattern: clock)))
    }
}

struct LockHeadStatement: PostgresPreparedStatement {
    static let sql = "SELECT seq, horizon, clock FROM osd_head WHERE id = 1 FOR UPDATE"
    typealias Row = (Int64, Int64, Int64)
    func makeBindings() -> PostgresBindings { PostgresBindings() }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

struct ReadHeadStatement: PostgresPreparedStatement {
    static let sql = "SELECT seq, horizon, clock FROM osd_head WHERE id = 1"
    typealias Row = (Int64, Int64, Int64)
    func makeBindings() -> PostgresBindings { PostgresBindings() }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

struct UpdateHeadStatement: PostgresPreparedStatement {
    static let sql = "UPDATE osd_head SET seq = $1, clock = $2 WHERE id = 1"
    typealias Row = ()
    var seq: Int64
    var clock: Int64
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(seq)
        bindings.append(clock)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { () }
}

/// A client's row: user, last mutation id, its hash, schema JSON.
struct ClientStatement: PostgresPreparedStatement {
    static let sql = "SELECT user_id, last_mutation_id, last_hash, schema FROM osd_clients WHERE client_id = $1"
    typealias Row = (String, Int64, String, String?)
    var clientID: String
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(clientID)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// A record row as stored, before its links are attached.
struct RecordRow: Sendable {
    static let columns = "entity, record_id, scope, version, deleted, fields, stamp, writer, has_links"

    var entity: String
    var recordID: String
    var scope: String
    var version: Int64
    var deleted: Bool
    var fields: String
    var stamp: Int64
    var writer: String
    var hasLinks: Bool

    init(_ row: PostgresRow) throws {
        (entity, recordID, scope, version, deleted, fields, stamp, writer, hasLinks) = try row.decode(
            (String, String, String, Int64, Bool, String, Int64, String, Bool).self)
    }

    func record() throws -> StoredRecord {
        StoredRecord(
            entity: entity, recordID: recordID, scope: ScopeID(rawValue: scope), version: version, deleted: deleted,
            fields: try StoredColumns.decodeFields(Data(fields.utf8)),
            stamp: HLCTimestamp(rawValue: UInt64(bitPattern: stamp)), writer: writer)
    }
}

/// The records with the given keys (pairs of `entities[i]`, `recordIDs[i]`).
struct RecordsStatement: PostgresPreparedStatement {
    static let sql = """
        SELECT r.entity, r.record_id, r.scope, r.version, r.deleted, r.fields, r.stamp, r.writer, r.has_links FROM osd_records r
        JOIN unnest($1::text[], $2::text[]) AS k(entity, record_id) ON r.entity = k.entity AND r.record_id = k.record_id
        """
    typealias Row = RecordRow
    var entities: [String]
    var recordIDs: [String]
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(entities)
        bindings.append(recordIDs)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { try RecordRow(row) }
}

/// The live records whose reference field `entity.field` holds one of the targets, one
/// (entity, field, target) triple per array position, through the reference index.
struct ReferrersStatement: PostgresPreparedStatement {
    static let sql = """
        SELECT r.entity, r.record_id, r.scope, r.version, r.deleted, r.fields, r.stamp, r.writer, r.has_links FROM osd_refs f
        JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(entity, field, target) ON f.target = k.target AND f.entity = k.entity AND f.field = k.field
        JOIN osd_records r ON r.entity = f.entity AND r.record_id = f.record_id
        WHERE NOT r.deleted
        """
    typealias Row = RecordRow
    var entities: [String]
    var fields: [String]
    var targets: [String]
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(entities)
        bindings.append(fields)
        bindings.append(targets)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { try RecordRow(row) }
}

/// Writes records whole (insert or replace), one array per column.
struct UpsertRecordsStatement: PostgresPreparedStatement {
    static let sql = """
        INSERT INTO osd_records (entity, record_id, scope, version, deleted, fields, stamp, writer, has_links, updated_at)
        SELECT e, r, s, v, d, f, st, w, l, $10 FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::bool[], $6::text[], $7::int8[], $8::text[], $9::bool[])
            AS t(e, r, s, v, d, f, st, w, l)
        ON CONFLICT (entity, record_id) DO UPDATE SET
            scope = excluded.scope, version = excluded.version, deleted = excluded.deleted, fields = excluded.fields,
            stamp = excluded.stamp, writer = excluded.writer, has_links = excluded.has_links, updated_at = excluded.updated_at
        """
    typealias Row = ()
    var entities: [String]
    var recordIDs: [String]
    var scopes: [String]
    var versions: [Int64]
    var deleted: [Bool]
    var fields: [String]
    var stamps: [Int64]
    var writers: [String]
    var hasLinks: [Bool]
    var now: Int64
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(entities)
        bindings.append(recordIDs)
        bindings.append(scopes)
        bindings.append(versions)
        bindings.append(deleted)
        bindings.append(fields)
        bindings.append(stamps)
        bindings.append(writers)
        bindings.append(hasLinks)
        bindings.append(now)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { () }
}

/// Appends log entries, one array per column (`has…` flags stand for NULLs, which arrays of
/// PostgresNIO cannot carry).
struct InsertChangesStatement: PostgresPreparedStatement {
    static let sql = """
        INSERT INTO osd_changes (seq, txn, scope, entity, record_id, op, payload, client_id, mutation_id, created_at)
        SELECT q, t, s, e, r, o, p, CASE WHEN hc THEN c END, CASE WHEN hm THEN m END, a
        FROM unnest($1::int8[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[], $9::text[], $10::bool[], $11::int8[], $12::int8[])
            AS x(q, t, s, e, r, o, p, hc, c, hm, m, a)
        """
    typealias Row = ()
    var seqs: [Int64]
    var txns: [Int64]
    var scopes: [String]
    var entities: [String]
    var recordIDs: [String]
    var ops: [String]
    var payloads: [String]
    var hasClient: [Bool]
    var clients: [String]
    var hasMutation: [Bool]
    var mutations: [Int64]
    var createdAt: [Int64]
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(seqs)
        bindings.append(txns)
        bindings.append(scopes)
        bindings.append(entities)
        bindings.append(recordIDs)
        bindings.append(ops)
        bindings.append(payloads)
        bindings.append(hasClient)
        bindings.append(clients)
        bindings.append(hasMutation)
        bindings.append(mutations)
        bindings.append(createdAt)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { () }
}
