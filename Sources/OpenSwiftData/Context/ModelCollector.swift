/// The models a fetch collects as it reads rows, each held once (+1), then moved into the typed
/// result array without a retain or release per model.
///
/// Materialisation touches every model while it is still in the cache; a second pass that
/// retains or releases each model (copying it from one array into another) would fetch every
/// one of them from memory again.
final class ModelCollector {
    private var base: UnsafeMutablePointer<AnyObject>
    private var capacity: Int
    private(set) var count = 0

    init() {
        capacity = 64
        base = .allocate(capacity: capacity)
    }

    /// Adds a model.
    func append(_ model: AnyObject) {
        if count == capacity {
            let grown = UnsafeMutablePointer<AnyObject>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        (base + count).initialize(to: model)
        count += 1
    }

    /// The models as `T`s, moved out (the collector is empty afterwards). Every model must be a
    /// `T`: the caller only appends models of that class.
    func take<T: AnyObject>(as type: T.Type) -> [T] {
        let total = count
        guard total > 0 else { return [] }
        let source = base
        count = 0
        return [T](unsafeUninitializedCapacity: total) { buffer, initialized in
            guard let destination = buffer.baseAddress else { return }
            for index in 0..<total {
                (destination + index).initialize(to: unsafeDowncast((source + index).move(), to: T.self))
            }
            initialized = total
        }
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }
}
