import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol

// Fields that merge: a change's contributions (`RecordChange.merge`) are applied to the
// field's current value inside the push, whatever the conflict policy says about plain fields
// (contributions commute, so none of them is ever stale or loses). A field becomes merged on
// the server the first time a client's schema declares it so (`StoredField.merge`, sticky): a
// client whose schema does not (an older version of the app) writes it whole, which the
// server takes as the difference from what that client saw when nobody else changed the
// record since, and refuses otherwise, naming the field.
extension PushEvaluator {
    /// A counter's value from its wire form (nil: not a number kind a counter holds).
    static func counterValue(_ value: SyncValue) -> CounterValue? {
        switch value {
        case let .int(number): .int(number)
        case let .double(number): .double(number)
        default: nil
        }
    }

    /// The wire form of a counter's value.
    static func syncValue(_ value: CounterValue) -> SyncValue {
        switch value {
        case let .int(number): .int(number)
        case let .double(number): .double(number)
        }
    }

    /// How the pushing client's schema declares a field to merge (nil: written whole, or no
    /// schema).
    func declaredMerge(_ schema: EntityDescriptor?, _ name: SyncName) -> MergeKind? {
        schema?.fields.first { $0.name == name }?.merge
    }

    /// Checks a change's contributions: each names a field the client's schema declares with
    /// that merge kind, which the record does not merge otherwise, with a value of the field's
    /// kind.
    func checkMerges(_ change: RecordChange, record: StoredRecord?, schema: EntityDescriptor?, key: RecordKey) throws {
        for (name, merge) in change.merge.sorted(by: { $0.key < $1.key }) {
            if let schema {
                guard let field = schema.fields.first(where: { $0.name == name }) else {
                    throw Rejection(
                        reason: .validation, message: "\(key): field \(name.debugDescription) is not in the client's schema of \(change.entity)",
                        keys: [key])
                }
                guard field.merge == merge.kind else {
                    throw Rejection(
                        reason: .validation,
                        message: "\(key): field \(name.debugDescription) is not declared as a \(merge.kind.rawValue) in the client's schema",
                        keys: [key])
                }
            }
            let live = record?.deleted == false ? record : nil
            if let recorded = live?.fields[name]?.merge, recorded != merge.kind {
                throw Rejection(
                    reason: .validation,
                    message: "\(key): field \(name.debugDescription) merges as a \(recorded.rawValue), not a \(merge.kind.rawValue)",
                    keys: [key])
            }
            switch merge {
            case let .counter(delta):
                guard Self.counterValue(delta) != nil, let kind = delta.kind else {
                    throw Rejection(
                        reason: .wrongValueType,
                        message:
                            "\(key): a contribution to counter \(name.debugDescription) is an int or a double, not \(delta.kind?.rawValue ?? "null")",
                        keys: [key])
                }
                let expected = live?.fields[name]?.kind ?? schema?.fields.first { $0.name == name }?.kind
                if let expected, expected != kind {
                    throw Rejection(
                        reason: .wrongValueType,
                        message: "\(key): counter \(name.debugDescription) holds \(expected.rawValue) values, not \(kind.rawValue)", keys: [key])
                }
            }
        }
    }

    /// Plain writes of fields that merge, turned into contributions: an insert of a record that
    /// exists already by a client that declares the counter contributes its value (two devices
    /// created it: both values count); any other whole write (an older app that does not know
    /// the field merges, or a save queued before the app's update declared it) is taken as the
    /// difference from the value the writer saw, unless another client changed the record
    /// since the version the write is based on (then the write would lose their contributions:
    /// it is refused, naming the field).
    func contributions(
        ofPlain fields: inout [SyncName: SyncValue], change: RecordChange, existing: StoredRecord, schema: EntityDescriptor?, snapshot: PushSnapshot
    ) throws -> [SyncName: FieldMerge] {
        var merges: [SyncName: FieldMerge] = [:]
        let key = existing.key
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            let declared = declaredMerge(schema, name)
            guard existing.fields[name]?.merge == .counter || declared == .counter else { continue }
            guard let written = Self.counterValue(value) else { continue }
            let current = existing.fields[name].flatMap { Self.counterValue($0.value) } ?? written.zero
            if declared == .counter, change.op == .insert {
                merges[name] = .counter(value)
            } else {
                // Written whole by an app that does not merge it (an older version, or a save
                // queued before the app's update declared the counter).
                if change.baseVersion == nil || isStale(existing, change: change, snapshot: snapshot) {
                    throw Rejection(
                        reason: .validation,
                        message:
                            "\(key): field \(name.debugDescription) merges as a counter since a newer version of the app; this write, based on version \(change.baseVersion ?? 0) while another client changed the record up to version \(existing.version), would lose contributions it has not seen: update the app",
                        keys: [key])
                }
                guard let delta = written.subtracting(current) else {
                    throw Rejection(reason: .validation, message: "\(key): the change of counter \(name.debugDescription) overflows", keys: [key])
                }
                merges[name] = .counter(Self.syncValue(delta))
            }
            fields[name] = nil
        }
        return merges
    }

    /// Adds contributions to `fields`; returns the merged fields whose value changed, with their
    /// new totals.
    func apply(
        _ merges: [SyncName: FieldMerge], to fields: inout [SyncName: StoredField], stamp: HLCTimestamp, key: RecordKey
    ) throws -> [SyncName: SyncValue] {
        var changed: [SyncName: SyncValue] = [:]
        for (name, merge) in merges.sorted(by: { $0.key < $1.key }) {
            switch merge {
            case let .counter(deltaValue):
                guard let delta = Self.counterValue(deltaValue) else { continue }
                let old = fields[name]
                let current = old.flatMap { Self.counterValue($0.value) } ?? delta.zero
                guard let total = current.adding(delta) else {
                    throw Rejection(
                        reason: .validation, message: "\(key): adding \(delta) to counter \(name.debugDescription) (at \(current)) overflows",
                        keys: [key])
                }
                if delta.isZero, old?.merge == .counter { continue }
                fields[name] = StoredField(
                    value: Self.syncValue(total), kind: deltaValue.kind, stamp: max(stamp, old?.stamp ?? stamp), client: request.clientID,
                    merge: .counter)
                if old?.value != Self.syncValue(total) { changed[name] = Self.syncValue(total) }
            }
        }
        return changed
    }
}
