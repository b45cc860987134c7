import ArgumentParser
import Foundation
import Logging
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import ServiceLifecycle

/// `osd-server`: the OpenSwiftData sync server. `osd-server` (or `osd-server serve`) serves;
/// `osd-server token --user alice` mints a development token.
@main
struct OSDServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "osd-server",
        abstract: "The OpenSwiftData sync server: push, pull and live sync on an embedded SQLite file or a shared PostgreSQL database.",
        discussion: """
            `osd-server` serves (the `serve` command); `osd-server serve --help` describes each setting.
            Settings, as flags or environment variables (a flag wins):
              --hostname (OSD_HOSTNAME, default 127.0.0.1)   --port (OSD_PORT, default 8080; 0 picks one)
              --database (OSD_DATABASE, default $OSD_DATA_DIR/osd-server.sqlite or ./osd-server.sqlite)
              --jwt-secret (OSD_JWT_SECRET)   --jwks-file (OSD_JWKS_FILE)   --jwks-url (OSD_JWKS_URL)
              --jwks-refresh-interval (OSD_JWKS_REFRESH_INTERVAL)   --jwt-clock-skew (OSD_JWT_CLOCK_SKEW)
              --jwt-issuer (OSD_JWT_ISSUER)   --jwt-audience (OSD_JWT_AUDIENCE)
              --max-body-bytes (OSD_MAX_BODY_BYTES)   --max-mutations (OSD_MAX_MUTATIONS)
              --max-changes (OSD_MAX_CHANGES)   --max-pull-limit (OSD_MAX_PULL_LIMIT)
              --retention-days (OSD_RETENTION_DAYS)   --compaction-interval (OSD_COMPACTION_INTERVAL)
              --shutdown-grace-period (OSD_SHUTDOWN_GRACE_PERIOD)
              --admin-token (OSD_ADMIN_TOKEN: the admin console at /admin; off without it)
              --log-level (OSD_LOG_LEVEL)
              --blobs (OSD_BLOBS_DIR, default <database>.blobs, or in PostgreSQL)   --max-blob-bytes (OSD_MAX_BLOB_BYTES)
              --max-user-blob-bytes (OSD_MAX_USER_BLOB_BYTES)
              --postgres (OSD_POSTGRES_URL: PostgreSQL instead of SQLite; several servers may share it)
              --postgres-schema (OSD_POSTGRES_SCHEMA)   --postgres-pool-size (OSD_POSTGRES_POOL_SIZE)
              --postgres-statement-timeout (OSD_POSTGRES_STATEMENT_TIMEOUT_MS)
              --postgres-connect-timeout (OSD_POSTGRES_CONNECT_TIMEOUT_MS)
            `osd-server token --user alice` mints a development token (the last line printed).
            `osd-server backup --to FILE` copies the SQLite database while the server runs (a consistent online backup).
            `osd-server restore FILE` installs a backup as the database with a new epoch (stop the server first).
            `osd-server epoch rotate` gives a database restored by other means a new epoch (SQLite or --postgres).
            """,
        subcommands: [Serve.self, Token.self, Backup.self, Restore.self, Epoch.self],
        defaultSubcommand: Serve.self)
}

/// The secret used when neither a secret nor a JWKS is configured: development only.
let developmentSecret = "osd-development-secret-do-not-use-in-production"

func environment(_ name: String) -> String? {
    ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
}

/// The default database file: `$OSD_DATA_DIR/osd-server.sqlite`, or `osd-server.sqlite` in the
/// working directory (for `swift run osd-server`, the package's directory). The server prints
/// the file's absolute path when it starts.
func defaultDatabasePath() -> String {
    if let directory = environment("OSD_DATA_DIR") { return (directory as NSString).appendingPathComponent("osd-server.sqlite") }
    return "osd-server.sqlite"
}

