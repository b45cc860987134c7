import OpenSwiftDataServerPostgres
import Testing

@Suite("PostgreSQL storage settings")
struct PostgresConfigurationTests {
    @Test("a libpq URL: TCP with port, password and TLS mode; a Unix socket directory; pool, timeout and schema in the query")
    func urls() throws {
        let tcp = try PostgresStorageConfiguration(url: "postgres://app:s%40cret@db.example:6543/sync?sslmode=require")
        #expect(tcp.endpoint == .tcp(host: "db.example", port: 6543))
        #expect(tcp.username == "app" && tcp.password == "s@cret" && tcp.database == "sync")
        #expect(tcp.tls == .require && tcp.schema == "public" && tcp.poolSize == 16 && tcp.statementTimeoutMilliseconds == 30_000)
        let socket = try PostgresStorageConfiguration(
            url: "postgresql://postgres@localhost/postgres?host=/tmp/pg&schema=tenant_1&pool_size=4&statement_timeout=500")
        #expect(socket.endpoint == .unixSocket(path: "/tmp/pg/.s.PGSQL.5432"))
        #expect(socket.schema == "tenant_1" && socket.poolSize == 4 && socket.statementTimeoutMilliseconds == 500)
        #expect(socket.password == nil)
        #expect(!socket.redactedDescription.contains("s@cret"))
        #expect(!tcp.redactedDescription.contains("s@cret"), "the password stays out of logs")
    }

    @Test("bad settings are typed errors naming what is wrong")
    func refusals() {
        #expect(throws: PostgresStorageError.invalidURL("expected postgres://user@host:port/database")) {
            try PostgresStorageConfiguration(url: "mysql://a@b/c")
        }
        #expect(throws: PostgresStorageError.invalidURL("no user name (postgres://user@host/database)")) {
            try PostgresStorageConfiguration(url: "postgres://localhost/db")
        }
        #expect(throws: PostgresStorageError.invalidURL("sslmode must be disable, prefer or require")) {
            try PostgresStorageConfiguration(url: "postgres://a@b/c?sslmode=verify-full")
        }
        #expect(throws: PostgresStorageError.invalidSchema("Robert'); DROP")) {
            try PostgresStorageConfiguration(url: "postgres://a@b/c?schema=Robert%27%29%3B%20DROP")
        }
        #expect(throws: PostgresStorageError.invalidSchema("1abc")) { try PostgresStorageConfiguration(url: "postgres://a@b/c?schema=1abc") }
        #expect(throws: PostgresStorageError.self) { try PostgresStorageConfiguration(url: "postgres://a@b/c?pool_size=1") }
        #expect(throws: PostgresStorageError.self) { try PostgresStorageConfiguration(url: "postgres://a@b/c?statement_timeout=soon") }
    }
}
