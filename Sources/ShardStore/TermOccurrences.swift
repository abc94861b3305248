import QueryPlan

/// The ``ForwardIndex`` turned inside out: per term, the items it occurs in
/// and where (the value of the item, the position in the value), so that
/// ranking a several-word search meets only the tokens its words match,
/// instead of every token of every candidate.
///
/// Why: working proximity out token by token is a third of the
/// coordinator's CPU in a two-word search: a candidate holds ~100 tokens, of
/// which the query's words are a handful. Here a search walks each matched term's list
/// against its candidates (binary searches in lockstep through a common
/// term's, galloping through the others), then works
/// each candidate's proximity, attribute and whole-value exactness from its
/// few occurrences (see ``SearchRun/indexedTextMatches(_:_:always:)``).
///
/// Built from the forward index's arrays when it is read (one counting pass
/// and one filling pass, in item order, so each term's list is sorted by
/// item): 8 bytes a token. Items this cannot describe exactly are marked to
/// keep the token loop: those holding a folded term (a query decides those
/// only when met), more than ``maxValues`` values, an attribute name id
/// past ``maxNames`` or a position past ``maxPosition``.
struct TermOccurrences: Sendable {
    /// Term `t`'s occurrences are `start[t]..<start[t + 1]`.
    let start: Flat<UInt32>
    /// Each occurrence: its item << 32 | its place, ascending within a
    /// term (items ascending). The place is the value's index among the
    /// item's values << 23 | its attribute name id << 16 | the position
    /// (camel-case parts at their token's) << 2 | a bit for a camel-case
    /// part << 1 | a bit for the value's last token that is not one, so
    /// that places sort as the text reads, and a search needs nothing else
    /// of the item: whether a value is the whole query is in its
    /// occurrences too (reading its tokens for it would be a cache miss a
    /// value). One array, not two: a search reads the place of the item it
    /// just compared, and two arrays (and the value's name read from the
    /// forward index) would be a cache miss each, a fifth of the search's
    /// time in ``SearchRun/indexedTextMatches(_:_:always:)``.
    let entries: Flat<UInt64>
    /// Per item, a bit set when a search must take its tokens one by one
    /// instead: a bitmap (an eighth of a `Bool` per item) that stays in
    /// cache, since every candidate tests it.
    let scanOnly: Flat<UInt64>
    /// The items described (ids `0..<items`).
    let items: Int

    /// The place's fields: 14 bits of position, 7 of name id, 9 of value
    /// index. Positions up to 16,383 because the longest texts are the
    /// ones most queries match: a description of ~11,000 words (a package
    /// list) is a candidate of many searches and would otherwise keep the
    /// token loop. 512 values and 128 attribute names describe every item of
    /// the benchmark corpus (under 450 values, ~20 names).
    static let maxPosition = 1 << 14
    static let maxNames = 1 << 7
    static let maxValues = 1 << 9
    static let nameShift: UInt32 = 16
    static let valueShift: UInt32 = 23

    /// A place's value index, name id, position, and flags.
    @inline(__always) static func value(_ place: UInt32) -> Int { Int(place >> valueShift) }
    @inline(__always) static func name(_ place: UInt32) -> Int { Int(place >> nameShift) & (maxNames - 1) }
    @inline(__always) static func position(_ place: UInt32) -> Int { Int(place >> 2) & (maxPosition - 1) }
    @inline(__always) static func isPart(_ place: UInt32) -> Bool { place & 2 != 0 }
    @inline(__always) static func isLastWord(_ place: UInt32) -> Bool { place & 1 != 0 }

    var memoryBytes: Int { start.byteCount + entries.byteCount + scanOnly.byteCount }

    init() {
        start = Flat([0])
        entries = Flat()
        scanOnly = Flat()
        items = 0
    }

    init(decoding r: inout DerivedReader, terms: Int) throws(DerivedFile.Failure) {
        start = try r.flat()
        entries = try r.flat()
        scanOnly = try r.flat()
        items = try r.int()
        try r.check(
            start.count == terms + 1 && Int(start.last ?? 1) == entries.count && items >= 0 && scanOnly.count * 64 >= items,
            "term occurrences")
    }

