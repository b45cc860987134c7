import Foundation
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
            case let .set(setChange):
                let expected = live?.fields[name]?.kind ?? schema?.fields.first { $0.name == name }?.kind
                if let expected, expected != .json {
                    throw Rejection(
                        reason: .wrongValueType, message: "\(key): set \(name.debugDescription) holds \(expected.rawValue) values, not json",
                        keys: [key])
                }
                try Self.checkElements(setChange.add + setChange.remove, of: name, key: key)
            case let .text(textChange):
                let expected = live?.fields[name]?.kind ?? schema?.fields.first { $0.name == name }?.kind
                if let expected, expected != .string {
                    throw Rejection(
                        reason: .wrongValueType, message: "\(key): text \(name.debugDescription) holds \(expected.rawValue) values, not string",
                        keys: [key])
                }
                _ = try Self.textOperation(textChange, of: name, key: key)
            }
        }
    }

    /// A set's elements in their canonical form (``SetElements/canonical(_:)``), checked: each
    /// one JSON value of at most ``SetElements/maximumElementBytes`` bytes, and no more than
    /// twice ``SetElements/maximumCount`` of them (a change's adds and removes). An element
    /// written another way than its canonical text (a hand-written client's escapes, spacing,
    /// key order or `1.0`) is the same element.
    @discardableResult
    static func checkElements(_ elements: [String], of name: SyncName, key: RecordKey) throws -> [String] {
        guard elements.count <= 2 * SetElements.maximumCount else {
            throw Rejection(
                reason: .validation,
                message:
                    "\(key): a change of set \(name.debugDescription) names \(elements.count) elements, more than a set holds (\(SetElements.maximumCount))",
                keys: [key])
        }
        func tooLarge(_ bytes: Int) -> Rejection {
            Rejection(
                reason: .validation,
                message:
                    "\(key): an element of set \(name.debugDescription) takes \(bytes) bytes of JSON, more than \(SetElements.maximumElementBytes)",
                keys: [key])
        }
        // An element past twice the limit is refused unread (only escapes could bring it
        // within the limit once canonical).
        let readable = { (element: String) in element.utf8.count <= 2 * SetElements.maximumElementBytes }
        let canonicals = SetElements.canonical(elements.map { readable($0) ? $0 : "" })
        return try zip(elements, canonicals).map { element, canonical in
            guard readable(element) else { throw tooLarge(element.utf8.count) }
            guard let canonical, SetElements.split(SetElements.json([element])) == [element] else {
                throw Rejection(
                    reason: .validation, message: "\(key): an element of set \(name.debugDescription) is not one JSON value: \(element.prefix(200))",
                    keys: [key])
            }
            guard canonical.utf8.count <= SetElements.maximumElementBytes else { throw tooLarge(canonical.utf8.count) }
            return canonical
        }
    }

    /// The elements of a set's whole value (a JSON array), checked.
    static func setElements(_ value: SyncValue, of name: SyncName, key: RecordKey) throws -> [String] {
        guard case let .json(text) = value, let elements = SetElements.split(text) else {
            throw Rejection(
                reason: .wrongValueType, message: "\(key): set \(name.debugDescription) holds a JSON array, not \(value.kind?.rawValue ?? "null")",
                keys: [key])
        }
        return SetElements.unique(try checkElements(elements, of: name, key: key))
    }

    /// The sets a new record's insert writes whole, as the inserting client's adds (its
    /// elements in order, at the insert's version, made by mutation `mutation`), replacing
    /// their values with the canonical one.
    func insertSets(_ fields: inout [SyncName: StoredField], schema: EntityDescriptor?, version: Int64, mutation: MutationID, key: RecordKey) throws {
        for (name, field) in fields.sorted(by: { $0.key < $1.key }) where declaredMerge(schema, name) == .set {
            var state = SetState()
            state.apply(
                adds: try Self.setElements(field.value, of: name, key: key), removes: [], client: request.clientID, version: version, seen: nil,
                mutation: mutation)
            let json = SetElements.json(state.elements)
            try Self.checkSize(state, json: json, of: name, key: key)
            fields[name]?.value = .json(json)
            fields[name]?.kind = .json
            fields[name]?.set = state
        }
    }

    /// Checks that a set that took adds stays within ``SetElements/maximumCount`` elements and
    /// ``SetElements/maximumBytes`` bytes of JSON (every change of it logs its whole value).
    static func checkSize(_ state: SetState, json: String, of name: SyncName, key: RecordKey) throws {
        guard state.count <= SetElements.maximumCount else {
            throw Rejection(
                reason: .validation, message: "\(key): set \(name.debugDescription) would hold more than \(SetElements.maximumCount) elements",
                keys: [key])
        }
        guard json.utf8.count <= SetElements.maximumBytes else {
            throw Rejection(
                reason: .validation,
                message:
                    "\(key): set \(name.debugDescription) would take \(json.utf8.count) bytes of JSON, more than \(SetElements.maximumBytes)",
                keys: [key])
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
            if existing.fields[name]?.merge == .text || declared == .text {
                merges[name] = try textContribution(
                    ofPlain: value, name: name, declared: declared, change: change, existing: existing, snapshot: snapshot)
                fields[name] = nil
                continue
            }
            if existing.fields[name]?.merge == .set || declared == .set {
                merges[name] = try setContribution(
                    ofPlain: value, name: name, declared: declared, change: change, existing: existing, snapshot: snapshot)
                fields[name] = nil
                continue
            }
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

    /// A set written whole, as a contribution: an insert by a client that declares the set, of a
    /// record that exists already, adds its elements (two devices created it: both sets count);
    /// any other whole write (an older app, or a save queued before the update declared the set)
    /// adds and removes what it changed from the value it saw, unless another client changed the
    /// record since the version the write is based on (it could remove elements added meanwhile
    /// by an add it has not seen, or drop removes: refused, naming the field).
    private func setContribution(
        ofPlain value: SyncValue, name: SyncName, declared: MergeKind?, change: RecordChange, existing: StoredRecord, snapshot: PushSnapshot
    ) throws -> FieldMerge {
        let key = existing.key
        let written = try Self.setElements(value, of: name, key: key)
        if declared == .set, change.op == .insert { return .set(SetChange(add: written)) }
        if change.baseVersion == nil || isStale(existing, change: change, snapshot: snapshot) {
            throw Rejection(
                reason: .validation,
                message:
                    "\(key): field \(name.debugDescription) merges as a set since a newer version of the app; this write, based on version \(change.baseVersion ?? 0) while another client changed the record up to version \(existing.version), would lose elements it has not seen: update the app",
                keys: [key])
        }
        let current = existing.fields[name].map(Self.currentElements) ?? []
        let difference = SetElements.difference(from: current, to: written)
        return .set(SetChange(add: difference.adds, remove: difference.removes))
    }

    /// A set's elements as the server holds them (from its tags, else from a value written
    /// before the field merged).
    static func currentElements(_ field: StoredField) -> [String] {
        if let set = field.set { return set.elements }
        guard case let .json(text) = field.value else { return [] }
        return SetElements.unique(SetElements.split(text) ?? [])
    }

    /// Adds contributions to `fields`, as client `request.clientID`'s change at server version
    /// `version` based on version `seen`, in its mutation `mutation`; returns the merged fields
    /// whose value changed (for a set, whose tags changed), with their new values.
    func apply(
        _ merges: [SyncName: FieldMerge], to fields: inout [SyncName: StoredField], stamp: HLCTimestamp, version: Int64, seen: Int64?,
        mutation: MutationID, key: RecordKey
    ) throws -> [SyncName: SyncValue] {
        var changed: [SyncName: SyncValue] = [:]
        for (name, merge) in merges.sorted(by: { $0.key < $1.key }) {
            switch merge {
            case let .set(setChange):
                let old = fields[name]
                // A value written before the field merged is taken over as its writer's adds,
                // seen by everyone (version 0).
                var state = old?.set ?? SetState(elements: old.map(Self.currentElements) ?? [], client: old?.client ?? request.clientID, version: 0)
                let tagsChanged = state.apply(
                    adds: try Self.checkElements(setChange.add, of: name, key: key),
                    removes: try Self.checkElements(setChange.remove, of: name, key: key), client: request.clientID, version: version, seen: seen,
                    mutation: mutation,
                    predecessors: request.predecessors ?? [:])
                if !tagsChanged, old?.merge == .set, old?.set != nil { continue }
                let json = SetElements.json(state.elements)
                // Only adds are checked: a remove from a set past the limits is always taken.
                if !setChange.add.isEmpty { try Self.checkSize(state, json: json, of: name, key: key) }
                let value = SyncValue.json(json)
                fields[name] = StoredField(
                    value: value, kind: .json, stamp: max(stamp, old?.stamp ?? stamp), client: request.clientID, merge: .set, set: state)
                // Logged whenever the tags changed, so that the record's version moves past the
                // new tags (a remove based on it observes them).
                if tagsChanged || old?.value != value { changed[name] = value }
            case let .text(textChange):
                if let value = try applyText(textChange, to: &fields, name: name, stamp: stamp, key: key) { changed[name] = value }
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