/// Whether `hostname` names this machine only (the development secret is refused elsewhere).
func isLoopback(_ hostname: String) -> Bool {
    ["127.0.0.1", "localhost", "::1", "[::1]"].contains(hostname.lowercased()) || hostname.hasPrefix("127.")
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the sync protocol (the default command).")

    @Option(help: "Address to listen on (env OSD_HOSTNAME).")
    var hostname: String = environment("OSD_HOSTNAME") ?? "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (env OSD_PORT).")
    var port: Int = environment("OSD_PORT").flatMap { Int($0) } ?? 8080

    @Option(help: "SQLite database file (env OSD_DATABASE; default $OSD_DATA_DIR/osd-server.sqlite or ./osd-server.sqlite).")
    var database: String = environment("OSD_DATABASE") ?? defaultDatabasePath()

    @Option(
        help:
            "PostgreSQL URL, postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require&host=/socket/dir], instead of the SQLite file: several servers may share it (env OSD_POSTGRES_URL)."
    )
    var postgres: String?

    @Option(help: "PostgreSQL schema of the tables, created if missing (env OSD_POSTGRES_SCHEMA).")
    var postgresSchema: String = environment("OSD_POSTGRES_SCHEMA") ?? "public"

    @Option(help: "Most PostgreSQL connections of this server, one of them listening for other servers' events (env OSD_POSTGRES_POOL_SIZE).")
    var postgresPoolSize: Int = environment("OSD_POSTGRES_POOL_SIZE").flatMap { Int($0) } ?? 16

    @Option(help: "PostgreSQL statement timeout in milliseconds, lock waits included; 0: none (env OSD_POSTGRES_STATEMENT_TIMEOUT_MS).")
    var postgresStatementTimeout: Int = environment("OSD_POSTGRES_STATEMENT_TIMEOUT_MS").flatMap { Int($0) } ?? 30_000

    @Option(
        help:
            "Most milliseconds a request waits for a PostgreSQL connection (and a connection attempt takes); past it, while the database cannot be reached, pushes and pulls are answered 503 unavailable with Retry-After (env OSD_POSTGRES_CONNECT_TIMEOUT_MS)."
    )
    var postgresConnectTimeout: Int = environment("OSD_POSTGRES_CONNECT_TIMEOUT_MS").flatMap { Int($0) } ?? 2_000

    @Option(help: "HS256 secret that signs bearer tokens (env OSD_JWT_SECRET). Without it and without a JWKS, a development secret is used.")
    var jwtSecret: String?

    @Option(help: "JWKS file with the identity provider's public keys (env OSD_JWKS_FILE).")
    var jwksFile: String?

    @Option(help: "JWKS URL, fetched at start (env OSD_JWKS_URL).")
    var jwksURL: String?

    @Option(
        help:
            "Seconds after which the JWKS URL is fetched again; it is also fetched when a token names an unknown key id, at most every 10 s (env OSD_JWKS_REFRESH_INTERVAL)."
    )
    var jwksRefreshInterval: Double = environment("OSD_JWKS_REFRESH_INTERVAL").flatMap { Double($0) } ?? 3600

    @Option(help: "Seconds of clock difference tolerated on a token's exp, nbf and iat (env OSD_JWT_CLOCK_SKEW).")
    var jwtClockSkew: Double = environment("OSD_JWT_CLOCK_SKEW").flatMap { Double($0) } ?? 60

    @Option(help: "When set, a token's iss claim must be exactly this (env OSD_JWT_ISSUER).")
    var jwtIssuer: String?

    @Option(help: "When set, a token's aud claim must include this (env OSD_JWT_AUDIENCE).")
    var jwtAudience: String?

    @Option(help: "Largest request body in bytes (env OSD_MAX_BODY_BYTES).")
    var maxBodyBytes: Int = environment("OSD_MAX_BODY_BYTES").flatMap { Int($0) } ?? 8 * 1024 * 1024

    @Option(help: "Most mutations in one push (env OSD_MAX_MUTATIONS).")
    var maxMutations: Int = environment("OSD_MAX_MUTATIONS").flatMap { Int($0) } ?? 1_000

    @Option(help: "Most record changes in one push (env OSD_MAX_CHANGES).")
    var maxChanges: Int = environment("OSD_MAX_CHANGES").flatMap { Int($0) } ?? 10_000

    @Option(help: "Largest pull page (env OSD_MAX_PULL_LIMIT).")
    var maxPullLimit: Int = environment("OSD_MAX_PULL_LIMIT").flatMap { Int($0) } ?? 10_000

    @Option(help: "Days tombstones, the change log and push results are kept; older cursors reset (env OSD_RETENTION_DAYS).")
    var retentionDays: Double = environment("OSD_RETENTION_DAYS").flatMap { Double($0) } ?? 30

    @Option(help: "Seconds between compactions (env OSD_COMPACTION_INTERVAL).")
    var compactionInterval: Double = environment("OSD_COMPACTION_INTERVAL").flatMap { Double($0) } ?? 3600

    @Option(
        help:
            "Most seconds a shutdown (SIGTERM, SIGINT) takes, whatever clients do: live connections get 1001 going away at once, requests in flight are answered, and what still runs after this long is cancelled (env OSD_SHUTDOWN_GRACE_PERIOD)."
    )
    var shutdownGracePeriod: Double = environment("OSD_SHUTDOWN_GRACE_PERIOD").flatMap { Double($0) } ?? 10

    @Option(
        help:
            "Secret that opens the admin console at /admin, at least 16 characters (env OSD_ADMIN_TOKEN, better than the flag, which other users of the machine can read in the process list). The console shows clients, live channels, traffic, rejections, scopes, the log and the epoch, and grants, revokes and rotates the epoch; send the secret as a Bearer token or as the password of the browser's login prompt. It is not a user token. Without it there is no console: /admin is 404. Serve it only behind TLS."
    )
    var adminToken: String?

    @Option(
        help:
            "Folder of the blobs' bytes (env OSD_BLOBS_DIR; default: beside the SQLite database, <database>.blobs; with --postgres, in the database, shared by every server)."
    )
    var blobs: String?

    @Option(help: "Largest blob in bytes (env OSD_MAX_BLOB_BYTES).")
    var maxBlobBytes: Int64 = environment("OSD_MAX_BLOB_BYTES").flatMap { Int64($0) } ?? 1 << 30

    @Option(help: "Most bytes of blobs one user may upload, unfinished uploads included (env OSD_MAX_USER_BLOB_BYTES).")
    var maxUserBlobBytes: Int64 = environment("OSD_MAX_USER_BLOB_BYTES").flatMap { Int64($0) } ?? 10 << 30

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (env OSD_LOG_LEVEL).")
    var logLevel: String = environment("OSD_LOG_LEVEL") ?? "info"

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "osd-server")
        let jwtSecret = jwtSecret ?? environment("OSD_JWT_SECRET")
        let jwksFile = jwksFile ?? environment("OSD_JWKS_FILE")
        let jwksURL = jwksURL ?? environment("OSD_JWKS_URL")
        var jwks: String?
        if let jwksFile {
            jwks = try String(contentsOfFile: jwksFile, encoding: .utf8)
        }
        let usesDevelopmentSecret = jwtSecret == nil && jwks == nil && jwksURL == nil
        // The development secret is public (it is in this file): anyone could mint tokens for
        // any user. Serving it beyond this machine would hand every scope to the network.
        if usesDevelopmentSecret, !isLoopback(hostname) {
            throw ValidationError(
                "refusing to serve on \(hostname) with the development secret, which anyone can use to sign tokens; set --jwt-secret (or OSD_JWT_SECRET), --jwks-file or --jwks-url, or serve on 127.0.0.1"
            )
        }
        let adminToken = adminToken ?? environment("OSD_ADMIN_TOKEN")
        if let adminToken, adminToken.count < 16 {
            throw ValidationError("the admin token (--admin-token, OSD_ADMIN_TOKEN) must be at least 16 characters; it opens the admin console")
        }
        let auth = AuthConfiguration(
            hmacSecret: usesDevelopmentSecret ? developmentSecret : jwtSecret, jwksJSON: jwks, jwksURL: jwksURL.flatMap { URL(string: $0) },
            clockSkew: jwtClockSkew, issuer: jwtIssuer ?? environment("OSD_JWT_ISSUER"), audience: jwtAudience ?? environment("OSD_JWT_AUDIENCE"),
            jwksRefreshInterval: jwksRefreshInterval)
        let configuration = SyncServerConfiguration(
            hostname: hostname, port: port, auth: auth, maxBodySize: maxBodyBytes,
            sync: SyncServiceConfiguration(
                maxMutationsPerPush: maxMutations, maxChangesPerPush: maxChanges, maxPullLimit: maxPullLimit, retention: retentionDays * 86_400,
                maxBlobBytes: maxBlobBytes, maxUserBlobBytes: maxUserBlobBytes),
            compactionInterval: compactionInterval, shutdownGracePeriod: shutdownGracePeriod, adminToken: adminToken)
        let storage: any SyncStorage
        var shownDatabase = URL(fileURLWithPath: database).standardizedFileURL.path
        if let url = postgres ?? environment("OSD_POSTGRES_URL") {
            var settings = try PostgresStorageConfiguration(url: url)
            let query = URLComponents(string: url)?.queryItems ?? []
            if !query.contains(where: { $0.name == "schema" }) { settings.schema = postgresSchema }
            if !query.contains(where: { $0.name == "pool_size" }) { settings.poolSize = postgresPoolSize }
            if !query.contains(where: { $0.name == "statement_timeout" }) { settings.statementTimeoutMilliseconds = postgresStatementTimeout }
            if !query.contains(where: { $0.name == "connect_timeout" }) { settings.connectTimeoutMilliseconds = postgresConnectTimeout }
            storage = try await PostgresSyncStorage(configuration: settings, logger: logger)
            shownDatabase = settings.redactedDescription
        } else {
            storage = try SQLiteSyncStorage(path: database)
        }
        let blobFolder = blobs ?? environment("OSD_BLOBS_DIR")
        let server = try await SyncServer(configuration: configuration, storage: storage, blobs: blobFolder.map { FileBlobStorage(root: $0) })
        let hostname = hostname
        let database = shownDatabase
        let blobsShown =
            blobFolder.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            ?? (postgres ?? environment("OSD_POSTGRES_URL") == nil ? shownDatabase + ".blobs" : nil)
        let app = server.makeApplication(logger: logger) { port in
            print("osd-server listening on http://\(hostname):\(port)")
            print("database: \(database)")
            print("blobs: \(blobsShown ?? "in the database, in chunks")")
            if adminToken != nil {
                print("admin console: http://\(hostname):\(port)/admin (serve it behind TLS beyond this machine)")
            }
            if usesDevelopmentSecret {
                print("auth: development HS256 secret (set --jwt-secret or --jwks-file for production)")
                print("get a token: swift run osd-server token --user alice")
            } else {
                print("get a token: osd-server token --user alice --jwt-secret <secret> (HS256), or from your identity provider")
            }
            fflush(nil)  // all streams: stdout may be a pipe or file
        }
        do {
            try await ServiceGroup(
                configuration: ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            ).run()
        } catch {
            try? await server.close()
            throw error
        }
        try await server.close()
        print("osd-server stopped; database closed")
        fflush(nil)  // all streams: stdout may be a pipe or file
    }
}

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Mint a development bearer token (HS256); the token is the last line printed.")

    @Option(help: "The user id (the token's sub claim).")
    var user: String

    @Option(help: "HS256 secret, the same as the server's (env OSD_JWT_SECRET; default: the development secret).")
    var jwtSecret: String = environment("OSD_JWT_SECRET") ?? developmentSecret

    @Option(help: "Days until the token expires.")
    var days: Double = 30

    func run() async throws {
        let verifier = try await TokenVerifier(configuration: AuthConfiguration(hmacSecret: jwtSecret))
        let token = try await verifier.mint(user: user, lifetime: days * 86_400)
        print("token for \(user), valid \(days) days (send as Authorization: Bearer <token>):")
        print(token)
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the SQLite database to a new file while the server runs (a consistent online backup).",
        discussion: "The copy holds every push committed before it began and none after; restore it with `osd-server restore FILE`.")

    @Option(help: "The backup file to write; it must not exist.")
    var to: String

    @Option(help: "SQLite database file (env OSD_DATABASE; default $OSD_DATA_DIR/osd-server.sqlite or ./osd-server.sqlite).")
    var database: String = environment("OSD_DATABASE") ?? defaultDatabasePath()

    @Option(help: "The server's blobs folder, copied to FILE.blobs (env OSD_BLOBS_DIR; default <database>.blobs).")
    var blobs: String?

    func run() async throws {
        do {
            let summary = try SQLiteMaintenance.backup(databasePath: database, to: to, blobs: blobs ?? environment("OSD_BLOBS_DIR"))
            print(
                "backed up \(absolute(database)) to \(absolute(summary.path)): \(summary.bytes) bytes, log head \(summary.head), epoch \(summary.epoch), \(summary.blobs) blobs"
            )
        } catch let error as SyncServiceError {
            throw ValidationError(error.error.message)
        }
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Install a backup as the server's SQLite database, with a new epoch (stop the server first).",
        discussion:
            "The new epoch makes clients' cursors from the lost history reset, and the sync engine resends the saves the backup does not hold.")

    @Argument(help: "The backup file (left as it is).")
    var backup: String

    @Option(help: "SQLite database file to replace (env OSD_DATABASE; default $OSD_DATA_DIR/osd-server.sqlite or ./osd-server.sqlite).")
    var database: String = environment("OSD_DATABASE") ?? defaultDatabasePath()

    @Option(help: "The server's blobs folder, where FILE.blobs is copied (env OSD_BLOBS_DIR; default <database>.blobs).")
    var blobs: String?

    func run() async throws {
        do {
            let change = try SQLiteMaintenance.restore(backup: backup, to: database, blobs: blobs ?? environment("OSD_BLOBS_DIR"))
            print("restored \(absolute(backup)) into \(absolute(database)); epoch \(change.previous) is now \(change.current)")
        } catch let error as SyncServiceError {
            throw ValidationError(error.error.message)
        }
    }
}