    func encode(into w: inout DerivedWriter) {
        w.put(start)
        w.put(entries)
        w.put(scanOnly)
        w.put(items)
    }

    /// Sorts the tokens by term (a counting sort, written in place in
    /// `space`: the entries are as many as the tokens).
    init(
        itemStart: Flat<UInt32>, valueName: Flat<UInt32>, valueStart: Flat<UInt32>, tokens: Flat<UInt32>, termFolded: [Bool],
        space: BuildSpace = .heap
    ) throws(DerivedFile.Failure) {
        let terms = termFolded.count
        var start = [UInt32](repeating: 0, count: terms + 1)
        for e in tokens { start[Int(e >> 1) + 1] &+= 1 }
        for t in 0..<terms { start[t + 1] &+= start[t] }
        var fill = start
        let items = max(0, itemStart.count - 1)
        var scanOnly = [UInt64](repeating: 0, count: items / 64 + 1)
        self.entries = try space.filled(UInt64.self, count: tokens.count) { entries in
            for i in 0..<items {
                let first = Int(itemStart[i])
                for v in first..<Int(itemStart[i + 1]) {
                    let local = v - first, name = Int(valueName[v])
                    // Positions as the token loop counts them: each token that
                    // is not a camel-case part moves one on.
                    var position = -1
                    let tokenRange = Int(valueStart[v])..<Int(valueStart[v + 1])
                    let lastWord = tokenRange.reduce(-1) { $0 + Int(~tokens[$1] & 1) }
                    for k in tokenRange {
                        let e = tokens[k], t = Int(e >> 1)
                        if e & 1 == 0 { position += 1 }
                        if termFolded[t] || local >= Self.maxValues || name >= Self.maxNames || position < 0 || position >= Self.maxPosition {
                            scanOnly[i >> 6] |= 1 << UInt64(i & 63)
                        }
                        let slot = Int(fill[t])
                        fill[t] = UInt32(slot + 1)
                        let place =
                            UInt32(min(local, Self.maxValues - 1)) << Self.valueShift | UInt32(min(name, Self.maxNames - 1)) << Self.nameShift
                            | UInt32(min(max(position, 0), Self.maxPosition - 1)) << 2
                            | UInt32(e & 1) << 1 | (e & 1 == 0 && position == lastWord ? 1 : 0)
                        entries[slot] = UInt64(i) << 32 | UInt64(place)
                    }
                }
            }
        }
        self.start = Flat(start)
        self.scanOnly = Flat(scanOnly)
        self.items = items
    }

    /// Whether item `id` is described here exactly.
    @inline(__always) func describes(_ id: Int64) -> Bool {
        id >= 0 && id < Int64(items) && scanOnly[Int(id) >> 6] & (1 << UInt64(id & 63)) == 0
    }
}

