import OpenSwiftDataSyncProtocol

/// One to-one reference of the schema whose delete rule the server enforces: records of
/// `entity` point through `field` at records of `destination`; when one of those is deleted,
/// `rule` says what happens to them.
package struct ReferenceRule: Hashable, Sendable {
    /// The referring entity.
    package var entity: SyncName
    /// Its reference field.
    package var field: SyncName
    /// The entity the field points at.
    package var destination: SyncName
    /// What a delete of the destination does to the referrer (never `noAction`).
    package var rule: SyncDeleteRule
}

/// The referrers to look up: live records of `entity` whose `field` holds one of `targets`.
package struct ReferrerQuery: Hashable, Sendable {
    /// The referring entity.
    package var entity: SyncName
    /// Its reference field.
    package var field: SyncName
    /// The record ids pointed at.
    package var targets: [RecordID]
}

/// The enforced references of a schema, by the entity they point at.
package struct DeleteRuleGraph: Sendable {
    /// The rules, by destination entity.
    package private(set) var rules: [SyncName: [ReferenceRule]] = [:]
    /// Reference fields by (entity, field): their destination and rule (any rule, so that
    /// inserts and re-pointings can be checked against it).
    private var fields: [SyncName: [SyncName: (destination: SyncName, rule: SyncDeleteRule?)]] = [:]

    /// The graph of a client's schema descriptor (empty without one).
    package init(_ schema: SchemaDescriptor?) {
        for entity in schema?.entities ?? [] {
            for field in entity.fields where field.kind == .reference {
                guard let destination = field.destination else { continue }
                fields[entity.name, default: [:]][field.name] = (destination, field.deleteRule)
                if let rule = field.deleteRule, rule != .noAction {
                    rules[destination, default: []].append(
                        ReferenceRule(entity: entity.name, field: field.name, destination: destination, rule: rule))
                }
            }
        }
    }

    /// Whether the schema has no rule to enforce.
    package var isEmpty: Bool { rules.isEmpty }

    /// The destination and delete rule of a reference field (nil: not a known reference).
    func reference(_ entity: SyncName, _ field: SyncName) -> (destination: SyncName, rule: SyncDeleteRule?)? {
        fields[entity]?[field]
    }

    /// The keys of the records a push's reference fields point at (loaded so that a reference
    /// to a deleted record can be checked).
    package func targets(of load: DeleteRuleLoad) -> Set<RecordKey> {
        var keys: Set<RecordKey> = []
        for (key, references) in load.references {
            for (field, target) in references {
                if let destination = reference(key.entity, field)?.destination {
                    keys.insert(RecordKey(entity: destination, recordID: target))
                }
            }
        }
        return keys
    }

    /// The queries for the referrers of `keys`, one per rule that points at their entities.
    package func queries(for keys: some Sequence<RecordKey>) -> [ReferrerQuery] {
        var byEntity: [SyncName: [RecordID]] = [:]
        for key in keys where rules[key.entity] != nil { byEntity[key.entity, default: []].append(key.recordID) }
        var queries: [ReferrerQuery] = []
        for (entity, ids) in byEntity.sorted(by: { $0.key < $1.key }) {
            for rule in rules[entity] ?? [] {
                queries.append(ReferrerQuery(entity: rule.entity, field: rule.field, targets: ids.sorted()))
            }
        }
        return queries
    }

    /// Whether `record` is deleted by cascade when one of `deleted` is: whether one of its
    /// cascading reference fields points at one of them.
    private func isCascaded(_ record: StoredRecord, by deleted: Set<RecordKey>) -> Bool {
        for rules in rules.values {
            for rule in rules where rule.rule == .cascade && rule.entity == record.entity {
                if case .reference(let target)? = record.fields[rule.field]?.value,
                    deleted.contains(RecordKey(entity: rule.destination, recordID: target))
                {
                    return true
                }
            }
        }
        return false
    }

    /// One round of `referrers(of:loaded:fetch:)`: adds the new records to `found` and
    /// returns the next frontier (the records reached by cascade, not expanded before).
    private func round(
        _ records: [StoredRecord], frontier: Set<RecordKey>, found: inout [StoredRecord], known: inout Set<RecordKey>, expanded: inout Set<RecordKey>
    ) -> [RecordKey] {
        var next: [RecordKey] = []
        for record in records where !record.deleted {
            if known.insert(record.key).inserted { found.append(record) }
            if isCascaded(record, by: frontier), expanded.insert(record.key).inserted { next.append(record.key) }
        }
        return next
    }

    /// The live referrers a push's deletes may reach, loaded round by round: the direct
    /// referrers of `roots`, then (through cascades) theirs, until none is new (a cycle ends
    /// there too). `fetch` runs a round's queries against the storage, inside the push's
    /// transaction; records already `loaded` are not returned again.
    package func referrers(
        of roots: Set<RecordKey>, loaded: Set<RecordKey>, fetch: ([ReferrerQuery]) throws -> [StoredRecord]
    ) throws -> [StoredRecord] {
        var found: [StoredRecord] = []
        var known = loaded
        var expanded = roots
        var frontier = Array(roots)
        while case let queries = queries(for: frontier), !queries.isEmpty {
            frontier = round(try fetch(queries), frontier: Set(frontier), found: &found, known: &known, expanded: &expanded)
        }
        return found
    }

    /// `referrers(of:loaded:fetch:)` for a storage whose queries are asynchronous.
    package func referrers(
        of roots: Set<RecordKey>, loaded: Set<RecordKey>, fetch: ([ReferrerQuery]) async throws -> [StoredRecord]
    ) async throws -> [StoredRecord] {
        var found: [StoredRecord] = []
        var known = loaded
        var expanded = roots
        var frontier = Array(roots)
        while case let queries = queries(for: frontier), !queries.isEmpty {
            frontier = round(try await fetch(queries), frontier: Set(frontier), found: &found, known: &known, expanded: &expanded)
        }
        return found
    }
}

