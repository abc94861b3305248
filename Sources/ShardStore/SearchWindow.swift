import QueryPlan

extension SearchRun {
    /// The indexes of `ranks` that no `window` others rank strictly before
    /// (ignoring identifiers): the best `window` in any order, with every
    /// rank tied with the last of them. A bounded heap of the best `window`
    /// seen finds that last rank in about one comparison per candidate.
    static func notBehindWindow(_ ranks: [SearchRank], window: Int, plan: SearchPlan) -> [Int] {
        guard ranks.count > window, window > 0 else { return Array(ranks.indices) }
        func before(_ a: Int, _ b: Int) -> Bool { SearchRanking.precedes(ranks[a], "", ranks[b], "", plan: plan) }
        // A max-heap: the worst of the best `window` seen on top.
        var heap: [Int] = []
        heap.reserveCapacity(window)
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var worst = i
                if l < heap.count, before(heap[worst], heap[l]) { worst = l }
                if r < heap.count, before(heap[worst], heap[r]) { worst = r }
                if worst == i { return }
                heap.swapAt(i, worst)
                i = worst
            }
        }
        for k in ranks.indices {
            if heap.count < window {
                heap.append(k)
                var i = heap.count - 1
                while i > 0, before(heap[(i - 1) / 2], heap[i]) {
                    heap.swapAt(i, (i - 1) / 2)
                    i = (i - 1) / 2
                }
            } else if before(k, heap[0]) {
                heap[0] = k
                siftDown(0)
            }
        }
        let last = heap[0]
        return ranks.indices.filter { !before(last, $0) }
    }
}