extension SearchRun {
    /// ``textMatch(_:)`` of every item of `ids` (sorted, ascending) at once,
    /// from the forward index's ``TermOccurrences`` when walking the matched
    /// terms' lists costs less than the candidates' tokens, else item by
    /// item (``indexedTextMatch(_:_:)``): the same numbers either way.
    ///
    /// Per candidate, its occurrences of matched terms in place order give
    /// the ``ProximityTracker`` what the token loop gives it (the tokens
    /// that match nothing only move positions, which the places hold); the
    /// attribute is the best searched value holding a match, at its start
    /// when one is at position 0; and a value is the whole query when its
    /// tokens, parts aside, are the words in order and no more, which its
    /// occurrences tell (see ``TermOccurrences/entries``).
    ///
    /// `always`: take the occurrences whatever the cost (for tests).
    func indexedTextMatches(
        _ ids: [Int64], _ forward: ForwardIndex, always: Bool = false
    )
        -> [(proximity: Int, attribute: Int, exactAttribute: Int)?]
    {
        let cache = store.searchCache.forwardTokens
        cache.lookUp(store)
        let occurrences = forward.occurrences
        let n = ids.count
        // The matched terms (the lookups set each one's bits, some twice).
        var terms: [Int] = []
        terms.reserveCapacity(cache.decided.count)
        cache.masks.withUnsafeBufferPointer { masks in
            for t in cache.decided where masks[Int(t)] & ForwardTokenCache.matchBits != 0 { terms.append(Int(t)) }
        }
        terms.sort()
        var unique = 0
        for t in terms where unique == 0 || terms[unique - 1] != t { terms[unique] = t; unique += 1 }
        terms.removeLast(terms.count - unique)
        if !always {
            // Cost in entries read: a list stepped through, or galloped
            // through at ~log2 of its length per candidate.
            var walk = 0
            let logN = max(1, Int.bitWidth - n.leadingZeroBitCount)
            for t in terms {
                let length = Int(occurrences.start[t + 1] - occurrences.start[t])
                walk += min(length, n * max(1, Int.bitWidth - length.leadingZeroBitCount - logN + 1))
            }
            // The candidates' tokens, taken as the average item's: reading
            // each one's would cost what the estimate is meant to save.
            let scan = n * forward.tokenCount / max(1, occurrences.items)
            guard 2 * walk < scan else { return ids.map { indexedTextMatch($0, forward) } }
        }

        // Every occurrence of a matched term in a candidate: the candidate,
        // and its place << 32 | the term's index in `terms` (the order a
        // candidate's are read in).
        var hitCandidate: [UInt32] = [], hitKey: [UInt64] = []
        let candidates = ids.map { UInt32(truncatingIfNeeded: max(0, min($0, Int64(UInt32.max)))) }
        occurrences.entries.withUnsafeBufferPointer { entries in
            candidates.withUnsafeBufferPointer { candidates in
                var bases = [Int](repeating: 0, count: n)
                for (index, t) in terms.enumerated() {
                    var o = Int(occurrences.start[t])
                    let end = Int(occurrences.start[t + 1])
                    // A list over twice as long as the candidates: their
                    // entries are found by binary searches in lockstep (see
                    // ``lowerBounds``), whose loads wait on memory together,
                    // rather than by galloping, where each probe waits for the
                    // one before.
                    if end - o > 2 * n {
                        Self.lowerBounds(entries, from: o, to: end, candidates, &bases)
                        for c in 0..<n {
                            var k = bases[c]
                            let want = candidates[c]
                            while k < end, UInt32(truncatingIfNeeded: entries[k] >> 32) == want {
                                hitCandidate.append(UInt32(c))
                                hitKey.append(entries[k] << 32 | UInt64(index))
                                k += 1
                            }
                        }
                        continue
                    }
                    var c = 0
                    while o < end, c < n {
                        let entry = entries[o]
                        let x = UInt32(truncatingIfNeeded: entry >> 32), want = candidates[c]
                        if x < want {
                            o = Self.gallop(entries, from: o, to: end, atLeast: UInt64(want) << 32)
                        } else if x > want {
                            c = Self.gallop(candidates, from: c, to: n, atLeast: x)
                        } else {
                            hitCandidate.append(UInt32(c))
                            hitKey.append(entry << 32 | UInt64(index))
                            o += 1
                        }
                    }
                }
            }
        }
        // Each matched term's masks, read here once: read in the loop below,
        // the cache's array would be an access check and a likely cache miss
        // a hit. (The key keeps the term's index in `terms`.)
        let termMasks = terms.map { cache.masks[$0] }
        // Grouped by candidate (counting), then each group in place order.
        var first = [Int](repeating: 0, count: n + 1)
        for c in hitCandidate { first[Int(c) + 1] += 1 }
        for c in 0..<n { first[c + 1] += first[c] }
        var next = first
        var order = [UInt64](repeating: 0, count: hitCandidate.count)
        for h in 0..<hitCandidate.count {
            let c = Int(hitCandidate[h])
            order[next[c]] = hitKey[h]
            next[c] += 1
        }

        let words = plan.words.count
        let scratch = self.scratch
        // Locals, not the run's properties: each read of those in the loop
        // retained and released its array.
        let rankByName = self.rankByName, noRank = self.noRank
        var answers: [(proximity: Int, attribute: Int, exactAttribute: Int)?] = []
        answers.reserveCapacity(n)
        for (c, id) in ids.enumerated() {
            guard occurrences.describes(id) else {
                answers.append(indexedTextMatch(id, forward))
                continue
            }
            let group = first[c]..<first[c + 1]
            // Insertion sort: a candidate holds a handful of occurrences.
            if group.count > 1 {
                for i in (group.lowerBound + 1)..<group.upperBound {
                    let x = order[i]
                    var j = i
                    while j > group.lowerBound, order[j - 1] > x { order[j] = order[j - 1]; j -= 1 }
                    order[j] = x
                }
            }
            var tracker = ProximityTracker(words: words, scratch.proximityBuffer(words: words))
            var attribute = noRank, exact = SearchRank.noExactAttribute
            var h = group.lowerBound
            while h < group.upperBound {
                let place = UInt32(truncatingIfNeeded: order[h] >> 32)
                let local = TermOccurrences.value(place), name = TermOccurrences.name(place)
                let rank = name < rankByName.count ? rankByName[name] : -1
                var atStart = false
                // The value is the whole query when its tokens at positions
                // 0..<words (parts aside) are each the word of that place,
                // and the last of them is its last.
                var wholeWords: UInt32 = 0, endsWithLastWord = false
                while h < group.upperBound, TermOccurrences.value(UInt32(truncatingIfNeeded: order[h] >> 32)) == local {
                    let here = UInt32(truncatingIfNeeded: order[h] >> 32)
                    let position = TermOccurrences.position(here)
                    let mask = termMasks[Int(order[h] & 0xFFFF_FFFF)]
                    var matches = mask & ForwardTokenCache.matchBits
                    h += 1
                    guard rank >= 0 else { continue }
                    if position == 0 { atStart = true }
                    if position < words, !TermOccurrences.isPart(here), mask & (1 << (ForwardTokenCache.equalsShift + UInt32(position))) != 0 {
                        wholeWords |= 1 << UInt32(position)
                        if position == words - 1, TermOccurrences.isLastWord(here) { endsWithLastWord = true }
                    }
                    while matches != 0 {
                        tracker.met(matches.trailingZeroBitCount, value: local, position: position)
                        matches &= matches - 1
                    }
                }
                guard rank >= 0 else { continue }
                attribute = min(attribute, attributes.attribute(rank, atStart: atStart))
                if wholeWords == (1 << UInt32(words)) - 1, endsWithLastWord { exact = min(exact, rank) }
            }
            answers.append(tracker.proximity.map { ($0, attribute, exact) })
        }
        return answers
    }

