import GRDB

extension StoreAttachments {
    /// Replaces, in history entries, each reference of an external column by the mapped bytes
    /// of its file, so that history hands out values, never references: an update's new value,
    /// a tombstone's preserved value, an insertion's row value. A remote reference (a synced
    /// value whose bytes had not arrived) is handed out as nil. A missing file throws a
    /// ``SwiftDataError`` naming the entity, the property and the file's digest.
    func resolve(_ entries: inout [HistoryEntry]) throws {
        for entryIndex in entries.indices {
            for recordIndex in entries[entryIndex].records.indices {
                let record = entries[entryIndex].records[recordIndex]
                guard let table = tables[record.entity], !table.externalColumns.isEmpty else { continue }
                for (position, name) in record.names.enumerated() where position < record.values.count && table.externalColumns.contains(name) {
                    guard case let .blob(data) = record.values[position].storage else { continue }
                    if AttachmentReference(remote: data) != nil {
                        // Bytes that had not arrived when the save was recorded: absent.
                        entries[entryIndex].records[recordIndex].values[position] = .null
                        continue
                    }
                    guard let reference = AttachmentReference(stored: data) else { continue }
                    do {
                        entries[entryIndex].records[recordIndex].values[position] = try table.directory.map(reference).databaseValue
                    } catch let error as AttachmentError {
                        throw SwiftDataError(
                            error.code, "\(record.entity).\(name) in history transaction \(entries[entryIndex].id): \(error)",
                            entity: record.entity, property: name)
                    }
                }
            }
        }
    }
}