/// What a push's delete rules need loaded besides the records it names: the records it deletes
/// or re-points (whose referrers a cascade may reach) and the records its reference fields
/// point at. The schema to read them with is the request's, or else the client's stored one,
/// so the storage builds the ``DeleteRuleGraph`` inside its transaction.
package struct DeleteRuleLoad: Sendable {
    /// The schema the request carries (nil: use the client's stored one).
    package var schema: SchemaDescriptor?
    /// The records deleted or re-pointed by the push: the referrers of each (and, through
    /// cascades, theirs) are loaded.
    package var roots: Set<RecordKey>
    /// Per changed record, the record ids its reference fields are set to.
    package var references: [RecordKey: [SyncName: RecordID]]

    /// Makes a load.
    package init(schema: SchemaDescriptor?, roots: Set<RecordKey> = [], references: [RecordKey: [SyncName: RecordID]] = [:]) {
        self.schema = schema
        self.roots = roots
        self.references = references
    }

    /// The load of a push request's mutations.
    package init(_ request: PushRequest) {
        self.init(schema: request.schema)
        for mutation in request.mutations {
            for change in mutation.changes {
                let key = RecordKey(entity: change.entity, recordID: change.recordID)
                if change.op == .delete { roots.insert(key) }
                for (name, value) in change.fields {
                    guard case .reference(let target) = value else { continue }
                    references[key, default: [:]][name] = target
                    roots.insert(key)
                }
            }
        }
    }
}

extension StoredRecord {
    /// The record ids the record's reference fields hold (none for a tombstone): what the
    /// storages index to find referrers.
    package var referenceTargets: [(field: SyncName, target: RecordID)] {
        guard !deleted else { return [] }
        return fields.compactMap { name, field in
            if case .reference(let target) = field.value { (name, target) } else { nil }
        }.sorted { $0.field < $1.field }
    }
}
