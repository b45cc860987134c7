import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol

/// Local state = server state ⊕ pending mutations, field by field.
///
/// Every field, link or record existence that a pending (unsettled) mutation touched is
/// *masked*: a pulled value for it is kept as the *shadow* (the server's latest known value)
/// instead of being written to the model, so the user keeps seeing their own edit. When the
/// mutations masking a key are settled (a page whose `lastMutationID` covers them has been
/// applied) and no later pending mutation masks it, the shadow is written to the model: the
/// server's decision, whether the local write won, lost, or was rejected. A rejected mutation
/// seeds the shadows from the records the server returned with the rejection, so it is rolled
/// back even when no later change of those records arrives.
struct SyncRebase {
    typealias Shadows = [SyncEngineStore.ShadowKey: (value: SyncEngineStore.ShadowValue, version: Int64)]

    struct RecordRef: Hashable {
        var entity: String
        var recordID: String
    }

    /// What pending mutations touch of one record.
    struct Mask {
        var record = false
        var deletedLocally = false
        var fields: Set<String> = []
        var links: Set<SyncLinkKey> = []
        /// The last value pending mutations gave each field, and each link's presence after
        /// them (what the model shows while they are pending).
        var values: [String: SyncValue] = [:]
        var linkValues: [SyncLinkKey: Bool] = [:]
    }

    static func masks(of changes: [RecordChange]) -> [RecordRef: Mask] {
        var masks: [RecordRef: Mask] = [:]
        for change in changes {
            let ref = RecordRef(entity: change.entity, recordID: change.recordID)
            var mask = masks[ref] ?? Mask()
            switch change.op {
            case .insert:
                mask.record = true
                mask.deletedLocally = false
                mask.values = [:]
                mask.linkValues = [:]
            case .delete:
                mask.record = true
                mask.deletedLocally = true
                mask.values = [:]
                mask.linkValues = [:]
            case .update:
                break
            }
            mask.fields.formUnion(change.fields.keys)
            // A counter's contribution masks the field too: the pulled total is shadowed (and
            // shown with the pending contributions re-applied, see `SyncCounterQueue`).
            mask.fields.formUnion(change.merge.keys)
            mask.values.merge(change.fields) { _, new in new }
            for (relationship, link) in change.links {
                for target in link.added + link.removed { mask.links.insert(SyncLinkKey(relationship: relationship, target: target)) }
                for target in link.removed { mask.linkValues[SyncLinkKey(relationship: relationship, target: target)] = false }
                for target in link.added { mask.linkValues[SyncLinkKey(relationship: relationship, target: target)] = true }
            }
            masks[ref] = mask
        }
        return masks
    }

    static func isMasked(_ part: SyncShadowPart, by mask: Mask?) -> Bool {
        guard let mask else { return false }
        if mask.record { return true }
        switch part {
        case .record: return false
        case let .field(name): return mask.fields.contains(name)
        // A whole set waits while any of its links is masked.
        case let .linkSet(relationship): return mask.links.contains { $0.relationship == relationship }
        case let .link(link): return mask.links.contains(link)
        }
    }

    /// The shapes of the synced entities, to read wire values into stored form.
    let shapes: [String: SyncEntityShape]
    /// Masks of every pending mutation before this page is settled.
    let before: [RecordRef: Mask]
    /// Masks of the mutations still pending after it.
    let after: [RecordRef: Mask]
    var shadows: Shadows
    /// Records without a local row (at the start of the batch, or deleted by it): an insert of
    /// one of them is applied whole even where pending mutations mask fields, since the row it
    /// makes has no other values (seed 58: a record deleted and inserted again on the server
    /// while this client had pending updates of it; seed 149: an insert resent after a server
    /// restore whose row a pulled delete had removed; both wedged on a field with no value).
    var absent: Set<RecordRef> = []
    /// Records this batch's pulled changes show on the server (insert or update last).
    private var pulledExisting: Set<RecordRef> = []
    /// The changes to apply, in order.
    private(set) var batch: [RemoteRecordChange] = []
    /// Counters' pending contributions, re-applied onto pulled totals.
    var counters: SyncCounterQueue
    /// Per record and field, the version of the batch's last change that carries the field
    /// (see ``supersede(_:)``).
    private var lastCarrying: [RecordRef: [SyncName: Int64]] = [:]
    /// Counter fields whose shadows a rejection seeded in this batch: shown again at once, with
    /// the contributions still pending (without the rejected one).
    private var rejectedCounters: Set<SyncEngineStore.ShadowKey> = []
    /// What pulled changes held that this app's model does not sync (a newer version's): the
    /// names of entities, and `Entity.field` / `Entity.link` names (see
    /// ``SchemaDescriptor/needsDownload(after:skipped:)``).
    private(set) var skipped: Set<String> = []

