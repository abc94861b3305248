import QueryPlan

extension SearchRun {
    /// The indexes of `ranks` that no `window` others rank strictly before
    /// (ignoring identifiers): the best `window` in any order, with every
    /// rank tied with the last of them, found with ``smallest(_:_:by:)``
    /// (a bounded heap: about one comparison per candidate).
    /// Also returns the last of the window (nil when every rank is in it).
    static func notBehindWindow(_ ranks: [SearchRank], window: Int, plan: SearchPlan) -> (indices: [Int], last: Int?) {
        guard ranks.count > window, window > 0 else { return (Array(ranks.indices), nil) }
        func before(_ a: Int, _ b: Int) -> Bool { SearchRanking.precedes(ranks[a], "", ranks[b], "", plan: plan) }
        let best = smallest(Array(ranks.indices), window, by: before)
        let last = best[best.count - 1]
        return (ranks.indices.filter { !before(last, $0) }, last)
    }

    /// The first `window` of `candidates` (from ``notBehindWindow(_:window:plan:)``,
    /// with its `last`) in the full order, identifiers breaking ties. Those
    /// ranked strictly before `last` (fewer than `window`) are sorted in
    /// full; the others tie with it on every criterion, so only their
    /// identifiers order them, and only the few that complete the window are
    /// picked (a page 10 can leave thousands tied: sorting them all with
    /// every criterion compared was a third of its time).
    static func windowOrder(_ candidates: [Int], last: Int?, ranks: [SearchRank], uids: [String],
                            window: Int, plan: SearchPlan) -> [Int] {
        func full(_ a: Int, _ b: Int) -> Bool { SearchRanking.precedes(ranks[a], uids[a], ranks[b], uids[b], plan: plan) }
        guard let last else { return Array(candidates.sorted(by: full).prefix(window)) }
        var better: [Int] = [], tied: [Int] = []
        for k in candidates {
            if SearchRanking.precedes(ranks[k], "", ranks[last], "", plan: plan) { better.append(k) } else { tied.append(k) }
        }
        better.sort(by: full)
        return better + smallest(tied, window - better.count) { uids[$0] < uids[$1] }
    }

    /// The `k` least of `items` by `less`, in order.
    static func smallest(_ items: [Int], _ k: Int, by less: (Int, Int) -> Bool) -> [Int] {
        guard k > 0 else { return [] }
        if items.count <= 4 * k { return Array(items.sorted(by: less).prefix(k)) }
        // A max-heap of the least `k` seen.
        var heap = Array(items.prefix(k))
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var top = i
                if l < heap.count, less(heap[top], heap[l]) { top = l }
                if r < heap.count, less(heap[top], heap[r]) { top = r }
                if top == i { return }
                heap.swapAt(i, top)
                i = top
            }
        }
        for i in stride(from: k / 2 - 1, through: 0, by: -1) { siftDown(i) }
        for x in items.dropFirst(k) where less(x, heap[0]) {
            heap[0] = x
            siftDown(0)
        }
        return heap.sorted(by: less)
    }
}
