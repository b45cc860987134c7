import GRDB

/// What a save tells each capture while it writes: the history log's (``HistoryCapture``), and
/// sync capture's when the container has it on. The save pipeline (``ModelContext/save()``,
/// ``ModelContainer/erase(author:)``) calls every active capture at each step, in the save's
/// transaction and on the thread running it, and names no capture's own types: a capture reads
/// what it needs from the layouts, rows and values it is handed. A capture serves one save.
///
/// The order of the calls: deletions by predicate, then the save's own deletions
/// (``willDelete(_:rows:in:)`` with the references to the rows already cleared, then
/// ``deleted(_:row:preserved:)`` per row), insertions (``inserted(_:layout:row:values:in:)``,
/// ``foreignKeysFixed(_:layout:columns:values:)`` for foreign keys set once their target
/// existed, then ``upserted(_:layout:row:values:in:)``), updates, many-to-many links, and
/// ``finish(author:in:)`` last.
protocol SaveCapture: AnyObject {
    /// Rows of `layout` that are about to be deleted: still in their table, the foreign keys
    /// that pointed at them already cleared.
    func willDelete(_ layout: EntityLayout, rows: DeletedRows, in db: Database) throws
    /// A deleted row, with the values its tombstone keeps (its `.preserveValueOnDeletion`
    /// attributes, read from the row before it went).
    func deleted(_ layout: EntityLayout, row: Int64, preserved: (PropertyLayout) -> DatabaseValue?)
    /// A foreign key set to NULL because the row it pointed at is deleted.
    func referenceCleared(table: String, column: String, row: Int64)
    /// A new row, with every column's stored value in column order (foreign keys to rows the
    /// save inserts later are still NULL: see ``foreignKeysFixed(_:layout:columns:values:)``).
    func inserted(_ registration: Registration, layout: EntityLayout, row: Int64, values: [DatabaseValue], in db: Database) throws
    /// Foreign keys of an inserted row, written as NULL first, set once their targets existed.
    func foreignKeysFixed(_ registration: Registration, layout: EntityLayout, columns: [Int], values: [DatabaseValue])
    /// An inserted model that took over the existing row with its unique values, with every
    /// column's final value.
    func upserted(_ registration: Registration, layout: EntityLayout, row: Int64, values: [DatabaseValue], in db: Database) throws
    /// A changed row: `properties` the changed properties (sorted indexes), `columns` those of
    /// them that are columns, and `values` the values written to those columns.
    func updated(
        _ registration: Registration, layout: EntityLayout, row: Int64, properties: [Int], columns: [Int], values: [DatabaseValue], in db: Database)
        throws
    /// Whether the capture records the additions and removals of this many-to-many
    /// relationship (the save then reads the links a row had before rewriting them).
    func capturesLinks(_ relationship: PropertyLayout, of layout: EntityLayout) -> Bool
    /// The links of a many-to-many relationship that the save rewrote for one row: `old` the
    /// related keys before (nil when not read: a new row, or no capture asked for them), `new`
    /// after.
    func linksChanged(
        _ registration: Registration, layout: EntityLayout, relationship: PropertyLayout, row: Int64, old: [Int64]?, new: [Int64], in db: Database)
        throws
    /// The save's last step in its transaction: the capture writes what it collected.
    func finish(author: String?, in db: Database) throws
    /// The columns of `layout` whose saved value this capture merges (see
    /// ``merge(_:layout:row:column:seen:written:in:)``), ascending; none by default.
    func mergedColumns(of layout: EntityLayout) -> [Int]
    /// Before the `UPDATE` of a changed row writes a column this capture merges: `seen` is the
    /// value the saving context had read (nil when unknown), `written` the value it is saving.
    /// Returns the value to write (with the property's Swift value, which the model takes once
    /// the save has committed) and the save's own difference, or nil to write `written`. Also
    /// called before an inserted model takes over an existing row (an upsert), with `seen` nil
    /// (nothing was read: the inserted value is added to the row's).
    func merge(
        _ registration: Registration, layout: EntityLayout, row: Int64, column: Int, seen: DatabaseValue?, written: DatabaseValue, in db: Database
    ) throws -> MergedValue?
}

/// A value a capture merged in place of the one a save wrote (see
/// ``SaveCapture/merge(_:layout:row:column:seen:written:in:)``).
struct MergedValue {
    /// What the column gets.
    let stored: DatabaseValue
    /// The property's value in its Swift type, which the saved model shows.
    let value: Any
    /// Whether `value` differs from the value the save wrote (the model then takes it).
    let replaces: Bool
    /// The save's own contribution in the property's Swift type (nil: none), which undoing the
    /// save takes back from whatever the property then holds.
    let difference: Any?
}

/// Which rows of an entity a deletion removes.
enum DeletedRows {
    /// These rows.
    case keys([Int64])
    /// The rows a query selects (a deletion by predicate): SQL returning their keys, and its
    /// arguments.
    case selected(sql: String, arguments: [DatabaseValue])
    /// Every row of the entity (``ModelContainer/erase(author:)``).
    case all
}

extension SaveCapture {
    func referenceCleared(table: String, column: String, row: Int64) {}
    func foreignKeysFixed(_ registration: Registration, layout: EntityLayout, columns: [Int], values: [DatabaseValue]) {}
    func capturesLinks(_ relationship: PropertyLayout, of layout: EntityLayout) -> Bool { false }
    func linksChanged(
        _ registration: Registration, layout: EntityLayout, relationship: PropertyLayout, row: Int64, old: [Int64]?, new: [Int64], in db: Database
    ) throws {}
    func mergedColumns(of layout: EntityLayout) -> [Int] { [] }
    func merge(
        _ registration: Registration, layout: EntityLayout, row: Int64, column: Int, seen: DatabaseValue?, written: DatabaseValue, in db: Database
    ) throws -> MergedValue? { nil }
}

/// Makes a capture for each save while it is on. A component of the core (sync capture)
/// registers one on the container with ``ModelContainer/setCaptureSource(_:)``; the save
/// pipeline asks every registered source once per save.
protocol SaveCaptureSource: AnyObject, Sendable {
    /// The capture of one save: by `context` (nil for ``ModelContainer/erase(author:)``), with
    /// `author`, inserting about `expectedInsertions` rows.
    func makeCapture(author: String?, context: ModelContext?, expectedInsertions: Int) -> any SaveCapture
}

/// What a component attaches to a context's next save for its capture to read
/// (``ModelContext/saveInput``): an apply of remote changes hands sync capture the record ids,
/// scopes and versions of what it writes.
protocol SaveInput: AnyObject {}

extension ModelContainer {
    /// Registers `source`, replacing a source of the same type; nil `source` of `type` removes it.
    func setCaptureSource<Source: SaveCaptureSource>(_ source: Source?, of type: Source.Type = Source.self) {
        captureSources.withLock { sources in
            sources.removeAll { Swift.type(of: $0) == type }
            if let source { sources.append(source) }
        }
    }

    /// The registered source of `type`, if any.
    func captureSource<Source: SaveCaptureSource>(of type: Source.Type) -> Source? {
        captureSources.withLock { sources in sources.lazy.compactMap { $0 as? Source }.first }
    }

    /// The captures of one save: the history log's first, then one per registered source.
    func makeCaptures(author: String?, context: ModelContext?, expectedInsertions: Int) -> (history: HistoryCapture, all: [any SaveCapture]) {
        let history = HistoryCapture()
        let sources = captureSources.withLock { $0 }
        return (history, [history] + sources.map { $0.makeCapture(author: author, context: context, expectedInsertions: expectedInsertions) })
    }
}
