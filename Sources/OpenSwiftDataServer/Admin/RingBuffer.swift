/// The latest elements appended, at most `capacity` of them: appending to a full buffer drops
/// the oldest.
struct RingBuffer<Element: Sendable>: Sendable {
    /// The most elements kept.
    let capacity: Int
    private var storage: [Element] = []
    private var next = 0

    /// Makes an empty buffer of `capacity` elements (at least one).
    init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage.reserveCapacity(self.capacity)
    }

    /// Appends an element, dropping the oldest when the buffer is full.
    mutating func append(_ element: Element) {
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[next] = element
        }
        next = (next + 1) % capacity
    }

    /// The elements, the newest first.
    var newestFirst: [Element] {
        guard storage.count == capacity else { return storage.reversed() }
        return (storage[next...] + storage[..<next]).reversed()
    }
}
