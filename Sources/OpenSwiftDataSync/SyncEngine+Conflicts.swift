import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol

extension SyncEngine {
    /// Settles a ``SyncConflict`` reported under `rejectStale`. The record already shows the
    /// server's values; `.keepLocal` and `.merged` write new values as a local save based on
    /// the server's version (pushed like any save).
    public func resolve(_ conflict: SyncConflict, with resolution: SyncConflictResolution) async throws {
        let values: [SyncName: SyncValue]
        switch resolution {
        case .keepServer: return
        case .keepLocal: values = conflict.localFields
        case let .merged(merged): values = merged
        }
        guard let shape = shapes[conflict.record.entity] else { throw SyncEngineError.unknownEntity(conflict.record.entity) }
        var fields: [SyncField] = []
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            // A blob for a column that keeps its bytes in the row (an older version of the
            // app): not written, so that this save does not replace the blob with absent.
            let field = shape.field(name)
            if case .blob = value, field?.externalStorage == false { continue }
            guard let field, let stored = SyncValueMapping.stored(value, for: field) else {
                throw SyncEngineError.badServerAnswer("\(conflict.record.entity).\(name) cannot take \(value)")
            }
            fields.append(SyncField(name: name, value: stored))
        }
        let version = conflict.server?.version ?? 0
        let change = RemoteRecordChange.upsert(
            conflict.record.entity, recordID: conflict.record.recordID, serverVersion: version, scope: conflict.server?.scope.rawValue, fields: fields
        )
        do {
            try container.applyChangesAsLocalSave([change])
        } catch {
            throw SyncEngineError.store("\(error)")
        }
        wake()
    }
}