    init(
        shapes: [String: SyncEntityShape], before: [RecordRef: Mask], after: [RecordRef: Mask], shadows: Shadows,
        counters: SyncCounterQueue = SyncCounterQueue(clientID: "")
    ) {
        self.shapes = shapes
        self.before = before
        self.after = after
        self.shadows = shadows
        self.counters = counters
    }

    /// A counter's pulled total with this client's pending contributions re-applied (nil: not a
    /// counter with pending contributions).
    private func rebasedCounter(_ ref: RecordRef, _ name: String, _ total: SyncValue, shape: SyncEntityShape) -> SyncValue? {
        guard !counters.isEmpty, shape.isMerged(name), counters.hasPending(ref, name) else { return nil }
        return counters.rebased(total, ref, name)
    }

    private mutating func shadow(_ ref: RecordRef, _ part: SyncShadowPart, _ value: SyncEngineStore.ShadowValue, version: Int64) {
        let shadowKey = SyncEngineStore.ShadowKey(entity: ref.entity, recordID: ref.recordID, part: part)
        if let existing = shadows[shadowKey], existing.version > version { return }
        shadows[shadowKey] = (value, version)
    }

    private mutating func dropShadows(of ref: RecordRef) {
        guard !shadows.isEmpty else { return }
        shadows = shadows.filter { !($0.key.entity == ref.entity && $0.key.recordID == ref.recordID) }
    }

    /// The stored form of pulled field values. Fields this app's model does not have (added by
    /// a newer version of the app) are left out: the server keeps them for the clients that
    /// know them.
    func fields(_ values: [SyncName: SyncValue], entity: String) throws -> [SyncField] {
        guard let shape = shapes[entity] else { throw SyncEngineError.unknownEntity(entity) }
        var fields: [SyncField] = []
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            guard let field = shape.field(name) else { continue }
            guard let stored = SyncValueMapping.stored(value, for: field) else {
                throw SyncEngineError.badServerAnswer(
                    "\(entity).\(name) holds \(field.kind) values, the server sent \(value.kind?.rawValue ?? "null")")
            }
            fields.append(SyncField(name: name, value: stored))
        }
        return fields
    }

    /// Adds one pulled change: unmasked parts are applied, masked ones shadowed. A change of an
    /// entity this app does not sync (a newer version's) is skipped, as are links of
    /// relationships it does not have.
    /// Notes, before the batch's changes are added, which change of each record carries each
    /// field last: an earlier one's merged value is superseded within the batch, so this
    /// client's pending contributions are re-applied only onto the last (re-applying them onto
    /// each of many changes of one record made a pull quadratic in the queue).
    mutating func supersede(_ changes: [PulledChange]) {
        guard !counters.isEmpty else { return }
        for change in changes {
            let ref = RecordRef(entity: change.entity, recordID: change.recordID)
            for name in change.fields.keys { lastCarrying[ref, default: [:]][name] = max(lastCarrying[ref]?[name] ?? change.version, change.version) }
        }
    }

    mutating func add(_ change: PulledChange) throws {
        guard change.op != .delete, let shape = shapes[change.entity], shape.hasTexts else { return try addValues(change) }
        // Merged texts are not rebased by value: the change's edits (or the text's state, with
        // this client's pending edits on top) go to the device's documents, which keep every
        // edit made here meanwhile; the value written is what the document then reads.
        let ref = RecordRef(entity: change.entity, recordID: change.recordID)
        var values = change
        var texts: [String: RemoteTextChange] = [:]
        var textValues: [SyncName: SyncValue] = [:]
        let names = Set(change.fields.keys).union(change.textStates?.keys ?? [:].keys).union(change.merge?.keys ?? [:].keys)
        for name in names.sorted() where shape.isText(name) {
            if let value = values.fields.removeValue(forKey: name) { textValues[name] = value }
            if let encoded = change.textStates?[name] {
                guard let state = Data(base64Encoded: encoded) else {
                    throw SyncEngineError.badServerAnswer("\(change.entity).\(name): the text's state is not base64")
                }
                texts[name] = .state(state, pending: counters.pendingTexts(ref, name))
            } else if case let .text(edits)? = change.merge?[name] {
                texts[name] = .edits(edits)
            } else if case let .string(value)? = textValues[name] {
                // A value without a state: the text as replica 0's one run.
                texts[name] = .value(value, pending: counters.pendingTexts(ref, name))
            }
        }
        let count = batch.count
        try addValues(values)
        guard !texts.isEmpty, batch.count > count, let last = batch.last, last.kind == .upsert, last.entity == ref.entity,
            last.recordID == ref.recordID
        else { return }
        batch[batch.count - 1].fields += try fields(textValues, entity: change.entity)
        batch[batch.count - 1].texts = texts
    }

    private mutating func addValues(_ change: PulledChange) throws {
        guard let shape = shapes[change.entity] else {
            skipped.insert(change.entity)
            return
        }
        for name in change.fields.keys where shape.kind(of: name) == nil { skipped.insert(change.entity + "." + name) }
        for name in change.links.keys where !shape.links.contains(where: { $0.name == name }) { skipped.insert(change.entity + "." + name) }
        let ref = RecordRef(entity: change.entity, recordID: change.recordID)
        let mask = before.isEmpty ? nil : before[ref]
        counters.observe(change)
        if change.op == .delete { pulledExisting.remove(ref) } else { pulledExisting.insert(ref) }
        switch change.op {
        case .delete:
            if mask?.record == true {
                shadow(ref, .record, .record(exists: false), version: change.version)
            } else {
                dropShadows(of: ref)
                absent.insert(ref)
                batch.append(.delete(change.entity, recordID: change.recordID, serverVersion: change.version))
            }
        case .insert, .update:
            if mask?.record == true {
                shadow(ref, .record, .record(exists: true), version: change.version)
            }
            let wholeInsert = change.op == .insert && mask?.deletedLocally != true && absent.contains(ref)
            guard let mask, !wholeInsert else {
                absent.remove(ref)
                // Nothing pending touches the record (a first download, mostly), or it is an
                // insert of a record with no local row: all of it applies, except that fields
                // and links pending mutations mask show their pending values, the server's
                // being their shadows (seed 420: a record deleted and inserted again on the
                // server under this client's pending edits showed the insert's title, while
                // settling the edits took the model to show their own and wrote nothing).
                var values = change.fields
                var links: [SyncLinkChange] = []
                if let mask {
                    for (name, value) in change.fields {
                        let key = SyncShadowPart.field(name)
                        guard Self.isMasked(key, by: mask) else { continue }
                        if shape.isMerged(name) {
                            // A counter shows the total with the pending contributions on top of
                            // it, a pending insert's value among them until the total counts it
                            // (after a pending delete, the insert's value and what follows).
                            shadow(ref, key, .field(value), version: change.version)
                            let base = counters.restarts(ref) ? mask.values[name] ?? value : value
                            values[name] = counters.rebased(base, ref, name) ?? base
                            continue
                        }
                        guard let pending = mask.values[name] else { continue }
                        shadow(ref, key, .field(value), version: change.version)
                        values[name] = pending
                    }
                }
                if change.op == .insert {
                    // An insert holds the whole sets: links the record has locally and the
                    // server does not are removed (seed 170: a reset's snapshot of a record
                    // whose unlink this client never pulled kept the link).
                    for relationship in shape.links.map(\.name).sorted() {
                        var added = change.links[relationship]?.added ?? []
                        if let mask {
                            let present = Set(added)
                            if mask.record {
                                // As for a masked insert of a local record (below).
                                for (key, entry) in shadows
                                where key.entity == ref.entity && key.recordID == ref.recordID && key.part.isLink(of: relationship)
                                    && entry.version <= change.version
                                {
                                    shadows[key] = nil
                                }
                                shadow(ref, .linkSet(relationship: relationship), .linkSet(present.sorted()), version: change.version)
                            }
                            for (key, pending) in mask.linkValues.sorted(by: { $0.key < $1.key }) where key.relationship == relationship {
                                let target = key.target
                                if !mask.record { shadow(ref, .link(key), .link(present: present.contains(target)), version: change.version) }
                                added.removeAll { $0 == target }
                                if pending { added.append(target) }
                            }
                        }
                        links.append(SyncLinkChange(relationship: relationship, added: added, replacingExcept: []))
                    }
                } else {
                    for (relationship, link) in change.links.sorted(by: { $0.key < $1.key })
                    where shape.links.contains(where: { $0.name == relationship }) {
                        if !link.added.isEmpty || !link.removed.isEmpty {
                            links.append(SyncLinkChange(relationship: relationship, added: link.added, removed: link.removed))
                        }
                    }
                }
                batch.append(
                    .upsert(
                        change.entity, recordID: change.recordID, serverVersion: change.version, scope: change.scope.rawValue,
                        fields: try fields(values, entity: change.entity), links: links))
                return
            }
            var applied: [SyncName: SyncValue] = [:]
            for (name, value) in change.fields {
                let key = SyncShadowPart.field(name)
                if Self.isMasked(key, by: mask) {
                    shadow(ref, key, .field(value), version: change.version)
                    // A counter shows others' contributions at once, with its own pending ones
                    // on top, a pending insert's value among them (a pending delete of the
                    // record waits for settling).
                    if !mask.deletedLocally, (lastCarrying[ref]?[name] ?? change.version) <= change.version,
                        let rebased = rebasedCounter(ref, name, value, shape: shape)
                    {
                        applied[name] = rebased
                    }
                } else {
                    applied[name] = value
                }
            }
            var links: [SyncLinkChange] = []
            for (relationship, link) in change.links.sorted(by: { $0.key < $1.key }) where shape.links.contains(where: { $0.name == relationship }) {
                var added: [String] = []
                var removed: [String] = []
                for target in link.added {
                    let key = SyncShadowPart.link(relationship, target)
                    if Self.isMasked(key, by: mask) { shadow(ref, key, .link(present: true), version: change.version) } else { added.append(target) }
                }
                for target in link.removed {
                    let key = SyncShadowPart.link(relationship, target)
                    if Self.isMasked(key, by: mask) {
                        shadow(ref, key, .link(present: false), version: change.version)
                    } else {
                        removed.append(target)
                    }
                }
                if !added.isEmpty || !removed.isEmpty { links.append(SyncLinkChange(relationship: relationship, added: added, removed: removed)) }
            }
            if change.op == .insert, mask.record {
                // Every link is masked: the whole sets are shadowed, so that settling replaces
                // the local links with them (seed 494: a record inserted here, linked by another
                // client, restored away on the server, then inserted again by this client's
                // resend without the link, kept the link its first life had pulled).
                for relationship in shape.links.map(\.name) {
                    for (key, entry) in shadows
                    where key.entity == ref.entity && key.recordID == ref.recordID && key.part.isLink(of: relationship)
                        && entry.version <= change.version
                    {
                        shadows[key] = nil
                    }
                    shadow(
                        ref, .linkSet(relationship: relationship), .linkSet((change.links[relationship]?.added ?? []).sorted()),
                        version: change.version)
                }
            }
            if change.op == .insert, !mask.record {
                // An insert holds the whole sets (see above); the links pending edits touch stay
                // as they are locally, and the server's absence of them is their shadow.
                links = []
                for relationship in shape.links.map(\.name).sorted() {
                    let present = Set(change.links[relationship]?.added ?? [])
                    var kept: [String] = []
                    for key in mask.links.sorted() where key.relationship == relationship {
                        kept.append(key.target)
                        if !present.contains(key.target) { shadow(ref, .link(key), .link(present: false), version: change.version) }
                    }
                    let added = present.filter { !Self.isMasked(.link(relationship, $0), by: mask) }.sorted()
                    links.append(SyncLinkChange(relationship: relationship, added: added, replacingExcept: kept))
                }
            }
            guard !mask.deletedLocally else { return }
            absent.remove(ref)
            // Even with every field masked, the upsert records the server version the record
            // is at, as the base version of the next local change.
            batch.append(
                .upsert(
                    change.entity, recordID: change.recordID, serverVersion: change.version, scope: change.scope.rawValue,
                    fields: try fields(applied, entity: change.entity), links: links))
        }
    }

    /// Seeds the shadows of a rejected mutation from the server's records, so that settling it
    /// rolls it back.
    mutating func seedRejected(_ mutation: Mutation, serverRecords: [RecordState]) {
        for change in mutation.changes {
            let ref = RecordRef(entity: change.entity, recordID: change.recordID)
            guard let state = serverRecords.first(where: { $0.entity == change.entity && $0.recordID == change.recordID }), !state.deleted else {
                // The server had no such record when it rejected the mutation; a pulled change
                // that shows it since (inserted again: a save resent after a restore) is newer
                // (seed 161: an edit rejected as recordNotFound deleted the record locally
                // although the snapshot settling it held the record).
                if pulledExisting.contains(ref) { continue }
                // An edit has no existence to roll back: whether the record is here follows the
                // pulled changes (a delete, a reset's download), and a stored answer may be older
                // than a pulled insert of an earlier batch (seed 680: an increment rejected as
                // recordNotFound by a restored server, answered again after the counter's
                // creator resent it and this client pulled it, deleted the counter locally).
                if change.op == .update { continue }
                let version = serverRecords.first { $0.entity == change.entity && $0.recordID == change.recordID }?.version ?? 0
                shadow(ref, .record, .record(exists: false), version: version)
                continue
            }
            shadow(ref, .record, .record(exists: true), version: state.version)
            let names =
                change.op == .update
                ? Array(change.fields.keys) + Array(change.merge.keys)
                : Array(Set(state.fields.keys).union(change.fields.keys).union(change.merge.keys))
            // Texts are rolled back by downloading them again (see `rejectedTexts`).
            let shape = shapes[change.entity]
            for name in names where shape?.isText(name) != true {
                shadow(ref, .field(name), .field(state.fields[name] ?? .null), version: state.version)
            }
            for name in change.merge.keys where shape?.isText(name) != true {
                rejectedCounters.insert(SyncEngineStore.ShadowKey(entity: ref.entity, recordID: ref.recordID, part: .field(name)))
            }
            for (relationship, link) in change.links {
                let present = Set(state.links[relationship] ?? [])
                for target in link.added + link.removed {
                    shadow(ref, .link(relationship, target), .link(present: present.contains(target)), version: state.version)
                }
            }
            if change.op != .update {
                for (relationship, targets) in state.links {
                    for target in targets { shadow(ref, .link(relationship, target), .link(present: true), version: state.version) }
                }
            }
        }
    }

    /// The records of a rejected mutation whose merged texts it edited (or inserted, over a
    /// record the server holds): taking one edit out of a text is not taking back a value, and
    /// the pulled edits since the server's answer may not all be in this batch, so they are
    /// downloaded again, whole, with this client's pending edits on top.
    func rejectedTexts(_ mutation: Mutation, serverRecords: [RecordState], reason: RejectionReason?) -> Set<RecordRef> {
        var refs: Set<RecordRef> = []
        for change in mutation.changes {
            guard let shape = shapes[change.entity], shape.hasTexts else { continue }
            let ref = RecordRef(entity: change.entity, recordID: change.recordID)
            let state = serverRecords.first { $0.entity == change.entity && $0.recordID == change.recordID }
            let edited = change.merge.contains { shape.isText($0.key) }
            guard let state, !state.deleted else {
                // A record the server no longer holds is rolled back as gone, texts and all (a
                // tombstone's delete is pulled too). But an edit refused as `recordNotFound`
                // with no state at all is downloaded again: the server lost the record (a
                // restore), the local document may hold the edit still (a reset that replaced
                // it before the answer settled put the pending edits back on top), and the
                // record may come back (another device's insert resent) to be merged into that
                // document (seed 1192: a deletion refused so stayed applied on the device that
                // typed it). The download removes the record if the server still lacks it.
                if edited, state == nil, reason == RejectionReason.recordNotFound { refs.insert(ref) }
                continue
            }
            // An edit of a text, an insert over the server's record, or a delete (the row and
            // its documents are gone here; the server keeps them).
            let over = change.op == .insert && change.fields.keys.contains(where: shape.isText)
            if edited || over || change.op == .delete { refs.insert(ref) }
        }
        return refs
    }

    /// What the settled mutations last wrote locally, per key: a shadow equal to it is
    /// already what the model shows (the server kept our value), so it is not written again.
    static func localValues(of mutations: [Mutation]) -> [SyncEngineStore.ShadowKey: SyncEngineStore.ShadowValue] {
        var values: [SyncEngineStore.ShadowKey: SyncEngineStore.ShadowValue] = [:]
        for mutation in mutations.sorted(by: { $0.id < $1.id }) {
            for change in mutation.changes {
                func key(_ part: SyncShadowPart) -> SyncEngineStore.ShadowKey {
                    SyncEngineStore.ShadowKey(entity: change.entity, recordID: change.recordID, part: part)
                }
                if change.op == .delete {
                    values = values.filter { !($0.key.entity == change.entity && $0.key.recordID == change.recordID) }
                    values[key(.record)] = .record(exists: false)
                    continue
                }
                values[key(.record)] = .record(exists: true)
                for (name, value) in change.fields { values[key(.field(name))] = .field(value) }
                // A counter's contribution moves the value the model shows from whatever it
                // was: an earlier write of the field (an insert's value) says nothing of it any
                // more (seed 5741: a tally inserted at 0, then +2, both settled by a download
                // whose total was 0; the total was taken as shown, and the model kept 2).
                for name in change.merge.keys { values[key(.field(name))] = nil }
                for (relationship, link) in change.links {
                    for target in link.added { values[key(.link(relationship, target))] = .link(present: true) }
                    for target in link.removed { values[key(.link(relationship, target))] = .link(present: false) }
                }
            }
        }
        return values
    }

    /// Writes the shadows that no pending mutation masks any more, and forgets them. Those
    /// equal to what the settled mutations wrote locally (`local`) are forgotten only.
    mutating func flush(local: [SyncEngineStore.ShadowKey: SyncEngineStore.ShadowValue] = [:]) throws {
        var byRecord: [RecordRef: [(part: SyncShadowPart, value: SyncEngineStore.ShadowValue, version: Int64)]] = [:]
        // A record the server deleted, as the settled mutations did locally: its older field
        // and link shadows are forgotten, not written (writing them would bring the row back).
        var deletedOnBoth: Set<RecordRef> = []
        for (key, entry) in shadows where key.part == .record && entry.value == .record(exists: false) && local[key] == entry.value {
            let ref = RecordRef(entity: key.entity, recordID: key.recordID)
            if !Self.isMasked(key.part, by: after[ref]) { deletedOnBoth.insert(ref) }
        }
        for (key, entry) in shadows {
            let ref = RecordRef(entity: key.entity, recordID: key.recordID)
            guard !Self.isMasked(key.part, by: after[ref]) else {
                // A counter a rejection touched, with other contributions still pending, shows
                // the server's last total with those on top: the rejected one is gone at once,
                // the others stay (its shadow stays too, for when they settle).
                if rejectedCounters.contains(key), case let .field(name) = key.part, case let .field(total) = entry.value, after[ref]?.record != true,
                    let shape = shapes[ref.entity], let rebased = rebasedCounter(ref, name, total, shape: shape)
                {
                    batch.append(
                        RemoteRecordChange(
                            kind: .upsert, entity: ref.entity, recordID: ref.recordID, serverVersion: entry.version, scope: nil,
                            fields: try fields([name: rebased], entity: ref.entity), links: []))
                }
                continue
            }
            if deletedOnBoth.contains(ref) {
                shadows[key] = nil
                continue
            }
            // A link shadowed after a whole set is written with it even when the model shows
            // it already: the set replaces the links, it would remove it (seed 233). A related
            // record the settled mutations pointed at is written too: a pulled delete of it
            // (which does not cascade) clears the reference or link in the model without a
            // mutation, so the model may no longer show what the mutation set (seed 3617).
            if local[key] == entry.value, !Self.pointsAtRecord(entry.value), !Self.followsLinkSet(key, in: shadows, masked: after[ref]) {
                shadows[key] = nil
                continue
            }
            byRecord[ref, default: []].append((key.part, entry.value, entry.version))
        }
        for (ref, entries) in byRecord.sorted(by: { ($0.key.entity, $0.key.recordID) < ($1.key.entity, $1.key.recordID) }) {
            for entry in entries { shadows[SyncEngineStore.ShadowKey(entity: ref.entity, recordID: ref.recordID, part: entry.part)] = nil }
            let version = entries.map(\.version).max() ?? 0
            if entries.contains(where: { $0.value == .record(exists: false) }) {
                // The server deleted the record: the shadows of its fields and links that
                // pending edits still mask hold values of the row that is gone, and settling
                // those edits later would write them as a row of those fields alone (seed 3500:
                // a pulled insert and delete of a record whose own insert was pending, then an
                // edit of it refused as recordDeleted, left its `count` as a row without `key`).
                dropShadows(of: ref)
                batch.append(.delete(ref.entity, recordID: ref.recordID, serverVersion: version))
                continue
            }
            var values: [SyncName: SyncValue] = [:]
            var links: [String: SyncLinkChange] = [:]
            // Whole sets first: the single links shadowed with them are newer (older ones were
            // dropped when the set was shadowed).
            for entry in entries {
                guard case let .linkSet(targets) = entry.value, case let .linkSet(relationship) = entry.part else { continue }
                var link = links[relationship] ?? SyncLinkChange(relationship: relationship)
                link.added += targets
                link.replacingExcept = []
                links[link.relationship] = link
            }
            for entry in entries {
                switch entry.value {
                case .record, .linkSet: break
                case let .field(value):
                    guard case let .field(name) = entry.part else { continue }
                    values[name] = value
                case let .link(present):
                    guard case let .link(key) = entry.part else { continue }
                    var link = links[key.relationship] ?? SyncLinkChange(relationship: key.relationship)
                    if present {
                        link.added.append(key.target)
                    } else {
                        link.added.removeAll { $0 == key.target }
                        link.removed.append(key.target)
                    }
                    links[key.relationship] = link
                }
            }
            guard !values.isEmpty || !links.isEmpty || entries.contains(where: { $0.value == .record(exists: true) }) else { continue }
            // The scope is kept as it is locally (nil: not changed by this write).
            batch.append(
                RemoteRecordChange(
                    kind: .upsert, entity: ref.entity, recordID: ref.recordID, serverVersion: version, scope: nil,
                    fields: try fields(values, entity: ref.entity), links: links.values.sorted { $0.relationship < $1.relationship }))
        }
    }

    /// Whether a shadowed value names a related record (a reference, or a link present).
    private static func pointsAtRecord(_ value: SyncEngineStore.ShadowValue) -> Bool {
        switch value {
        case .field(.reference): true
        case .link(present: true): true
        default: false
        }
    }

    /// Whether `key` is a link whose relationship has a whole-set shadow that is written now.
    private static func followsLinkSet(_ key: SyncEngineStore.ShadowKey, in shadows: Shadows, masked: Mask?) -> Bool {
        guard case let .link(link) = key.part else { return false }
        let setKey = SyncEngineStore.ShadowKey(entity: key.entity, recordID: key.recordID, part: .linkSet(relationship: link.relationship))
        return shadows[setKey] != nil && !isMasked(setKey.part, by: masked)
    }

    /// After a reset's snapshot (which holds every record the server has): a pending record it
    /// does not hold, or one shadowed from an older answer (a rejection's server records), is
    /// shadowed as absent, so settling its mutations removes it instead of writing older values
    /// back (seed 253: a record's rejected edit, then its delete, both settled by a reset, came
    /// back as a row without values from the rejection's "exists" shadow).
    mutating func markAbsent(outside snapshot: Set<RecordRef>) {
        var refs = Set(before.keys)
        for key in shadows.keys { refs.insert(RecordRef(entity: key.entity, recordID: key.recordID)) }
        for ref in refs where !snapshot.contains(ref) {
            dropShadows(of: ref)
            shadows[SyncEngineStore.ShadowKey(entity: ref.entity, recordID: ref.recordID, part: .record)] = (.record(exists: false), 0)
        }
    }

    /// Shadows these records as absent, whatever older shadows say: a newly granted scope's
    /// snapshot does not hold them.
    mutating func markAbsent(_ refs: Set<RecordRef>) {
        for ref in refs {
            dropShadows(of: ref)
            shadows[SyncEngineStore.ShadowKey(entity: ref.entity, recordID: ref.recordID, part: .record)] = (.record(exists: false), 0)
        }
    }

    /// Forgets every shadow of these records: nothing of them is written by this batch (their
    /// whole state comes with a download that follows).
    mutating func forget(_ refs: Set<RecordRef>) {
        for ref in refs { dropShadows(of: ref) }
    }

    /// Deletes local records (revoked scopes, records a reset snapshot no longer has).
    mutating func delete(_ refs: [RecordRef]) {
        for ref in refs {
            dropShadows(of: ref)
            batch.append(.delete(ref.entity, recordID: ref.recordID, serverVersion: 0))
        }
    }
}
