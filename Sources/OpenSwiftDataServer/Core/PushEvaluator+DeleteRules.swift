import OpenSwiftDataSyncProtocol

// The schema's delete rules, enforced by the server (SYNC.md, hard cases): a delete cascades,
// nullifies or is denied along the to-one references that point at the deleted record; an
// insert or update that points a reference at a deleted record follows that reference's rule.
// Every record the server changes this way is logged under the pushing mutation, so other
// clients pull it, and is taken back with the mutation if it is rejected. The rules apply
// whatever the pusher may write: the referrer's author tied it to the target's lifetime by
// pointing at it, and every client that holds both applies the same rule locally (see
// ARCHITECTURE.md, "Delete rules").

extension PushEvaluator.Working {
    /// Builds the rules of the batch's schema and indexes the references of the loaded records.
    mutating func prepareDeleteRules(_ schema: SchemaDescriptor?) {
        deleteRules = DeleteRuleGraph(schema)
        guard !deleteRules.isEmpty else { return }
        for record in records.values { indexReferences(of: record) }
    }
}

/// A delete that a `deny` reference may refuse: checked when its mutation is complete.
struct DeniedDelete {
    /// The record the mutation deleted.
    var root: RecordKey
    /// The record the reference points at (the root, or one deleted by cascade from it).
    var deleted: RecordKey
    /// The referring record.
    var referrer: RecordKey
    /// Its reference field.
    var field: SyncName
}

extension PushEvaluator {
    /// Marks a record deleted, as of the current mutation, and logs its tombstone.
    func tombstone(_ existing: StoredRecord, stamp: HLCTimestamp, working: inout Working) {
        var record = existing
        record.deleted = true
        record.fields = [:]
        record.links = [:]
        record.stamp = max(record.stamp, stamp)
        record.writer = request.clientID
        working.head += 1
        record.version = working.head
        working.set(record, for: record.key)
        log(.delete, record, fields: [:], links: [:], working: &working)
    }

    /// Applies the delete rules of the references to `root`, just deleted, and through
    /// cascades to the records they delete (a cycle ends at a record already deleted).
    /// Throws a rejection when a `deny` reference from a live record is reached.
    func enforceDeleteRules(deleting root: StoredRecord, stamp: HLCTimestamp, working: inout Working) throws {
        guard !working.deleteRules.isEmpty else { return }
        var pending = [root.key]
        while let deleted = pending.popLast() {
            guard let rules = working.deleteRules.rules[deleted.entity] else { continue }
            let candidates = (working.referrers[deleted.recordID] ?? []).sorted()
            for rule in rules {
                for key in candidates where key.entity == rule.entity {
                    guard let referrer = working.records[key], !referrer.deleted,
                        referrer.fields[rule.field]?.value == .reference(deleted.recordID)
                    else { continue }
                    switch rule.rule {
                    case .deny:
                        working.denied.append(DeniedDelete(root: root.key, deleted: deleted, referrer: key, field: rule.field))
                    case .nullify:
                        nullify(rule.field, of: referrer, stamp: stamp, working: &working)
                    case .cascade:
                        tombstone(referrer, stamp: stamp, working: &working)
                        pending.append(key)
                    case .noAction:
                        break
                    }
                }
            }
        }
    }

    /// Rejects the current mutation if a record it deleted is still referred to, through a
    /// `deny` reference, by a live record once all its changes are applied.
    func checkDeniedDeletes(_ working: Working) throws {
        for denied in working.denied {
            guard let referrer = working.records[denied.referrer], !referrer.deleted,
                referrer.fields[denied.field]?.value == .reference(denied.deleted.recordID)
            else { continue }
            let named = access(referrer.scope, working).canRead ? "\(denied.referrer)" : "a record in a scope you may not read"
            throw Rejection(
                reason: .validation,
                message:
                    "\(denied.deleted) cannot be deleted: \(named) refers to it through \(denied.field.debugDescription), whose delete rule is deny",
                keys: [denied.root])
        }
    }

    /// Sets a reference field nil because its target was deleted, and logs the update.
    private func nullify(_ field: SyncName, of referrer: StoredRecord, stamp: HLCTimestamp, working: inout Working) {
        var record = referrer
        let old = record.fields[field]
        record.fields[field] = StoredField(
            value: .null, kind: old?.kind ?? .reference, stamp: max(old?.stamp ?? stamp, stamp), client: request.clientID)
        working.head += 1
        record.version = working.head
        working.set(record, for: record.key)
        log(.update, record, fields: [field: .null], links: [:], working: &working)
    }

    /// The field values an insert or update of `key` writes, after the delete rules of the
    /// references it sets to deleted records: under `cascade` the change is rejected (naming
    /// the target), under `nullify` the reference becomes nil; otherwise it is kept.
    func resolveReferences(_ fields: [SyncName: SyncValue], of key: RecordKey, working: Working) throws -> [SyncName: SyncValue] {
        guard !working.deleteRules.isEmpty else { return fields }
        var result = fields
        for (name, value) in fields {
            guard case .reference(let id) = value, let reference = working.deleteRules.reference(key.entity, name) else { continue }
            let target = RecordKey(entity: reference.destination, recordID: id)
            guard let record = working.records[target], record.deleted else { continue }
            switch reference.rule {
            case .cascade?:
                throw Rejection(
                    reason: .recordDeleted,
                    message:
                        "\(key): \(name.debugDescription) refers to \(target), which was deleted at version \(record.version) (its delete rule cascades to the records that refer to it)",
                    keys: [key])
            case .nullify?:
                result[name] = .null
            case .deny?, .noAction?, nil:
                break
            }
        }
        return result
    }
}
