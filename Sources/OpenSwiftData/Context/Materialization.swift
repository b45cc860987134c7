#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A per-thread flag that is set while the context turns a fetched row into a model.
///
/// Swift runs a model's property default values through their init accessors in every designated
/// initializer, `init(backingData:)` included, and evaluates `_$backingData`'s default too. While
/// the flag is set, that default is an inert placeholder, so a fetched row costs no throwaway
/// storage; the row's real storage replaces it before the initializer returns.
@usableFromInline
enum Materialization {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether this thread is materialising a fetched row right now.
    @usableFromInline
    static var isInProgress: Bool { pthread_getspecific(key) != nil }

    /// Runs `body` with the flag set on this thread.
    static func run<T>(_ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, previous) }
        return try body()
    }
}
