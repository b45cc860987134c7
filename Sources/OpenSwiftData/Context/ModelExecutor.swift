import Dispatch
import Foundation

/// An object that owns a model context and runs the code that uses it; a ``ModelActor`` runs
/// on one.
public protocol ModelExecutor: AnyObject, Sendable {
    /// The context the executor's code uses.
    var modelContext: ModelContext { get }
}

/// A model executor that runs one job at a time, so it can be an actor's executor.
public protocol SerialModelExecutor: ModelExecutor, SerialExecutor {}

/// The executor `@ModelActor` gives an actor: a private serial queue and a context of its own.
///
/// An executor made for a container's ``ModelContainer/mainContext`` runs its jobs on the main
/// actor instead, as SwiftData's does: the main context is the main actor's, so an actor built on
/// it (`DefaultSerialModelExecutor(modelContext: container.mainContext)`) shares the main
/// actor's executor and never uses the context at the same time as the main actor's code (its
/// autosave, say).
public final class DefaultSerialModelExecutor: SerialModelExecutor, @unchecked Sendable {
    // @unchecked Sendable: `modelContext` is not Sendable, and is only used by jobs this
    // executor runs, one after another: on its serial queue, or, for the main context, on the
    // main actor, which owns that context. That is, from inside the isolation of the actor it
    // executes. `queue` is itself thread-safe, and `runsOnMainActor` is immutable.

    /// The actor's context.
    public let modelContext: ModelContext
    private let queue: DispatchQueue
    /// Whether the context is its container's main context, whose jobs run on the main actor.
    private let runsOnMainActor: Bool

    /// An executor for `modelContext`.
    public init(modelContext: ModelContext) {
        self.modelContext = modelContext
        queue = DispatchQueue(label: "OpenSwiftData.DefaultSerialModelExecutor")
        runsOnMainActor = modelContext.isMainContext
    }

    /// Runs `job` on the executor's queue (on the main actor for the main context).
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        if runsOnMainActor {
            // The runtime sends the actor's jobs to the main actor's executor directly (see
            // `asUnownedSerialExecutor()`); a job handed here runs on the main queue, which is
            // that executor's.
            DispatchQueue.main.async { job.runSynchronously(on: executor) }
            return
        }
        queue.async { job.runSynchronously(on: executor) }
    }

    /// This executor, unowned; for the main context, the main actor's executor.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        runsOnMainActor ? MainActor.sharedUnownedExecutor : UnownedSerialExecutor(ordinary: self)
    }
}

/// An actor that owns a model context, as `@ModelActor` declares it: its code runs on its
/// executor, so the context and the models it loads never leave the actor. Pass
/// ``PersistentIdentifier``s (which are `Sendable`) in and out, and load them with
/// ``ModelContext/model(for:)`` on the other side.
public protocol ModelActor: Actor {
    /// The executor that owns the actor's context.
    nonisolated var modelExecutor: any ModelExecutor { get }
    /// The container of the actor's context.
    nonisolated var modelContainer: ModelContainer { get }
}

extension ModelActor {
    /// The actor runs on its model executor.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        guard let serial = modelExecutor as? any SerialModelExecutor else {
            preconditionFailure("OpenSwiftData: the model executor of \(type(of: self)) is not a SerialModelExecutor, so it cannot run an actor")
        }
        return serial.asUnownedSerialExecutor()
    }

    /// The actor's context.
    public var modelContext: ModelContext { modelExecutor.modelContext }

    /// The model with an identifier, loaded in the actor's context, or nil when it does not
    /// exist or is of another type.
    public subscript<T: PersistentModel>(id: PersistentIdentifier, as type: T.Type) -> T? {
        modelContext.registeredModel(for: id)
            ?? (try? modelContext.fetch(FetchDescriptor<T>(predicate: #Predicate { $0.persistentModelID == id })).first)
    }
}
