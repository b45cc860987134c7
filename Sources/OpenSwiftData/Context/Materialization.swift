#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A per-thread mark that is set while the context turns a fetched row of one model type into a
/// model.
///
/// Swift runs a model's property default values through their init accessors in every designated
/// initializer, `init(backingData:)` included, and evaluates `_$backingData`'s default too. While
/// the mark names a model type, that type's init accessors skip their writes and keep the inert
/// placeholder, so a fetched row costs no throwaway storage; the row's real storage replaces it
/// before the initializer returns.
///
/// The mark names the type, not just "a fetch is running": a property default may construct a
/// model of another type (`var settings = Settings()`), whose own initializer runs in full and
/// may read what it has just set. That model is a throwaway too (the skipped init accessor drops
/// it), but it must work while it lives.
@usableFromInline
enum Materialization {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The mark of a model type: its metadata address, which is never null.
    private static func mark(_ type: ObjectIdentifier) -> UnsafeMutableRawPointer? {
        UnsafeMutableRawPointer(bitPattern: Int(bitPattern: type))
    }

    /// Whether this thread is materialising a fetched row of the model type `type` right now.
    @usableFromInline
    static func isInProgress(for type: ObjectIdentifier) -> Bool {
        pthread_getspecific(key) == mark(type)
    }

    /// Runs `body` with this thread marked as materialising rows of `type`.
    static func run<T>(for type: any PersistentModel.Type, _ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, mark(ObjectIdentifier(type)))
        defer { pthread_setspecific(key, previous) }
        return try body()
    }
}
