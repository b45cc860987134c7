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
public final class DefaultSerialModelExecutor: SerialModelExecutor, @unchecked Sendable {
    // @unchecked Sendable: `modelContext` is not Sendable, and is only used by jobs this
    // executor runs, one after another on its serial queue: that is, from inside the isolation
    // of the actor it executes. `queue` is itself thread-safe.

    /// The actor's context.
    public let modelContext: ModelContext
    private let queue: DispatchQueue

    /// An executor for `modelContext`.
    public init(modelContext: ModelContext) {
        self.modelContext = modelContext
        queue = DispatchQueue(label: "OpenSwiftData.DefaultSerialModelExecutor")
    }

    /// Runs `job` on the executor's queue.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// This executor, unowned.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
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
        modelContext.registeredModel(for: id) ?? (try? modelContext.fetch(FetchDescriptor<T>(predicate: #Predicate { $0.persistentModelID == id })).first)
    }
}