    /// Per candidate, the first index in `from..<to` of `entries` whose item
    /// is not below it: binary searches over the whole range, every
    /// candidate a step at a time, without branches, so that their loads
    /// are independent and wait on memory together.
    static func lowerBounds(
        _ entries: UnsafeBufferPointer<UInt64>, from: Int, to end: Int,
        _ candidates: UnsafeBufferPointer<UInt32>, _ bases: inout [Int]
    ) {
        let n = candidates.count
        bases.withUnsafeMutableBufferPointer { bases in
            for c in 0..<n { bases[c] = from }
            var size = end - from
            while size > 1 {
                let half = size >> 1
                for c in 0..<n {
                    let b = bases[c]
                    bases[c] = entries[b + half] < UInt64(candidates[c]) << 32 ? b + half : b
                }
                size -= half
            }
            for c in 0..<n where entries[bases[c]] < UInt64(candidates[c]) << 32 { bases[c] += 1 }
        }
    }

    /// The first index in `from..<to` of `list` (ascending) not below `x`.
    @inline(__always)
    static func gallop<T: FixedWidthInteger>(_ list: UnsafeBufferPointer<T>, from: Int, to end: Int, atLeast x: T) -> Int {
        var lo = from, hi = from, step = 1
        while hi < end, list[hi] < x {
            lo = hi + 1
            hi = lo + step
            step &<<= 1
        }
        hi = min(hi, end)
        while lo < hi {
            let mid = (lo + hi) >> 1
            if list[mid] < x { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
