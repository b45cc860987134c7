import Foundation
import PostgresNIO

/// A refused PostgreSQL storage setting or state, before any query runs.
public enum PostgresStorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection URL could not be read.
    case invalidURL(String)
    /// The schema name is not a plain identifier (lower-case letters, digits, underscores).
    case invalidSchema(String)
    /// A setting is out of range.
    case invalidSetting(String)
    /// The database holds something the storage cannot read.
    case corrupt(String)
    /// The database was migrated by a newer server than this one.
    case newerSchema(found: Int, known: Int)
    /// The storage was closed.
    case closed

    /// A readable explanation.
    public var description: String {
        switch self {
        case .invalidURL(let reason): "invalid PostgreSQL URL: \(reason)"
        case .invalidSchema(let name): "invalid PostgreSQL schema name \(name.debugDescription): use lower-case letters, digits and underscores"
        case .invalidSetting(let reason): "invalid PostgreSQL setting: \(reason)"
        case .corrupt(let reason): "the PostgreSQL database holds unreadable sync data: \(reason)"
        case .newerSchema(let found, let known):
            "the PostgreSQL schema is at migration \(found), newer than this server's \(known): upgrade the server"
        case .closed: "the PostgreSQL storage is closed"
        }
    }
}

/// Where and how the server reaches PostgreSQL.
///
/// Made from a URL in libpq's form, `postgres://user:password@host:port/database`, whose
/// query may carry `host=/socket/directory` (a Unix socket), `sslmode=disable|prefer|require`,
/// `schema=name`, `pool_size=N`, `statement_timeout=milliseconds` and `connect_timeout=seconds`
/// (libpq's unit).
public struct PostgresStorageConfiguration: Sendable {
    /// How to reach the server.
    public enum Endpoint: Sendable, Hashable {
        /// TCP.
        case tcp(host: String, port: Int)
        /// A Unix socket file (the directory's `.s.PGSQL.<port>`).
        case unixSocket(path: String)
    }

    /// TLS on TCP connections.
    public enum TLSMode: String, Sendable, Hashable {
        /// Never.
        case disable
        /// When the server offers it (the default, as libpq).
        case prefer
        /// Always: connecting fails without it.
        case require
    }

    /// The server.
    public var endpoint: Endpoint
    /// The user name.
    public var username: String
    /// The password, if any.
    public var password: String?
    /// The database (nil: the user's name).
    public var database: String?
    /// TLS on TCP.
    public var tls: TLSMode
    /// The PostgreSQL schema the tables live in (created if missing). Several sync servers of
    /// one deployment share a schema; separate deployments may share a database with
    /// different schemas.
    public var schema: String
    /// The most connections each server opens (one more is held for LISTEN).
    public var poolSize: Int
    /// The longest a statement may run (lock waits included), in milliseconds; 0: no limit.
    /// Migrations at start are not limited, except in their waits for a table's lock.
    public var statementTimeoutMilliseconds: Int
    /// The longest a request waits for a connection to the database, and a connection attempt
    /// takes, in milliseconds. While the database cannot be reached, requests are answered
    /// `503 unavailable` after this long (`/ready` too), and the
    /// pool keeps reconnecting in the background.
    public var connectTimeoutMilliseconds: Int

    /// Makes a configuration.
    public init(
        endpoint: Endpoint, username: String, password: String? = nil, database: String? = nil, tls: TLSMode = .prefer, schema: String = "public",
        poolSize: Int = 16,
        statementTimeoutMilliseconds: Int = 30_000, connectTimeoutMilliseconds: Int = 2_000
    ) {
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
        self.schema = schema
        self.poolSize = poolSize
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
    }

