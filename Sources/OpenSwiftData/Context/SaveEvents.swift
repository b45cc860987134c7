import Foundation

/// What one committed save changed, as the container announces it.
public struct SaveEvent: Sendable, Hashable {
    /// The entities with inserted, updated or deleted rows.
    public let entities: Set<String>
    /// The models the save inserted.
    public let inserted: [PersistentIdentifier]
    /// The models the save updated (including upserts).
    public let updated: [PersistentIdentifier]
    /// The models the save deleted.
    public let deleted: [PersistentIdentifier]
    /// The author of the context that saved (``ModelContext/author``).
    public var author: String? = nil
    /// The history transaction the save recorded, as a token (nil when it recorded none).
    public var historyToken: DefaultHistoryToken? = nil
}

/// The container's subscribers to save events.
final class SaveBroadcaster: @unchecked Sendable {
    // @unchecked Sendable: `subscribers` is only touched while holding `lock`; continuations
    // are themselves Sendable.
    private let lock = NSLock()
    private var subscribers: [UUID: AsyncStream<SaveEvent>.Continuation] = [:]

    /// A new stream of the events of every later save.
    func subscribe() -> AsyncStream<SaveEvent> {
        let (stream, continuation) = AsyncStream<SaveEvent>.makeStream(bufferingPolicy: .unbounded)
        let key = UUID()
        lock.withLock { subscribers[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Sends an event to every subscriber.
    func publish(_ event: SaveEvent) {
        let continuations = lock.withLock { Array(subscribers.values) }
        for continuation in continuations { continuation.yield(event) }
    }
}

extension ModelContainer {
    /// The saves of every context of this container from now on, as they commit: the same
    /// changes `ModelContext.didSave` reports, as an `AsyncSequence`.
    public func saveEvents() -> AsyncStream<SaveEvent> {
        broadcaster.subscribe()
    }
}

extension ModelContext {
    /// The results of `descriptor` now and after every committed save that can change them.
    ///
    /// The first value comes at once; then a new value after each save (by any context of the
    /// container) that touches the descriptor's entity or an entity it relates to, when the
    /// result changed: other models, another order, or changed values of a model in it (equal
    /// consecutive results are not repeated). Saves of unrelated entities do not re-run the
    /// query. Iterate it where this context is used; the models belong to this context. To
    /// observe one model, use a predicate on its identifier:
    ///
    /// ```swift
    /// for try await trips in context.liveResults(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate)])) {
    ///     print(trips.map(\.name))
    /// }
    /// ```
    public func liveResults<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) -> LiveResults<T> {
        LiveResults(context: self, descriptor: descriptor)
    }
}

/// The results of a fetch descriptor over time; see ``ModelContext/liveResults(_:)``.
public struct LiveResults<T: PersistentModel>: AsyncSequence {
    /// One result array.
    public typealias Element = [T]

    let context: ModelContext
    let descriptor: FetchDescriptor<T>

    /// Starts listening to saves now.
    public func makeAsyncIterator() -> Iterator {
        Iterator(context: context, descriptor: descriptor, events: context.container.saveEvents().makeAsyncIterator())
    }

    /// Fetches again after each relevant save.
    public struct Iterator: AsyncIteratorProtocol {
        let context: ModelContext
        let descriptor: FetchDescriptor<T>
        var events: AsyncStream<SaveEvent>.Iterator
        var last: [PersistentIdentifier]?
        var watched: Set<String>?

        init(context: ModelContext, descriptor: FetchDescriptor<T>, events: AsyncStream<SaveEvent>.Iterator) {
            self.context = context
            self.descriptor = descriptor
            self.events = events
        }

        /// The next result, fetched in the isolation of the caller (where the context is used):
        /// at once the first time, then after a save that changed it; nil when the iterating task
        /// is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [T]? {
            if watched == nil { watched = try relatedEntities() }
            guard last != nil else { return try fetch() }
            while let event = await events.next(isolation: actor) {
                guard !event.entities.isDisjoint(with: watched ?? []) else { continue }
                let previous = last ?? []
                let results = try context.fetch(descriptor)
                let identifiers = results.map(\.persistentModelID)
                let touched = !Set(event.updated).isDisjoint(with: identifiers)
                last = identifiers
                if identifiers != previous || touched { return results }
            }
            return nil
        }

        /// The next result (see ``next(isolation:)``), for callers without an actor.
        public mutating func next() async throws -> [T]? {
            try await next(isolation: nil)
        }

        private mutating func fetch() throws -> [T] {
            let results = try context.fetch(descriptor)
            last = results.map(\.persistentModelID)
            return results
        }

        /// The descriptor's entity and the entities its relationships reach (a predicate or sort
        /// may read through them).
        private func relatedEntities() throws -> Set<String> {
            let layout = try context.container.requireLayout(for: T.self)
            var names: Set<String> = [layout.name]
            for property in layout.relationships {
                if let destination = property.relationship?.destinationName { names.insert(destination) }
            }
            return names
        }
    }
}

extension ModelContext {
    /// One model over time: its current state now, then again after every committed save that
    /// changes it, and nil once it is deleted.
    ///
    /// ```swift
    /// for try await trip in context.liveModel(for: tripID, as: Trip.self) {
    ///     print(trip?.name ?? "deleted")
    /// }
    /// ```
    public func liveModel<T: PersistentModel>(for identifier: PersistentIdentifier, as type: T.Type = T.self) -> LiveModel<T> {
        LiveModel(results: liveResults(FetchDescriptor<T>(predicate: #Predicate { $0.persistentModelID == identifier })))
    }
}

/// One model over time; see ``ModelContext/liveModel(for:as:)``.
public struct LiveModel<T: PersistentModel>: AsyncSequence {
    /// The model, or nil once it is deleted (or when it does not exist).
    public typealias Element = T?

    let results: LiveResults<T>

    /// Starts listening to saves now.
    public func makeAsyncIterator() -> Iterator {
        Iterator(results: results.makeAsyncIterator())
    }

    /// Yields the model after each save that changes it.
    public struct Iterator: AsyncIteratorProtocol {
        var results: LiveResults<T>.Iterator
        var finished = false

        /// The model now, then after each save that changes or deletes it (see
        /// ``LiveResults/Iterator/next(isolation:)``); the sequence ends after the deletion.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> T?? {
            guard !finished, let models = try await results.next(isolation: actor) else { return nil }
            if models.isEmpty { finished = true }
            return .some(models.first)
        }

        /// The next state (see ``next(isolation:)``), for callers without an actor.
        public mutating func next() async throws -> T?? {
            try await next(isolation: nil)
        }
    }
}
