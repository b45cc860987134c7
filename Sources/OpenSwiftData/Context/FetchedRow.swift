import GRDB

/// The row a fetch is turning into a model, handed to the model type's
/// ``PersistentModel/_$materialize(_:)``; not for direct use.
///
/// Only a context makes one (there is no public initializer), one per query, for the layout of
/// the model type it fetches, and moves it from row to row: so `_$materialize` can neither be
/// called with a row of another entity nor cost an allocation per row. It carries the storage
/// `_$materialize` made back to the context, since a non-final model class can return `Self`
/// alone but not inside a tuple.
public final class _$FetchedRow {
    /// The layout of the entity whose rows these are: the model type's own (checked when the
    /// context made its maker).
    @usableFromInline let layout: EntityLayout
    private let reader: RowReader
    private let statement: Statement
    /// The primary key of the current row.
    var primaryKey: Int64 = 0
    /// The storage `_$materialize` made for the current row.
    @usableFromInline var storage: AnyModelStorage?

    init(layout: EntityLayout, reader: RowReader, statement: Statement) {
        self.layout = layout
        self.reader = reader
        self.statement = statement
    }

    /// Reads the current row's values into `storage`.
    @usableFromInline
    func fill(_ storage: AnyModelStorage) throws {
        try reader.read(statement, primaryKey: primaryKey, into: storage)
    }
}
