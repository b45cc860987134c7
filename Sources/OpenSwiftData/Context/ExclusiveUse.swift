import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The thread using a context right now, so that a context smuggled to another thread (through
/// `@unchecked Sendable`, say) stops with a clear message instead of corrupting its state.
///
/// Swift 6 rejects most such uses at compile time: contexts and models are not `Sendable`.
/// What it cannot see is checked here at every operation that reads or changes the context's
/// state: one atomic compare-and-exchange to enter, one store to leave. Calls nest on one
/// thread (a save that fetches, an `enumerate` block that inserts).
final class ContextUser {
    private let thread = Atomic<UInt>(0)
    /// Nesting depth; only touched by the thread recorded in `thread`.
    private var depth = 0

    static var currentThread: UInt {
        #if canImport(Glibc)
        UInt(pthread_self())
        #else
        UInt(bitPattern: pthread_self())
        #endif
    }

    @inline(__always)
    func enter() {
        let me = Self.currentThread
        let (exchanged, holder) = thread.compareExchange(expected: 0, desired: me, ordering: .acquiring)
        guard exchanged || holder == me else {
            preconditionFailure(
                "OpenSwiftData: a ModelContext was used from two threads at once. Contexts and models are not Sendable: give each actor its own context (for example with @ModelActor) and pass PersistentIdentifiers between them."
            )
        }
        depth += 1
    }

    @inline(__always)
    func leave() {
        depth -= 1
        if depth == 0 { thread.store(0, ordering: .releasing) }
    }
}

/// One use of a context, from `init` to `end()`.
struct ExclusiveUse {
    private let user: ContextUser

    @inline(__always)
    init(_ context: ModelContext) {
        user = context.user
        user.enter()
    }

    @inline(__always)
    func end() { user.leave() }
}
