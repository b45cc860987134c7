import Foundation
import GRDB
import OpenSwiftDataServer

/// The tables of the SQLite storage, created and changed by its migrations, one per step.
enum SQLiteSchema {
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("osd-server v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE osd_metadata (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);
                    CREATE TABLE osd_head (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        seq INTEGER NOT NULL, horizon INTEGER NOT NULL, clock INTEGER NOT NULL);
                    INSERT INTO osd_head (id, seq, horizon, clock) VALUES (1, 0, 0, 0);
                    CREATE TABLE osd_records (
                        entity TEXT NOT NULL, record_id TEXT NOT NULL, scope TEXT NOT NULL,
                        version INTEGER NOT NULL, deleted INTEGER NOT NULL, fields BLOB NOT NULL,
                        stamp INTEGER NOT NULL, writer TEXT NOT NULL, has_links INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL,
                        PRIMARY KEY (entity, record_id)) WITHOUT ROWID;
                    CREATE INDEX osd_records_by_scope ON osd_records (scope, entity, record_id) WHERE deleted = 0;
                    CREATE TABLE osd_links (
                        entity TEXT NOT NULL, record_id TEXT NOT NULL, name TEXT NOT NULL, target TEXT NOT NULL,
                        present INTEGER NOT NULL, stamp INTEGER NOT NULL, client TEXT NOT NULL,
                        PRIMARY KEY (entity, record_id, name, target)) WITHOUT ROWID;
                    CREATE TABLE osd_changes (
                        seq INTEGER PRIMARY KEY, txn INTEGER NOT NULL, scope TEXT NOT NULL,
                        entity TEXT NOT NULL, record_id TEXT NOT NULL, op TEXT NOT NULL, payload BLOB NOT NULL,
                        client_id TEXT, mutation_id INTEGER, created_at INTEGER NOT NULL);
                    CREATE INDEX osd_changes_by_scope ON osd_changes (scope, seq);
                    CREATE INDEX osd_changes_by_record ON osd_changes (entity, record_id, seq);
                    CREATE INDEX osd_changes_by_txn ON osd_changes (txn);
                    CREATE TABLE osd_clients (
                        client_id TEXT PRIMARY KEY NOT NULL, user TEXT NOT NULL,
                        last_mutation_id INTEGER NOT NULL, last_hash TEXT NOT NULL, schema BLOB);
                    CREATE TABLE osd_results (
                        client_id TEXT NOT NULL, mutation_id INTEGER NOT NULL, hash TEXT NOT NULL,
                        result BLOB NOT NULL, created_at INTEGER NOT NULL,
                        PRIMARY KEY (client_id, mutation_id)) WITHOUT ROWID;
                    CREATE INDEX osd_results_by_age ON osd_results (created_at);
                    CREATE TABLE osd_scopes (scope TEXT PRIMARY KEY NOT NULL, owner TEXT NOT NULL);
                    CREATE INDEX osd_scopes_by_owner ON osd_scopes (owner);
                    CREATE TABLE osd_grants (
                        scope TEXT NOT NULL, user TEXT NOT NULL, PRIMARY KEY (scope, user)) WITHOUT ROWID;
                    CREATE INDEX osd_grants_by_user ON osd_grants (user);
                    """)
        }
        // The reference index the delete rules look referrers up in: one row per reference
        // field of a live record that holds a record id. Filled from the records there are.
        migrator.registerMigration("osd-server v2 references") { db in
            try db.execute(
                sql: """
                    CREATE TABLE osd_refs (
                        entity TEXT NOT NULL, record_id TEXT NOT NULL, field TEXT NOT NULL, target TEXT NOT NULL,
                        PRIMARY KEY (entity, record_id, field)) WITHOUT ROWID;
                    CREATE INDEX osd_refs_by_target ON osd_refs (target, entity, field);
                    INSERT INTO osd_refs (entity, record_id, field, target)
                        SELECT r.entity, r.record_id, f.key, json_extract(f.value, '$.v.v')
                        FROM osd_records r, json_each(CAST(r.fields AS TEXT)) f
                        WHERE r.deleted = 0 AND json_extract(f.value, '$.v.t') = 'reference' AND json_type(f.value, '$.v.v') = 'text';
                    """)
        }
        // When each client last pushed, for the admin console's list of clients (the most
        // recently seen first). Clients from before it read 0: not known.
        migrator.registerMigration("osd-server v3 client activity") { db in
            try db.execute(
                sql: """
                    ALTER TABLE osd_clients ADD COLUMN last_seen_at INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX osd_clients_by_seen ON osd_clients (last_seen_at, client_id);
                    """)
        }
        // Each grant's role: `reader` (reads only) or `writer`. Grants from before roles were
        // all writers.
        migrator.registerMigration("osd-server v4 grant roles") { db in
            try db.execute(sql: "ALTER TABLE osd_grants ADD COLUMN role TEXT NOT NULL DEFAULT 'writer'")
        }
        // Blobs: which live records name each blob and which client wrote each reference,
        // the blobs stored (with when they were stored or last named), and who holds each one
        // (uploaded it): a reference lets readers read the blob once its writer's user holds it,
        // and the bytes count in each holder's limit. Records from before hold no blobs.
        migrator.registerMigration("osd-server v5 blobs") { db in
            try db.execute(
                sql: """
                    CREATE TABLE osd_blob_refs (
                        entity TEXT NOT NULL, record_id TEXT NOT NULL, digest TEXT NOT NULL, client TEXT NOT NULL,
                        PRIMARY KEY (entity, record_id, digest)) WITHOUT ROWID;
                    CREATE INDEX osd_blob_refs_by_digest ON osd_blob_refs (digest);
                    CREATE TABLE osd_blobs (digest TEXT PRIMARY KEY NOT NULL, size INTEGER NOT NULL, stored_at INTEGER NOT NULL) WITHOUT ROWID;
                    CREATE INDEX osd_blobs_by_age ON osd_blobs (stored_at);
                    CREATE TABLE osd_blob_holders (
                        digest TEXT NOT NULL, user TEXT NOT NULL, PRIMARY KEY (digest, user)) WITHOUT ROWID;
                    CREATE INDEX osd_blob_holders_by_user ON osd_blob_holders (user);
                    """)
        }
        return migrator
    }
}
