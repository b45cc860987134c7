import Foundation
import GRDB
import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol
import Synchronization

/// The device's documents of merged texts (`.text`): per synced row and text field, the
/// ``TextDocument`` whose text the column holds, with the identity of every scalar, so that a
/// save's edit is sent by identity and another device's edits apply where they were typed.
///
/// A document is stored as a checkpoint (`osd_sync_texts`: its encoded state) and the operations
/// applied since (`osd_sync_text_ops`), so that a keystroke's save writes its operation, not the
/// whole state; every ``checkpointInterval`` operations the state is written again. A row with
/// no document holds its column's value as replica 0's one run, as the server reads a text
/// without a state.
///
/// Documents read recently stay decoded in memory, keyed by the random token of the last write
/// they hold: a write rolled back, or made by another process, leaves another token in the
/// store, and the document is read again.
final class SyncTexts: Sendable {
    static let table = "osd_sync_texts"
    static let operationsTable = "osd_sync_text_ops"
    static let createStatements = [
        """
        CREATE TABLE IF NOT EXISTS \(quoted(table)) ("entity_code" INTEGER NOT NULL, "pk" INTEGER NOT NULL, "field" TEXT NOT NULL, \
        "token" INTEGER NOT NULL, "state" BLOB NOT NULL, PRIMARY KEY ("entity_code", "pk", "field")) STRICT, WITHOUT ROWID
        """,
        """
        CREATE TABLE IF NOT EXISTS \(quoted(operationsTable)) ("entity_code" INTEGER NOT NULL, "pk" INTEGER NOT NULL, "field" TEXT NOT NULL, \
        "n" INTEGER NOT NULL, "token" INTEGER NOT NULL, "operation" BLOB NOT NULL, PRIMARY KEY ("entity_code", "pk", "field", "n")) STRICT
        """,
    ]
    /// How many operations wait after a checkpoint before the state is written again.
    static let checkpointInterval = 256
    /// How many decoded documents stay in memory.
    static let cachedDocuments = 8

    /// One text of one row.
    struct Key: Hashable {
        let entityCode: Int64
        let row: Int64
        let field: String
    }

    /// A decoded document and the writes it holds.
    private struct Cached {
        var document: TextDocument
        /// The checkpoint's token, and the last operation's number and token (0, 0: none).
        var checkpoint: Int64
        var lastNumber: Int64
        var lastToken: Int64
        var used: UInt64
    }

    private struct Cache {
        var entries: [Key: Cached] = [:]
        var clock: UInt64 = 0
    }

    /// The replica this container's saves edit texts as: drawn per open, never 0 (the replica of
    /// a text without a state), and drawn again after a text's document is replaced (see
    /// ``newReplica()``).
    var replica: UInt64 { currentReplica.withLock { $0 } }
    private let currentReplica: Mutex<UInt64>
    private let cache = Mutex(Cache())

    init(replica: UInt64) {
        currentReplica = Mutex(replica == 0 ? 1 : replica)
    }

    /// Moves this container's saves to another replica. A document replaced by the server's
    /// state may have lost edits of the current replica (rejected, or left out because their
    /// origin was missing), whose sequence numbers the server may already name (a later edit
    /// that deleted them): typing on under the same replica would hand out those identities
    /// again. The next replica follows from the current one (SplitMix64), so a seeded run
    /// replays.
    func newReplica() {
        currentReplica.withLock { replica in
            var z = replica &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            replica = z == 0 ? 1 : z
        }
    }

    private static func newToken() -> Int64 { Int64.random(in: Int64.min...Int64.max) }

    /// A document as loaded, with what it holds, taken out of the cache while it is changed.
    struct Loaded {
        var document: TextDocument
        fileprivate var checkpoint: Int64
        fileprivate var lastNumber: Int64
        fileprivate var lastToken: Int64
        /// Whether the store has no document for the text (it is `current` as replica 0's run).
        fileprivate var isNew: Bool
    }

