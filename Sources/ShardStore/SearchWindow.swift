import Foundation
import QueryPlan
import SQLite

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
    static func windowOrder(
        _ candidates: [Int], last: Int?, ranks: [SearchRank], uids: [String],
        window: Int, plan: SearchPlan
    ) -> [Int] {
        func full(_ a: Int, _ b: Int) -> Bool { SearchRanking.precedes(ranks[a], uids[a], ranks[b], uids[b], plan: plan) }
        guard let last else { return Array(candidates.sorted(by: full).prefix(window)) }
        var better: [Int] = [], tied: [Int] = []
        for k in candidates {
            if SearchRanking.precedes(ranks[k], "", ranks[last], "", plan: plan) { better.append(k) } else { tied.append(k) }
        }
        better.sort(by: full)
        return better + smallest(tied, window - better.count) { uids[$0] < uids[$1] }
    }

    /// The criteria the plan's order starts with that pick a window's
    /// candidates before proximity is known: typos, then (one word) the
    /// attribute and exactness, as far as they lead the order. Words
    /// (every match has all) and proximity (0 for one word) are passed
    /// over; with several words, only typos (the rest needs the text).
    static func selectionCriteria(_ plan: SearchPlan) -> [RankCriterion] {
        var out: [RankCriterion] = []
        // Attribute and exactness come from the text with several words or
        // a phrase alternative: only typos are known before it is read.
        let fromText = plan.words.count > 1 || plan.hasPhraseAlternatives
        for c in plan.effectiveRanking {
            switch c {
            case .words: continue
            case .proximity where plan.words.count == 1: continue
            case .typo: out.append(c)
            case .attribute, .exact:
                guard !fromText else { return out }
                out.append(c)
            default: return out
            }
            if fromText { return out }
        }
        return out
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

    /// The `k`-th least of `keys` (1 ≤ `k` ≤ `keys.count`), by
    /// ``smallest(_:_:by:)``'s max-heap of the least `k` met: most keys are
    /// past its top and cost one comparison. Why: sorting every match's key
    /// would be a sixth of a common word's search, for a window of 20.
    static func least(_ keys: [Int], _ k: Int) -> Int {
        smallest(keys, k, by: <)[k - 1]
    }

    /// Each item's place in the identifiers' order, nil when one has none
    /// (it came after the order was read: the identifiers are read then).
    static func places(_ ids: [Int64], in order: ItemOrder) -> [UInt32]? {
        var places: [UInt32] = []
        places.reserveCapacity(ids.count)
        for id in ids {
            guard let p = order.place(of: id) else { return nil }
            places.append(p)
        }
        return places
    }

    /// With no query words and no point, every match ranks alike but for
    /// its custom values: those with none tie on everything, and only the
    /// first `window` of them by identifier can make the window. Returns
    /// `chosen` (indexes of `matched`) without the others, unless no
    /// identifier order is at hand.
    ///
    /// Why: the empty query (an InstantSearch page's first request) matches
    /// every item, and ranking each one would be most of its time.
    func withoutTiesPastTheWindow(_ chosen: [Int], matched: [Int64]) throws -> [Int] {
        let ids = chosen.map { matched[$0] }
        guard let order = try tieOrder(candidates: ids.count), let places = Self.places(ids, in: order) else { return chosen }
        var holders = Set<Int64>()
        for values in try customValues(ids: ids).held { holders.formUnion(values.keys) }
        var kept: [Int] = [], others: [Int] = []
        for (i, id) in ids.enumerated() {
            if holders.contains(id) { kept.append(i) } else { others.append(i) }
        }
        kept += Self.smallest(others, plan.window) { places[$0] < places[$1] }
        return kept.sorted().map { chosen[$0] }
    }

    /// The identifiers' order that breaks ties (see ``ItemOrder``): the
    /// posting index's while it is current; otherwise the connection's own,
    /// read when `candidates` are many (reading them all is what reading
    /// their identifiers would cost) and kept while the data is unchanged.
    /// Nil: read the identifiers of the candidates that tie.
    func tieOrder(candidates: Int) throws -> ItemOrder? {
        if let index = postingSearch?.index { return index.uidOrder }
        let cache = store.searchCache
        let version = store.dataSeen
        if let (held, order) = cache.itemOrder, held == version { return order }
        guard candidates >= SearchCache.itemOrderMinCandidates else { return nil }
        let order = try ItemOrder(db: store.db)
        cache.itemOrder = (version, order)
        return order
    }
}
