import Foundation
import GRDB

/// The values of the insertions in history entries, read from the rows when the history is
/// fetched.
///
/// A save records a new row by its key alone (the table holds its values, and a bulk insert
/// must not write them twice); a fetch fills in the stored values the row holds *now*: every
/// column, and each many-to-many relationship as a JSON array of the related keys, named as an
/// update records them. Changes after the insertion follow as their own entries, so replaying
/// all of them in order ends at the store's values (the states in between need not be ones the
/// store was in). A row deleted since keeps no values (its deletion follows); primary keys are
/// never reused, so a row with the key is the inserted one. Only the transactions a fetch
/// returns are filled, after its predicate, sort and limit.
enum InsertedValues {
    /// Fills in the names and values of every key-only insertion in `entries`, with one query
    /// per entity and one per many-to-many relationship; false when there was none to fill.
    @discardableResult
    static func fill(_ entries: inout [HistoryEntry], container: ModelContainer, db: Database) throws -> Bool {
        var keysByEntity: [String: [Int64]] = [:]
        for entry in entries {
            for record in entry.records where record.kind == .insert && record.names.isEmpty {
                keysByEntity[record.entity, default: []].append(record.primaryKey)
            }
        }
        guard !keysByEntity.isEmpty else { return false }

        var filled: [String: (names: [String], rows: [Int64: [DatabaseValue]])] = [:]
        for (entity, keys) in keysByEntity {
            guard let layout = container.layout(named: entity) else { continue }
            filled[entity] = try values(of: layout, keys: keys, in: db)
        }
        for index in entries.indices {
            var records = entries[index].records
            var changed = false
            for position in records.indices where records[position].kind == .insert && records[position].names.isEmpty {
                guard let entity = filled[records[position].entity],
                    let values = entity.rows[records[position].primaryKey]
                else { continue }
                records[position].names = entity.names
                records[position].values = values
                changed = true
            }
            if changed { entries[index].records = records }
        }
        return true
    }

    /// The recorded names of `layout` (its columns, then its many-to-many relationships) and,
    /// for each of `keys` whose row exists, its values in that order.
    private static func values(of layout: EntityLayout, keys: [Int64], in db: Database) throws -> (names: [String], rows: [Int64: [DatabaseValue]]) {
        let keyArray = jsonKeyArray(keys)
        let primaryKey = quoted(TableDescription.primaryKey)
        let columns = layout.columns
        let selected = ([primaryKey] + columns.map { quoted($0.name) }).joined(separator: ", ")
        var rows: [Int64: [DatabaseValue]] = [:]
        let cursor = try Row.fetchCursor(
            db, sql: "SELECT \(selected) FROM \(quoted(layout.name)) WHERE \(primaryKey) IN (SELECT value FROM json_each(?))", arguments: [keyArray])
        while let row = try cursor.next() {
            let key: Int64 = row[0]
            rows[key] = columns.indices.map { row[$0 + 1] as DatabaseValue }
        }

        var names = columns.map(\.name)
        for property in layout.relationships {
            guard case let .joinTable(table, isSource, _)? = property.relationship?.storage else { continue }
            names.append(property.name)
            var related: [Int64: [Int64]] = [:]
            let query = SelectBuilder.joinPairs(table, fromSource: isSource, in: keyArray)
            let pairs = try Row.fetchCursor(db, sql: query.sql, arguments: query.arguments)
            while let pair = try pairs.next() {
                related[pair[0] as Int64, default: []].append(pair[1] as Int64)
            }
            for key in rows.keys {
                let farKeys = related[key] ?? []
                rows[key]?.append(jsonKeyArray(farKeys).databaseValue)
            }
        }
        return (names, rows)
    }
}