struct Epoch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The database's epoch: the history clients' cursors belong to.",
        subcommands: [Rotate.self])

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give the database a new epoch in place (after restoring it by other means; stop the server first).",
            discussion: "With PostgreSQL, after pg_dump/pg_restore: stop every server, rotate, start them.")

        @Option(help: "SQLite database file (env OSD_DATABASE; default $OSD_DATA_DIR/osd-server.sqlite or ./osd-server.sqlite).")
        var database: String = environment("OSD_DATABASE") ?? defaultDatabasePath()

        @Option(help: "PostgreSQL URL instead of the SQLite file (env OSD_POSTGRES_URL).")
        var postgres: String?

        @Option(help: "PostgreSQL schema of the tables (env OSD_POSTGRES_SCHEMA).")
        var postgresSchema: String = environment("OSD_POSTGRES_SCHEMA") ?? "public"

        func run() async throws {
            do {
                if let url = postgres ?? environment("OSD_POSTGRES_URL") {
                    var settings = try PostgresStorageConfiguration(url: url)
                    if !(URLComponents(string: url)?.queryItems ?? []).contains(where: { $0.name == "schema" }) { settings.schema = postgresSchema }
                    settings.poolSize = 2
                    let storage = try await PostgresSyncStorage(configuration: settings)
                    let change: EpochChange
                    do {
                        change = try await storage.rotateEpoch()
                    } catch {
                        try? await storage.close()
                        throw error
                    }
                    try await storage.close()
                    print("rotated the epoch of \(settings.redactedDescription): \(change.previous) is now \(change.current)")
                } else {
                    let change = try SQLiteMaintenance.rotateEpoch(databasePath: database)
                    print("rotated the epoch of \(absolute(database)): \(change.previous) is now \(change.current)")
                }
            } catch let error as SyncServiceError {
                throw ValidationError(error.error.message)
            }
        }
    }
}

func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }
