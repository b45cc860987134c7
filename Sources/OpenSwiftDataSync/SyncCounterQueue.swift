import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol

/// The contributions to merged fields (counters and sets) that this client's unsettled
/// mutations make, in order, for re-applying them onto pulled values: a device shows the
/// server's total plus its own contributions the server has not counted yet, and a set the
/// server's elements with its own pending removes taken out and adds appended, so its unpushed
/// increments and adds stay visible and nothing flickers.
///
/// A pulled total already counts this client's mutations up to the last of its own changes of
/// that record seen in the pulled pages (the server applies a client's mutations in order), and
/// every mutation up to the `lastMutationID` of the last page that reached the server's head
/// (each was applied, so the totals pulled since count it, or rejected, so it counts nowhere),
/// answered or not: only later ones are re-applied.
struct SyncCounterQueue {
    /// One mutation's contribution to one field.
    enum Contribution {
        /// A counter's difference.
        case counter(CounterValue)
        /// A set's adds and removes (elements as their JSON texts).
        case set(adds: [String], removes: [String])
    }

    struct Item {
        /// The mutation's id (`MutationID.max` for a save not sent yet).
        var mutation: MutationID
        var field: String
        var contribution: Contribution
    }

    private var items: [SyncRebase.RecordRef: [Item]] = [:]
    /// Texts' pending edits, per record and field, in order.
    private var texts: [SyncRebase.RecordRef: [String: [TextChange]]] = [:]
    /// Records a pending mutation deletes: what follows starts a new life (an insert's values
    /// are the record's, not contributions to a pulled total).
    private var restarted: Set<SyncRebase.RecordRef> = []
    /// Per record, the last of this client's mutations the pulled changes so far showed.
    private var echoed: [SyncRebase.RecordRef: MutationID] = [:]
    /// This client's id, to recognize its own changes in pulled pages.
    let clientID: ClientID
    /// The mutations the server had processed for this client when a pull last reached its head
    /// (this page, or the previous pull's last page; 0 when unknown).
    let processedThrough: MutationID
    /// Whether a field of an entity merges, as a counter or a set (an insert's value of it is a
    /// contribution).
    let isMerged: (String, String) -> Bool

    init(
        clientID: ClientID, processedThrough: MutationID = 0, echoed: [SyncRebase.RecordRef: MutationID] = [:],
        isMerged: @escaping (String, String) -> Bool = { _, _ in false }
    ) {
        self.clientID = clientID
        self.processedThrough = processedThrough
        self.echoed = echoed
        self.isMerged = isMerged
    }

    /// Per record, the last of this client's mutations the pulled changes so far showed (kept
    /// from page to page of one pull: a later page's totals of the record count it too).
    var echoes: [SyncRebase.RecordRef: MutationID] { echoed }

    var isEmpty: Bool { items.isEmpty }

    /// This client's pending edits of a text, in order, re-applied onto a pulled state of it:
    /// every unsettled one, since an edit the state holds already applies as nothing.
    func pendingTexts(_ ref: SyncRebase.RecordRef, _ field: String) -> [TextChange] {
        texts[ref]?[field] ?? []
    }

    /// Adds the contributions of one mutation's changes: counters' differences and sets' adds
    /// and removes, and the values inserts give counters and sets (the server adds them to a
    /// record the insert takes over, so a pulled value holds them once the insert is counted).
    mutating func add(_ changes: [RecordChange], mutation: MutationID) {
        for change in changes {
            let ref = SyncRebase.RecordRef(entity: change.entity, recordID: change.recordID)
            switch change.op {
            case .delete:
                items[ref] = nil
                texts[ref] = nil
                restarted.insert(ref)
                continue
            case .insert where !restarted.contains(ref):
                for (field, value) in change.fields.sorted(by: { $0.key < $1.key }) where isMerged(change.entity, field) {
                    if case let .json(text) = value, let elements = SetElements.split(text) {
                        guard !elements.isEmpty else { continue }
                        items[ref, default: []].append(Item(mutation: mutation, field: field, contribution: .set(adds: elements, removes: [])))
                        continue
                    }
                    guard let delta = Self.counter(value), !delta.isZero else { continue }
                    items[ref, default: []].append(Item(mutation: mutation, field: field, contribution: .counter(delta)))
                }
            case .insert, .update:
                break
            }
            for (field, merge) in change.merge.sorted(by: { $0.key < $1.key }) {
                switch merge {
                case let .counter(value):
                    guard let delta = Self.counter(value) else { continue }
                    items[ref, default: []].append(Item(mutation: mutation, field: field, contribution: .counter(delta)))
                case let .set(setChange):
                    items[ref, default: []].append(
                        Item(mutation: mutation, field: field, contribution: .set(adds: setChange.add, removes: setChange.remove)))
                case let .text(edits):
                    // Re-applied onto a pulled state of the text (see `pendingTexts`).
                    texts[ref, default: [:]][field, default: []].append(edits)
                }
            }
        }
    }

    /// Whether a pending mutation deletes the record (what follows is a new life, not to be
    /// put on top of totals pulled before it).
    func restarts(_ ref: SyncRebase.RecordRef) -> Bool { restarted.contains(ref) }

    /// Notes a pulled change: when it is this client's own, its record's total counts that
    /// mutation and every earlier one.
    mutating func observe(_ change: PulledChange) {
        guard change.clientID == clientID, let mutation = change.mutationID else { return }
        let ref = SyncRebase.RecordRef(entity: change.entity, recordID: change.recordID)
        echoed[ref] = max(echoed[ref] ?? 0, mutation)
    }

    /// Whether the record has contributions still to count to `field`.
    func hasPending(_ ref: SyncRebase.RecordRef, _ field: String) -> Bool {
        !restarted.contains(ref) && (items[ref]?.contains { $0.field == field } ?? false)
    }

    /// `total` plus the contributions to `field` of the record that the pulled value does not
    /// count yet: a counter's sum (nil when `total` is not a number, or the sum does not fit), or
    /// a set's elements with the pending removes taken out and adds appended (nil when `total`
    /// is not a JSON array).
    func rebased(_ total: SyncValue, _ ref: SyncRebase.RecordRef, _ field: String) -> SyncValue? {
        let counted = max(echoed[ref] ?? 0, processedThrough)
        if case let .json(text) = total {
            guard var elements = SetElements.split(text).map(SetElements.unique) else { return nil }
            for item in items[ref] ?? [] where item.field == field && item.mutation > counted {
                guard case let .set(adds, removes) = item.contribution else { continue }
                elements = SetElements.applying(adds, removing: removes, to: elements)
            }
            return .json(SetElements.json(elements))
        }
        guard let confirmed = Self.counter(total) else { return nil }
        var counter = CounterState(confirmed: confirmed)
        for item in items[ref] ?? [] where item.field == field && item.mutation > counted {
            guard case let .counter(delta) = item.contribution else { continue }
            do { try counter.add(delta, key: item.mutation) } catch { return nil }
        }
        return counter.value.map(Self.wire)
    }

    static func counter(_ value: SyncValue) -> CounterValue? {
        switch value {
        case let .int(number): .int(number)
        case let .double(number): .double(number)
        default: nil
        }
    }

    static func wire(_ value: CounterValue) -> SyncValue {
        switch value {
        case let .int(number): .int(number)
        case let .double(number): .double(number)
        }
    }
}
