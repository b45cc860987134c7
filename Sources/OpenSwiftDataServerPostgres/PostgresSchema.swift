import Crypto
import Foundation
import Logging
import PostgresNIO

/// The tables of the PostgreSQL storage and the versioned migrations that create them.
///
/// Every server migrates at start, inside one transaction that first takes
/// `pg_advisory_xact_lock` on a key of the schema: when several servers start at once, one
/// migrates and the others wait, then find nothing left to do. The wait for the advisory lock
/// and the statements have no timeout: a migration of a large table, or the wait for another
/// server's, may take longer than a request may. A statement's wait for a table's lock (held by
/// a running server's transaction) keeps the statement timeout, as `lock_timeout`, so that a
/// migration never queues every request behind it for good. Text columns that order
/// keyset pages use the "C" collation, so that PostgreSQL orders them by bytes as Swift's
/// `String` and SQLite do.
enum PostgresSchema {
    /// One migration: its version (1, 2, …), a name, and its statements.
    struct Migration {
        var version: Int
        var name: String
        var statements: [String]
    }

    static let migrations: [Migration] = [
        Migration(
            version: 1, name: "osd-server v1",
            statements: [
                "CREATE TABLE osd_metadata (key text PRIMARY KEY, value text NOT NULL)",
                """
                CREATE TABLE osd_head (
                    id integer PRIMARY KEY CHECK (id = 1),
                    seq bigint NOT NULL, horizon bigint NOT NULL, clock bigint NOT NULL)
                """,
                "INSERT INTO osd_head (id, seq, horizon, clock) VALUES (1, 0, 0, 0)",
                """
                CREATE TABLE osd_records (
                    entity text COLLATE "C" NOT NULL, record_id text COLLATE "C" NOT NULL, scope text COLLATE "C" NOT NULL,
                    version bigint NOT NULL, deleted boolean NOT NULL, fields text NOT NULL,
                    stamp bigint NOT NULL, writer text NOT NULL, has_links boolean NOT NULL, updated_at bigint NOT NULL,
                    PRIMARY KEY (entity, record_id))
                """,
                "CREATE INDEX osd_records_by_scope ON osd_records (scope, entity, record_id) WHERE NOT deleted",
                """
                CREATE TABLE osd_links (
                    entity text COLLATE "C" NOT NULL, record_id text COLLATE "C" NOT NULL, name text NOT NULL, target text NOT NULL,
                    present boolean NOT NULL, stamp bigint NOT NULL, client text NOT NULL,
                    PRIMARY KEY (entity, record_id, name, target))
                """,
                """
                CREATE TABLE osd_changes (
                    seq bigint PRIMARY KEY, txn bigint NOT NULL, scope text COLLATE "C" NOT NULL,
                    entity text NOT NULL, record_id text NOT NULL, op text NOT NULL, payload text NOT NULL,
                    client_id text, mutation_id bigint, created_at bigint NOT NULL)
                """,
                "CREATE INDEX osd_changes_by_scope ON osd_changes (scope, seq)",
                "CREATE INDEX osd_changes_by_record ON osd_changes (entity, record_id, seq)",
                "CREATE INDEX osd_changes_by_txn ON osd_changes (txn)",
                "CREATE INDEX osd_changes_by_age ON osd_changes (created_at)",
                """
                CREATE TABLE osd_clients (
                    client_id text PRIMARY KEY, user_id text NOT NULL,
                    last_mutation_id bigint NOT NULL, last_hash text NOT NULL, schema text)
                """,
                """
                CREATE TABLE osd_results (
                    client_id text NOT NULL, mutation_id bigint NOT NULL, hash text NOT NULL,
                    result text NOT NULL, created_at bigint NOT NULL,
                    PRIMARY KEY (client_id, mutation_id))
                """,
                "CREATE INDEX osd_results_by_age ON osd_results (created_at)",
                "CREATE TABLE osd_scopes (scope text COLLATE \"C\" PRIMARY KEY, owner text NOT NULL)",
                "CREATE INDEX osd_scopes_by_owner ON osd_scopes (owner)",
                "CREATE TABLE osd_grants (scope text COLLATE \"C\" NOT NULL, user_id text NOT NULL, PRIMARY KEY (scope, user_id))",
                "CREATE INDEX osd_grants_by_user ON osd_grants (user_id)",
            ]),
        // The reference index the delete rules look referrers up in: one row per reference
        // field of a live record that holds a record id. Filled from the records there are.
        Migration(
            version: 2, name: "osd-server v2 references",
            statements: [
                """
                CREATE TABLE osd_refs (
                    entity text COLLATE "C" NOT NULL, record_id text COLLATE "C" NOT NULL, field text NOT NULL, target text NOT NULL,
                    PRIMARY KEY (entity, record_id, field))
                """,
                "CREATE INDEX osd_refs_by_target ON osd_refs (target, entity, field)",
                """
                INSERT INTO osd_refs (entity, record_id, field, target)
                SELECT r.entity, r.record_id, f.key, f.value->'v'->>'v' FROM osd_records r, jsonb_each(r.fields::jsonb) f
                WHERE NOT r.deleted AND f.value->'v'->>'t' = 'reference' AND jsonb_typeof(f.value->'v'->'v') = 'string'
                """,
            ]),
        // When each client last pushed, for the admin console's list of clients (the most
        // recently seen first). Clients from before it read 0: not known.
        Migration(
            version: 3, name: "osd-server v3 client activity",
            statements: [
                "ALTER TABLE osd_clients ADD COLUMN last_seen_at bigint NOT NULL DEFAULT 0",
                "CREATE INDEX osd_clients_by_seen ON osd_clients (last_seen_at, client_id)",
            ]),
        // Each grant's role: `reader` (reads only) or `writer`. Grants from before roles were
        // all writers.
        Migration(
            version: 4, name: "osd-server v4 grant roles",
            statements: [
                "ALTER TABLE osd_grants ADD COLUMN role text NOT NULL DEFAULT 'writer'"
            ]),
        // Blobs: which live records name each blob and which client wrote each reference,
        // the blobs stored (with when they were stored or last named), and who holds each one
        // (uploaded it): a reference lets readers read the blob once its writer's user holds it,
        // and the bytes count in each holder's limit. Records from before hold no blobs.
        Migration(
            version: 5, name: "osd-server v5 blobs",
            statements: [
                """
                CREATE TABLE osd_blob_refs (
                    entity text COLLATE "C" NOT NULL, record_id text COLLATE "C" NOT NULL, digest text COLLATE "C" NOT NULL,
                    client text NOT NULL, PRIMARY KEY (entity, record_id, digest))
                """,
                "CREATE INDEX osd_blob_refs_by_digest ON osd_blob_refs (digest)",
                "CREATE TABLE osd_blobs (digest text COLLATE \"C\" PRIMARY KEY, size bigint NOT NULL, stored_at bigint NOT NULL)",
                "CREATE INDEX osd_blobs_by_age ON osd_blobs (stored_at)",
                """
                CREATE TABLE osd_blob_holders (
                    digest text COLLATE "C" NOT NULL, user_id text NOT NULL, PRIMARY KEY (digest, user_id))
                """,
                "CREATE INDEX osd_blob_holders_by_user ON osd_blob_holders (user_id)",
            ]),
        // Blobs' bytes in the database (`PostgresBlobStorage`): stored blobs and unfinished
        // uploads, in chunks of at most 1 MiB by offset.
        Migration(
            version: 6, name: "osd-server v6 blob chunks",
            statements: [
                """
                CREATE TABLE osd_blob_chunks (
                    digest text COLLATE "C" NOT NULL, start_byte bigint NOT NULL, data bytea NOT NULL, PRIMARY KEY (digest, start_byte))
                """,
                """
                CREATE TABLE osd_blob_upload_chunks (
                    user_id text NOT NULL, digest text COLLATE "C" NOT NULL, start_byte bigint NOT NULL, data bytea NOT NULL,
                    written_at bigint NOT NULL, PRIMARY KEY (user_id, digest, start_byte))
                """,
            ]),
    ]

