import Foundation

/// The results of ``ModelContext/fetch(_:batchSize:)`` and
/// ``ModelContext/fetchIdentifiers(_:batchSize:)``: a random-access collection that holds the
/// matching rows' identifiers from the start and loads the models a batch at a time, as they
/// are read.
///
/// ```swift
/// let notes = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)]), batchSize: 500)
/// print(notes.count)           // no model loaded yet
/// for note in notes { print(note.title) }  // 500 models at a time
/// ```
///
/// Memory stays bounded by the batch size: identifiers take a few bytes per row, and when
/// reading moves to another batch, the models the one before loaded that have no unsaved
/// changes are let go by the context. A model you kept a reference to stays valid: it keeps its
/// values, and a change made to it later is saved like any other (the context takes it back);
/// a later fetch of the same row in between gives a new instance. Models the context held
/// before the collection read them stay as they were. The collection sees the rows as they
/// were when it was made: a row deleted since reads as a model with default values, as
/// ``ModelContext/model(for:)`` gives.
///
/// Use it on the context that made it, as the context itself.
public struct FetchResultsCollection<Element>: RandomAccessCollection {
    /// Gives the elements of one range of positions.
    private let source: FetchBatchSource<Element>

    init(source: FetchBatchSource<Element>) {
        self.source = source
    }

    /// The position of the first element: 0.
    public var startIndex: Int { 0 }
    /// One past the position of the last element: the number of matches.
    public var endIndex: Int { source.count }

    /// The element at `position`, loading its batch when needed.
    public subscript(position: Int) -> Element {
        source.element(at: position)
    }
}

/// What a ``FetchResultsCollection`` reads from: the identifiers, and the batch of elements it
/// holds. A class, so that copies of the collection share what was loaded.
final class FetchBatchSource<Element> {
    private let identifiers: [PersistentIdentifier]
    let batchSize: Int
    /// Makes the elements of a batch, one per identifier and in order, and says which of them
    /// it loaded (the context did not hold them before): only those are let go.
    private let load: ([PersistentIdentifier]) -> (elements: [Element], loaded: [Element])
    /// Called with what a batch loaded when reading leaves it, to let those models go.
    private let release: ([Element]) -> Void
    private var current: (batch: Int, elements: [Element], loaded: [Element])?

    init(
        identifiers: [PersistentIdentifier], batchSize: Int, load: @escaping ([PersistentIdentifier]) -> (elements: [Element], loaded: [Element]),
        release: @escaping ([Element]) -> Void = { _ in }
    ) {
        self.identifiers = identifiers
        self.batchSize = max(batchSize, 1)  // below 1: a model at a time
        self.load = load
        self.release = release
    }

    var count: Int { identifiers.count }

    func element(at position: Int) -> Element {
        precondition(identifiers.indices.contains(position), "FetchResultsCollection index \(position) is out of bounds (count \(identifiers.count))")
        let batch = position / batchSize
        if let current, current.batch == batch { return current.elements[position - batch * batchSize] }
        let start = batch * batchSize
        let (elements, loaded) = load(Array(identifiers[start..<min(start + batchSize, identifiers.count)]))
        if let left = current?.loaded {
            current = nil
            release(left)
        }
        current = (batch, elements, loaded)
        return elements[position - start]
    }
}

extension ModelContext {
    /// The models that match a descriptor, as a collection that loads them `batchSize` at a
    /// time as they are read (see ``FetchResultsCollection``).
    ///
    /// The identifiers of every match are read at once, as ``fetchIdentifiers(_:)`` reads
    /// them; the models of a batch are read together the first time one of them is. Throws
    /// ``SwiftDataError/includePendingChangesWithBatchSize`` when the descriptor includes
    /// pending changes and the context has unsaved changes of the entity (save first, or set
    /// `includePendingChanges` to false), and
    /// ``SwiftDataError/unsupportedPredicate`` / ``SwiftDataError/unsupportedSortDescriptor``
    /// as ``fetch(_:)`` does.
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, batchSize: Int) throws -> FetchResultsCollection<T> {
        let identifiers = try batchIdentifiers(descriptor)
        let source = FetchBatchSource<T>(
            identifiers: identifiers, batchSize: batchSize,
            load: { identifiers in self.models(T.self, for: identifiers) },
            release: { models in self.releaseUnchanged(models) }
        )
        return FetchResultsCollection(source: source)
    }

    /// The identifiers of the models that match a descriptor, as a collection read in batches of
    /// `batchSize` (every identifier is read at once; no model is loaded). Throws as
    /// ``fetch(_:batchSize:)`` does.
    public func fetchIdentifiers<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, batchSize: Int
    ) throws -> FetchResultsCollection<PersistentIdentifier> {
        let identifiers = try batchIdentifiers(descriptor)
        return FetchResultsCollection(source: FetchBatchSource(identifiers: identifiers, batchSize: batchSize, load: { ($0, []) }))
    }

    /// The identifiers a batched fetch holds.
    private func batchIdentifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [PersistentIdentifier] {
        let layout = try container.requireLayout(for: T.self)
        if descriptor.includePendingChanges, ([layout] + container.descendants(of: layout)).contains(where: { hasPendingChanges(entity: $0.name) }) {
            throw SwiftDataError(
                .includePendingChangesWithBatchSize,
                "a fetch in batches of \(layout.name) cannot include the context's unsaved changes of it; save first, or set includePendingChanges to false"
            )
        }
        return try fetchIdentifiers(descriptor)
    }

    /// The models of `identifiers`, in their order: registered ones as they are, the others read
    /// together, one query per entity; and those it read (which the batch may let go).
    private func models<T: PersistentModel>(_ type: T.Type, for identifiers: [PersistentIdentifier]) -> (elements: [T], loaded: [T]) {
        let use = ExclusiveUse(self)
        defer { use.end() }
        var byEntity: [String: [Int64]] = [:]
        var missing: Set<PersistentIdentifier> = []
        for identifier in identifiers {
            guard let row = identifier.rowID, identityMap[identifier.entityName]?[row] == nil else { continue }
            byEntity[identifier.entityName, default: []].append(row)
            missing.insert(identifier)
        }
        for (entity, rows) in byEntity.sorted(by: { $0.key < $1.key }) {
            guard let layout = container.layout(named: entity) else { continue }
            // A batch that cannot be read (the store failed) leaves its models to `model(for:)`.
            try? materializeRows(layout: layout, query: SelectBuilder.rows(layout.table, primaryKeyIn: jsonKeyArray(rows))) { _ in }
        }
        var loaded: [T] = []
        let elements = identifiers.compactMap { identifier -> T? in
            if let row = identifier.rowID, let model = identityMap[identifier.entityName]?[row]?.model as? T {
                if missing.contains(identifier) { loaded.append(model) }
                return model
            }
            return model(for: identifier) as? T
        }
        return (elements, loaded)
    }

    /// Lets the context forget models a batch read that have no unsaved changes (see
    /// ``releaseUnchanged(_:entity:)``).
    private func releaseUnchanged<T: PersistentModel>(_ models: [T]) {
        let use = ExclusiveUse(self)
        defer { use.end() }
        releaseUnchanged(models, entity: nil)
    }
}

/// A model a batched read let go, held weakly: it lives as long as the app keeps it.
final class ReleasedModel {
    weak var model: (any PersistentModel)?

    init(_ model: any PersistentModel) {
        self.model = model
    }
}
