import Foundation
import Logging
import OpenSwiftDataServer
import OpenSwiftDataServerPostgres
import OpenSwiftDataServerSQLite
import OpenSwiftDataTestSupport
import PostgresNIO
import Testing

/// The storages the behaviour suite runs on: every test that takes a `Backend` runs once per
/// storage.
///
/// PostgreSQL comes from `OSD_TEST_POSTGRES_URL` (`scripts/with-postgres.sh swift test` starts
/// a throwaway cluster and sets it). Without it the PostgreSQL cases fail with a message
/// saying so; `OSD_TEST_SKIP_POSTGRES=1` leaves them out on purpose (and says so on stderr).
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The backends to run: SQLite always, PostgreSQL unless explicitly opted out.
    static let all: [Backend] = {
        if PostgresTestDatabase.url == nil, ProcessInfo.processInfo.environment["OSD_TEST_SKIP_POSTGRES"] == "1" {
            FileHandle.standardError.write(Data("warning: OSD_TEST_SKIP_POSTGRES=1: the PostgreSQL storage is NOT tested in this run\n".utf8))
            return [.sqlite]
        }
        return [.sqlite, .postgres]
    }()

    /// Only PostgreSQL (tests of what only a shared database does), unless opted out.
    static let postgresOnly: [Backend] = all.filter { $0 == .postgres }
}

/// The test PostgreSQL server, and a fresh schema per test so that tests run in parallel on
/// one database without seeing each other.
enum PostgresTestDatabase {
    static let url: String? = ProcessInfo.processInfo.environment["OSD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    struct Unavailable: Error, CustomStringConvertible {
        var description: String {
            "PostgreSQL is not available to the tests: run them as `scripts/with-postgres.sh swift test` (starts a throwaway cluster), or set OSD_TEST_POSTGRES_URL=postgres://user@host/db, or set OSD_TEST_SKIP_POSTGRES=1 to leave the PostgreSQL storage untested"
        }
    }

    /// Settings for a new, empty schema.
    static func freshConfiguration(poolSize: Int = 4) throws -> PostgresStorageConfiguration {
        guard let url else { throw Unavailable() }
        var configuration = try PostgresStorageConfiguration(url: url)
        configuration.schema = "osd_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        configuration.poolSize = poolSize
        return configuration
    }

    /// A storage on a new, empty schema.
    static func freshStorage(cursorKey: Data? = nil) async throws -> PostgresSyncStorage {
        try await PostgresSyncStorage(configuration: try freshConfiguration(), cursorKey: cursorKey, logger: quietLogger)
    }

    static let quietLogger: Logger = {
        var logger = Logger(label: "osd-postgres-test")
        logger.logLevel = .critical
        return logger
    }()

    /// Every table's row count and the head, read through a connection of its own.
    static func footprint(_ configuration: PostgresStorageConfiguration) async throws -> [String: Int] {
        try await withProbe(configuration) { connection in
            var result: [String: Int] = [:]
            for table in ["osd_records", "osd_links", "osd_changes", "osd_clients", "osd_results", "osd_scopes", "osd_grants"] {
                let rows = try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT COUNT(*) FROM \(configuration.schema).\(table)"), logger: quietLogger
                ).collect()
                result[table] = Int(try rows.first?.decode(Int64.self) ?? -1)
            }
            let head = try await connection.query(PostgresQuery(unsafeSQL: "SELECT seq FROM \(configuration.schema).osd_head"), logger: quietLogger)
                .collect()
            result["head"] = Int(try head.first?.decode(Int64.self) ?? -1)
            return result
        }
    }

    /// Runs `body` on a connection of its own (not one of a storage's).
    static func withProbe<T: Sendable>(
        _ configuration: PostgresStorageConfiguration, _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        var connectionConfiguration: PostgresConnection.Configuration
        switch configuration.endpoint {
        case .tcp(let host, let port):
            connectionConfiguration = PostgresConnection.Configuration(
                host: host, port: port, username: configuration.username, password: configuration.password, database: configuration.database,
                tls: .disable)
        case .unixSocket(let path):
            connectionConfiguration = PostgresConnection.Configuration(
                unixSocketPath: path, username: configuration.username, password: configuration.password, database: configuration.database)
        }
        let connection = try await PostgresConnection.connect(configuration: connectionConfiguration, id: 1, logger: quietLogger)
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// The storage of one test, with a way to read what is really stored.
enum TestStorage {
    case sqlite(SQLiteSyncStorage, path: String)
    case postgres(PostgresSyncStorage)

    static func make(
        _ backend: Backend, directory: TemporaryDirectory, name: String = "sync.sqlite", cursorKey: Data? = nil
    ) async throws -> TestStorage {
        switch backend {
        case .sqlite:
            let path = directory.path(name)
            return .sqlite(try SQLiteSyncStorage(path: path, cursorKey: cursorKey), path: path)
        case .postgres:
            return .postgres(try await PostgresTestDatabase.freshStorage(cursorKey: cursorKey))
        }
    }

    var storage: any SyncStorageBackend {
        switch self {
        case .sqlite(let storage, _): storage
        case .postgres(let storage): storage
        }
    }

    func footprint() async throws -> [String: Int] {
        switch self {
        case .sqlite(_, let path): try GRDBProbe(path: path).footprint()
        case .postgres(let storage): try await PostgresTestDatabase.footprint(storage.configuration)
        }
    }
}