    /// The newest migration this server knows.
    static var latest: Int { migrations.map(\.version).max() ?? 0 }

    /// Creates the schema if needed, applies the migrations it lacks and makes the metadata
    /// (epoch, cursor key), under an advisory lock held to the end of the transaction.
    /// Returns the versions applied now.
    @discardableResult
    static func migrate(
        _ client: PostgresClient, schema: String, cursorKey: Data?, lockTimeoutMilliseconds: Int, logger: Logger
    ) async throws -> [Int] {
        try await PostgresSyncStorage.transaction(client, logger: logger) { connection in
            // Each statement read to its end: a statement's error comes with its rows.
            func execute(_ query: PostgresQuery) async throws {
                _ = try await connection.query(query, logger: logger).collect()
            }
            try await execute("SET LOCAL statement_timeout = 0")
            try await execute("SELECT pg_advisory_xact_lock(hashtext(\("osd-server migrations " + schema)))")
            try await execute(PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = \(max(0, lockTimeoutMilliseconds))"))
            // `schema` is a validated identifier (lower-case letters, digits, underscores).
            try await execute(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \"\(schema)\""))
            try await execute(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE TABLE IF NOT EXISTS "\(schema)".osd_migrations (
                            version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                        """))
            var done: Set<Int> = []
            for try await version in try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT version FROM \"\(schema)\".osd_migrations"), logger: logger
            ).decode(Int.self) {
                done.insert(version)
            }
            if let newest = done.max(), newest > latest { throw PostgresStorageError.newerSchema(found: newest, known: latest) }
            var applied: [Int] = []
            for migration in migrations where !done.contains(migration.version) {
                for statement in migration.statements {
                    try await execute(PostgresQuery(unsafeSQL: statement))
                }
                try await execute("INSERT INTO osd_migrations (version, name) VALUES (\(migration.version), \(migration.name))")
                applied.append(migration.version)
            }
            let existing = try await connection.query("SELECT value FROM osd_metadata WHERE key = 'epoch'", logger: logger).collect()
            if existing.isEmpty {
                let key = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
                try await execute("INSERT INTO osd_metadata (key, value) VALUES ('epoch', \(UUID().uuidString))")
                try await execute("INSERT INTO osd_metadata (key, value) VALUES ('cursorKey', \(key.base64EncodedString()))")
            }
            if let cursorKey {
                try await execute("UPDATE osd_metadata SET value = \(cursorKey.base64EncodedString()) WHERE key = 'cursorKey'")
            }
            return applied
        }
    }
}
