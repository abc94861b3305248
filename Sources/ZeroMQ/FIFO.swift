/// A first-in-first-out queue with O(1) amortised append and removal at the
/// front (an array and a moving head), so the module needs no collections
/// package. Popped slots are cleared at once so queued payloads are released.
struct FIFO<Element> {
    private var storage: [Element?] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head].take()
        head += 1
        compactIfNeeded()
        return element
    }

    /// Removes and returns up to `limit` elements from the front, in order.
    mutating func popFirst(upTo limit: Int) -> [Element] {
        var result: [Element] = []
        result.reserveCapacity(Swift.min(limit, count))
        while result.count < limit, let element = popFirst() { result.append(element) }
        return result
    }

    /// Removes the first element that matches, wherever it is (O(n)); used
    /// for cancellation, which is rare.
    mutating func removeFirst(where matches: (Element) -> Bool) -> Element? {
        guard let index = storage[head...].firstIndex(where: { $0.map(matches) ?? false }) else {
            return nil
        }
        let element = storage.remove(at: index)
        return element
    }

    mutating func removeAll() -> [Element] {
        let elements = storage[head...].compactMap { $0 }
        storage.removeAll()
        head = 0
        return elements
    }

    private mutating func compactIfNeeded() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}

extension FIFO: Sendable where Element: Sendable {}