    /// The document of a text: the cached one when the store holds the same writes, else read
    /// from the store; a text without one holds `current` (its column's value) as replica 0's
    /// run.
    func load(_ key: Key, current: String, in db: Database) throws -> Loaded {
        // The token first: the state is read only when the cached document is not current.
        let checkpointToken = try Int64.fetchOne(
            db, sql: "SELECT token FROM \(quoted(Self.table)) WHERE entity_code = ? AND pk = ? AND field = ?",
            arguments: [key.entityCode, key.row, key.field])
        guard let checkpoint = checkpointToken else {
            var document = TextDocument()
            if !current.isEmpty { _ = document.insert(current, at: 0, replica: 0) }
            return Loaded(document: document, checkpoint: 0, lastNumber: 0, lastToken: 0, isNew: true)
        }
        let last = try Row.fetchOne(
            db,
            sql: "SELECT n, token FROM \(quoted(Self.operationsTable)) WHERE entity_code = ? AND pk = ? AND field = ? ORDER BY n DESC LIMIT 1",
            arguments: [key.entityCode, key.row, key.field])
        let lastNumber: Int64 = last?[0] ?? 0
        let lastToken: Int64 = last?[1] ?? 0
        let cached = cache.withLock { cache -> Cached? in
            guard let entry = cache.entries[key] else { return nil }
            cache.entries[key] = nil
            return entry
        }
        if let cached, cached.checkpoint == checkpoint, cached.lastNumber == lastNumber, cached.lastToken == lastToken {
            return Loaded(document: cached.document, checkpoint: checkpoint, lastNumber: lastNumber, lastToken: lastToken, isNew: false)
        }
        guard
            let state = try Data.fetchOne(
                db, sql: "SELECT state FROM \(quoted(Self.table)) WHERE entity_code = ? AND pk = ? AND field = ?",
                arguments: [key.entityCode, key.row, key.field])
        else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the document of text \(key.field) lost its state within a transaction")
        }
        var document = try TextDocument(encoded: state)
        let operations = try Data.fetchAll(
            db, sql: "SELECT operation FROM \(quoted(Self.operationsTable)) WHERE entity_code = ? AND pk = ? AND field = ? ORDER BY n",
            arguments: [key.entityCode, key.row, key.field])
        let decoder = JSONDecoder()
        for data in operations {
            try document.apply(try decoder.decode(TextChange.self, from: data).operation())
        }
        return Loaded(document: document, checkpoint: checkpoint, lastNumber: lastNumber, lastToken: lastToken, isNew: false)
    }

    /// Stores what `loaded.document` became through `operation` (applied to it already, and
    /// `encoded` as its ``TextChange``'s JSON when the caller has it): the operation, or a new
    /// checkpoint every ``checkpointInterval`` operations. The document goes
    /// back to the cache.
    func store(_ loaded: Loaded, applying operation: TextOperation, encoded: Data? = nil, key: Key, in db: Database) throws {
        var loaded = loaded
        if loaded.isNew || loaded.lastNumber >= Int64(Self.checkpointInterval) {
            try checkpoint(&loaded, key: key, in: db)
        } else {
            let token = Self.newToken()
            let number = loaded.lastNumber + 1
            let data = try encoded ?? JSONEncoder().encode(TextChange(operation))
            try db.execute(
                sql: "INSERT INTO \(quoted(Self.operationsTable)) (entity_code, pk, field, n, token, operation) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [key.entityCode, key.row, key.field, number, token, data])
            loaded.lastNumber = number
            loaded.lastToken = token
        }
        keep(loaded, key: key)
    }

    /// Gives back a document that did not change, to the cache.
    func release(_ loaded: Loaded, key: Key) {
        guard !loaded.isNew else { return }
        keep(loaded, key: key)
    }

    /// Stores `loaded.document` whole, replacing what the store held of the text.
    func replace(_ loaded: Loaded, key: Key, in db: Database) throws {
        var loaded = loaded
        try checkpoint(&loaded, key: key, in: db)
        keep(loaded, key: key)
    }

    private func checkpoint(_ loaded: inout Loaded, key: Key, in db: Database) throws {
        let token = Self.newToken()
        try db.execute(
            sql: "DELETE FROM \(quoted(Self.operationsTable)) WHERE entity_code = ? AND pk = ? AND field = ?",
            arguments: [key.entityCode, key.row, key.field])
        try db.execute(
            sql: "INSERT OR REPLACE INTO \(quoted(Self.table)) (entity_code, pk, field, token, state) VALUES (?, ?, ?, ?, ?)",
            arguments: [key.entityCode, key.row, key.field, token, Data(loaded.document.encoded())])
        loaded.checkpoint = token
        loaded.lastNumber = 0
        loaded.lastToken = 0
        loaded.isNew = false
    }

    private func keep(_ loaded: Loaded, key: Key) {
        cache.withLock { cache in
            cache.clock += 1
            cache.entries[key] = Cached(
                document: loaded.document, checkpoint: loaded.checkpoint, lastNumber: loaded.lastNumber, lastToken: loaded.lastToken,
                used: cache.clock)
            if cache.entries.count > Self.cachedDocuments, let oldest = cache.entries.min(by: { $0.value.used < $1.value.used })?.key {
                cache.entries[oldest] = nil
            }
        }
    }

    /// The document a pulled state makes (nil: the text's value as replica 0's run), with this
    /// device's pending edits applied onto it (an edit whose origin the state does not hold yet
    /// is left out: it comes back with its echo).
    static func document(state: Data?, value: String, pending: [TextChange]) throws -> TextDocument {
        var document: TextDocument
        if let state {
            document = try TextDocument(encoded: state)
        } else {
            document = TextDocument()
            if !value.isEmpty { _ = document.insert(value, at: 0, replica: 0) }
        }
        for change in pending {
            guard let operation = try? change.operation() else { continue }
            try? document.apply(operation)
        }
        return document
    }

    /// The document a new row's text changes make, in order: from its state or value, then its
    /// edits; nil when they start with no state or value (edits alone).
    static func fold(_ changes: [RemoteTextChange]) throws -> TextDocument? {
        var document: TextDocument?
        for change in changes {
            switch change {
            case let .state(encoded, pending): document = try Self.document(state: encoded, value: "", pending: pending)
            case let .value(value, pending): document = try Self.document(state: nil, value: value, pending: pending)
            case let .edits(edits):
                guard document != nil else { continue }
                try document?.apply(try edits.operation())
            }
        }
        return document
    }

    /// A save's edit in its stored form: the JSON of its ``TextChange``, which the log holds
    /// as text and the document's tail as bytes.
    static func encodedChange(_ operation: TextOperation) throws -> Data {
        try JSONEncoder().encode(TextChange(operation))
    }

    /// Forgets the documents of a row (deleted, or its text written whole by the sync engine):
    /// its texts are their values again.
    static func remove(entityCode: Int64, row: Int64, in db: Database) throws {
        for table in [Self.table, Self.operationsTable] {
            try db.execute(sql: "DELETE FROM \(quoted(table)) WHERE entity_code = ? AND pk = ?", arguments: [entityCode, row])
        }
    }

    /// Forgets one text's document.
    static func remove(_ key: Key, in db: Database) throws {
        for table in [Self.table, Self.operationsTable] {
            try db.execute(
                sql: "DELETE FROM \(quoted(table)) WHERE entity_code = ? AND pk = ? AND field = ?", arguments: [key.entityCode, key.row, key.field])
        }
    }

    /// Forgets the documents of every row of an entity.
    static func removeAll(entityCode: Int64, in db: Database) throws {
        for table in [Self.table, Self.operationsTable] {
            try db.execute(sql: "DELETE FROM \(quoted(table)) WHERE entity_code = ?", arguments: [entityCode])
        }
    }
}

/// A text's save in the property's terms, which undoing the save takes back from whatever the
/// text then holds: the stretch it replaced between what its context read and what it wrote
/// is replaced back, and edits others made elsewhere since stay.
struct TextDifference {
    /// The text the saving context had read.
    let seen: String
    /// The text it wrote.
    let written: String

    /// `current` with this save's edit made again (`adding`) or taken back.
    func applied(to current: String, adding: Bool) -> String {
        var document = TextDocument()
        if !current.isEmpty { _ = document.insert(current, at: 0, replica: 1) }
        document.update(to: adding ? written : seen, seen: adding ? seen : written, replica: 2)
        return document.text
    }
}
