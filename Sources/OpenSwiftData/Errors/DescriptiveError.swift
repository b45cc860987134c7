/// An error that already says what was wrong, in the terms of the library (``SwiftDataError``,
/// and the errors of the save pipeline's captures): the store passes it through as thrown,
/// where it wraps any other error, from SQLite or GRDB, in a ``SwiftDataError`` naming what it
/// was doing.
package protocol DescriptiveError: Error {}

extension SwiftDataError: DescriptiveError {}
