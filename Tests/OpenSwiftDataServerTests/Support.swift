import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Testing

/// A core over a real storage: a SQLite file in a temporary directory, or a fresh schema on
/// the test PostgreSQL server.
struct CoreHarness {
    let backend: Backend
    let directory: TemporaryDirectory
    let clock: ManualClock
    let testStorage: TestStorage
    let service: SyncService

    var storage: any SyncStorageBackend { testStorage.storage }

    init(
        _ backend: Backend, configuration: SyncServiceConfiguration = SyncServiceConfiguration(), directory: TemporaryDirectory? = nil,
        name: String = "sync.sqlite"
    ) async throws {
        self.backend = backend
        self.directory = try directory ?? TemporaryDirectory()
        clock = ManualClock()
        testStorage = try await TestStorage.make(backend, directory: self.directory, name: name)
        service = try await SyncService(storage: testStorage.storage, configuration: configuration, now: clock.clock)
    }

    /// Counts rows of a table through a separate connection (what is really stored).
    func count(_ table: String) async throws -> Int {
        try await footprint()[table] ?? -1
    }

    /// Every table's row count: compared before and after a refused request.
    func footprint() async throws -> [String: Int] {
        try await testStorage.footprint()
    }

    /// Another, empty storage of the same backend whose cursors are signed with `cursorKey`.
    func restoredStorage(cursorKey: Data) async throws -> any SyncStorageBackend {
        try await TestStorage.make(backend, directory: directory, name: "restored.sqlite", cursorKey: cursorKey).storage
    }

    /// Pulls until there is nothing more; returns every change and the last response.
    func pullAll(
        _ user: String, client: ClientID, cursor: String? = nil, limit: Int? = nil, version: ProtocolVersion = .plainFields
    ) async throws -> (changes: [PulledChange], last: PullResponse, pages: [PullResponse]) {
        var cursor = cursor
        var changes: [PulledChange] = []
        var pages: [PullResponse] = []
        for _ in 0..<10_000 {
            let page = try await service.pull(
                user: user, request: PullRequest(protocolVersion: version, clientID: client, cursor: cursor, limit: limit))
            pages.append(page)
            changes += page.changes
            cursor = page.cursor
            if !page.hasMore { return (changes, page, pages) }
        }
        Issue.record("pull did not finish")
        return (changes, pages[pages.count - 1], pages)
    }

    /// The visible state of a user's scopes after a full pull from scratch: records by key.
    func state(_ user: String) async throws -> [String: [SyncName: SyncValue]] {
        var records: [String: [SyncName: SyncValue]] = [:]
        for change in try await pullAll(user, client: "observer-\(user)").changes {
            let key = "\(change.entity)/\(change.recordID)"
            switch change.op {
            case .insert: records[key] = change.fields
            case .update: records[key, default: [:]].merge(change.fields) { $1 }
            case .delete: records[key] = nil
            }
        }
        return records
    }
}

func stamp(_ milliseconds: UInt64, _ counter: UInt16 = 0) -> HLCTimestamp { HLCTimestamp(milliseconds: milliseconds, counter: counter) }

/// A mutation with one change, stamped in 2027 (before the test clock's now, so the server
/// keeps the stamp).
func mutation(
    _ id: MutationID, _ op: RecordOperation, _ recordID: RecordID, scope: ScopeID = .user("alice"), entity: SyncName = "Note",
    base: ServerVersion? = nil, at milliseconds: UInt64 = 1_790_000_000_000, fields: [SyncName: SyncValue] = [:], links: [SyncName: LinkChange] = [:]
) -> Mutation {
    Mutation(
        id: id, stamp: stamp(milliseconds),
        changes: [RecordChange(op: op, entity: entity, recordID: recordID, scope: scope, baseVersion: base, fields: fields, links: links)])
}

/// Expects a request error with a code (and returns it).
@discardableResult
func expectError(_ code: SyncErrorCode, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> SyncServiceError?
{
    do {
        try await body()
        Issue.record("expected \(code), got success", sourceLocation: sourceLocation)
    } catch let error as SyncServiceError {
        #expect(error.error.code == code, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