    /// Reads a `postgres://` or `postgresql://` URL.
    public init(url string: String) throws(PostgresStorageError) {
        guard let components = URLComponents(string: string), let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw .invalidURL("expected postgres://user@host:port/database")
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let port = components.port ?? query["port"].flatMap { Int($0) } ?? 5432
        let host = query["host"] ?? components.percentEncodedHost.flatMap { $0.removingPercentEncoding } ?? ""
        if host.hasPrefix("/") {
            endpoint = .unixSocket(path: (host as NSString).appendingPathComponent(".s.PGSQL.\(port)"))
        } else {
            endpoint = .tcp(host: host.isEmpty ? "localhost" : host, port: port)
        }
        let user = query["user"] ?? components.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? ""
        guard !user.isEmpty else { throw .invalidURL("no user name (postgres://user@host/database)") }
        username = user
        password = query["password"] ?? components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        let path = String(components.percentEncodedPath.drop { $0 == "/" }).removingPercentEncoding ?? ""
        database = query["dbname"] ?? (path.isEmpty ? nil : path)
        guard let mode = TLSMode(rawValue: query["sslmode"] ?? "prefer") else {
            throw .invalidURL("sslmode must be disable, prefer or require")
        }
        tls = mode
        schema = query["schema"] ?? "public"
        poolSize = 16
        statementTimeoutMilliseconds = 30_000
        connectTimeoutMilliseconds = 2_000
        if let value = query["connect_timeout"] {
            guard let seconds = Double(value) else { throw .invalidURL("connect_timeout must be seconds") }
            connectTimeoutMilliseconds = Int(seconds * 1000)
        }
        if let value = query["pool_size"] {
            guard let size = Int(value) else { throw .invalidURL("pool_size must be a number") }
            poolSize = size
        }
        if let value = query["statement_timeout"] {
            guard let milliseconds = Int(value) else { throw .invalidURL("statement_timeout must be milliseconds") }
            statementTimeoutMilliseconds = milliseconds
        }
        try validate()
    }

    /// Checks the settings.
    public func validate() throws(PostgresStorageError) {
        guard !schema.isEmpty, schema.utf8.count <= 40,
            schema.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }),
            let first = schema.utf8.first, !(first >= 0x30 && first <= 0x39)
        else { throw .invalidSchema(schema) }
        guard poolSize >= 2 else { throw .invalidSetting("pool size must be at least 2 (one connection listens), not \(poolSize)") }
        guard statementTimeoutMilliseconds >= 0 else { throw .invalidSetting("statement timeout must not be negative") }
        guard connectTimeoutMilliseconds >= 1 else {
            throw .invalidSetting("connect timeout must be at least 1 ms, not \(connectTimeoutMilliseconds)")
        }
    }

    /// The PostgresNIO client configuration.
    var clientConfiguration: PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch endpoint {
        case .tcp(let host, let port):
            let tlsSetting: PostgresClient.Configuration.TLS
            switch tls {
            case .disable: tlsSetting = .disable
            case .prefer: tlsSetting = .prefer(.makeClientConfiguration())
            case .require: tlsSetting = .require(.makeClientConfiguration())
            }
            configuration = PostgresClient.Configuration(
                host: host, port: port, username: username, password: password, database: database, tls: tlsSetting)
        case .unixSocket(let path):
            configuration = PostgresClient.Configuration(unixSocketPath: path, username: username, password: password, database: database)
        }
        configuration.options.maximumConnections = poolSize
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .milliseconds(connectTimeoutMilliseconds)
        configuration.options.additionalStartupParameters = [
            ("search_path", schema),
            ("statement_timeout", String(statementTimeoutMilliseconds)),
            ("application_name", "osd-server"),
        ]
        return configuration
    }

    /// The URL without its password, for logs.
    public var redactedDescription: String {
        let place: String
        switch endpoint {
        case .tcp(let host, let port): place = "\(host):\(port)"
        case .unixSocket(let path): place = path
        }
        return
            "postgres://\(username)@\(place)/\(database ?? username) (schema \(schema), pool \(poolSize), statement timeout \(statementTimeoutMilliseconds) ms, connect timeout \(connectTimeoutMilliseconds) ms)"
    }
}
