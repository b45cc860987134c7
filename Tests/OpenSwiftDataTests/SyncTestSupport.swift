import Foundation
import GRDB

/// Direct reads of store files, below OpenSwiftData.
enum GRDBProbe {
    static func open(_ url: URL) throws -> Set<String> {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")) }
    }
}
