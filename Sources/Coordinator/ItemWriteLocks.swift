/// Writes serialised per item: the keys (qualified unique identifiers) that
/// writes in flight hold, and the writes waiting for them, in arrival order.
///
/// Every write of items goes through the one active coordinator, so holding
/// an item's key from the moment its write is admitted until it is answered
/// (stored by every live replica, or refused) keeps two writes of one item
/// from overlapping. A read-modify-write (the REST API's partial update)
/// holds its keys across its read and its write, so that the read sees every
/// write of those items acknowledged before it and none is applied between
/// the read and the write.
///
/// A write takes all its keys at once (``acquire(_:owner:waiter:)``) and
/// waits for nothing once it holds them. A waiter is granted in arrival
/// order among those wanting one of its keys: a key's writes are applied in
/// the order they arrived, and none waits for ever behind later ones. An
/// owner that holds keys already (a read-modify-write, whose own publishes
/// acquire again) passes the waiters: they may be waiting for its keys, so
/// making it wait behind them would never end. It still waits for keys that
/// another owner holds; those are plain writes, which end without waiting.
///
/// A value type kept by the coordinator's actor; `Waiter` is what resumes a
/// waiting write. A new coordinator starts with an empty table: the writes
/// in flight at its predecessor were not acknowledged, and their producers
/// resend them.
struct ItemWriteLocks<Waiter> {
    /// The owner holding each key.
    private(set) var holders: [String: String] = [:]
    /// The keys each owner holds.
    private var held: [String: Set<String>] = [:]
    private struct Waiting {
        var owner: String
        var keys: Set<String>
        var waiter: Waiter
    }
    private var queue: [Waiting] = []

    var isEmpty: Bool { holders.isEmpty && queue.isEmpty }
    var waitingCount: Int { queue.count }
    func holds(_ owner: String) -> Bool { held[owner] != nil }

    /// Grants `keys` to `owner` and returns true, or queues `waiter` (to be
    /// returned by the ``release(_:)`` that grants them) and returns false.
    /// An owner with no keys is granted at once and holds nothing.
    mutating func acquire(_ keys: Set<String>, owner: String, waiter: Waiter) -> Bool {
        guard !keys.isEmpty else { return true }
        if grantable(keys, owner: owner, before: queue.count) {
            grant(keys, to: owner)
            return true
        }
        queue.append(Waiting(owner: owner, keys: keys, waiter: waiter))
        return false
    }

    /// Releases every key `owner` holds; returns the waiters now granted, in
    /// arrival order (each then holds its keys).
    mutating func release(_ owner: String) -> [Waiter] {
        guard let keys = held.removeValue(forKey: owner) else { return [] }
        for k in keys where holders[k] == owner { holders.removeValue(forKey: k) }
        var granted: [Waiter] = []
        var i = 0
        while i < queue.count {
            let w = queue[i]
            if grantable(w.keys, owner: w.owner, before: i) {
                queue.remove(at: i)
                grant(w.keys, to: w.owner)
                granted.append(w.waiter)
            } else {
                i += 1
            }
        }
        return granted
    }

    /// Every key free or `owner`'s own, and (unless `owner` holds keys
    /// already) none wanted by one of the first `before` waiters: they came first.
    private func grantable(_ keys: Set<String>, owner: String, before: Int) -> Bool {
        let holding = held[owner] != nil
        for k in keys {
            if let h = holders[k] {
                if h != owner { return false }
                continue
            }
            if holding { continue }
            for w in queue.prefix(before) where w.keys.contains(k) { return false }
        }
        return true
    }

    private mutating func grant(_ keys: Set<String>, to owner: String) {
        for k in keys { holders[k] = owner }
        held[owner, default: []].formUnion(keys)
    }
}
