import QueryPlan
import SQLite

/// What a query's words are to each term of a shard's ``ForwardIndex``,
/// decided once per query and term: kept per connection, so that a query
/// allocates nothing for it (an array as long as the index's terms, whose
/// entries the last query set go back to the index's base masks when the
/// next begins).
final class ForwardTokenCache {
    /// Per term: bit 31 once decided; bits 0-14 the words it matches, bits
    /// 15-29 the words it is (the whole-value test), bit 30 when the
    /// whole-value test skips it. One 4-byte load a token: the array is
    /// read at random, and its entries and a stamp beside each were two
    /// cache misses where this is one.
    var masks: [UInt32] = []
    /// The terms set since the query began (by its lookups, or decided when met).
    var decided: [UInt32] = []
    var rows: [Int] = []
    /// The index the array is sized for.
    weak var index: ForwardIndex?

    static let known: UInt32 = 1 << 31
    static let skipsWhole: UInt32 = 1 << 30
    static let equalsShift: UInt32 = 15
    static let matchBits: UInt32 = 0x7FFF
    /// The bits that hold words: a query of more words keeps the text scan.
    static let maxWords = 15

    /// Starts a query: the masks go back to ``ForwardIndex/baseMasks``, and
    /// the ASCII terms the query's words match or are get their bits from
    /// lookups in ``ForwardIndex/asciiVocabulary``, by
    /// ``SearchWordMatcher/matchesASCII(_:rows:)``'s and
    /// ``SearchWordMatcher/equalsASCII(_:)``'s rules: equal bytes, a prefix
    /// of the last word (when it is one), or within the word's typos (a
    /// randomized test holds the lookups to those functions, term by term).
    ///
    /// Why: deciding each distinct term a query's candidates hold, as they
    /// are met, would be a fifth of a two-word search (thousands of terms,
    /// each through the letter-mask test and often the edit distance), where the lookups cost what the word index's own typo
    /// forms do. Folded terms (from text that is not ASCII) are still
    /// decided when met.
    ///
    /// The lookups wait for the query's first text match (``lookUp(_:)``): a
    /// one-word search rarely needs one, and the last word's prefix range
    /// alone can be thousands of terms.
    func begin(_ forward: ForwardIndex, _ matcher: SearchWordMatcher) {
        if index !== forward || masks.count != forward.termCount {
            index = forward
            masks = Array(forward.baseMasks)
        } else {
            for t in decided { masks[Int(t)] = forward.baseMasks[Int(t)] }
        }
        decided.removeAll(keepingCapacity: true)
        pending = matcher
    }

    /// The matcher whose lookups ``lookUp(_:)`` has still to make.
    private var pending: SearchWordMatcher?
    /// Typo forms found per word and typos in ``index``'s vocabulary: a
    /// person typing sends the words before the one being typed again with
    /// every letter (as ``SearchCache/typoForms`` keeps the word index's).
    private var typoTerms: [String: [Int]] = [:]
    private weak var typoTermsIndex: ForwardIndex?

    /// Sets the bits of the ASCII terms the query's words match (see
    /// ``begin(_:_:)``), once per query. With `store`, a word's typo forms
    /// are taken from its lookup in the word index's vocabulary, which the
    /// search made already (see ``typoTerms(_:maxTypos:in:store:)``).
    @inline(__always)
    func lookUp(_ store: ShardStore? = nil) {
        guard let matcher = pending, let forward = index else { return }
        pending = nil
        let vocabulary = forward.asciiVocabulary
        func set(_ i: Int, _ bits: UInt32) {
            let t = Int(forward.asciiTerms[i])
            masks[t] |= bits
            decided.append(UInt32(t))
        }
        for (w, word) in matcher.words.enumerated() {
            let matches: UInt32 = 1 << UInt32(w), equals: UInt32 = 1 << (Self.equalsShift + UInt32(w))
            let range = vocabulary.range(prefix: matcher.original[w])
            if let first = range.first, vocabulary.length(first) == word.count { set(first, matches | equals) }
            if matcher.prefixLast, w == matcher.words.count - 1 {
                for i in range { set(i, matches) }
            }
            if w < matcher.alternatives.count {
                for a in matcher.alternatives[w] {
                    let r = vocabulary.range(prefix: a.word)
                    if let first = r.first, vocabulary.length(first) == a.word.utf8.count { set(first, a.exact ? matches | equals : matches) }
                }
            }
            let k = matcher.allowed[w]
            if k > 0 {
                for i in typoTerms(matcher.original[w], maxTypos: k, in: forward, store: store) { set(i, matches) }
            }
        }
    }
}

extension ForwardTokenCache {
    /// The terms of `forward`'s ASCII vocabulary within `k` typos of `word`.
    ///
    /// With `store`, when `forward` is aligned with the word index: the terms
    /// of the word index's vocabulary within `k` of `word`
    /// (``ShardStore/typoForms(_:maxTypos:in:)`` in ``ForwardIndex/wordTerms``,
    /// asked only when this memo misses). The ASCII terms are then those forms that
    /// the forward index holds too, mapped by ``ForwardIndex/asciiOfWordTerm``,
    /// and the few the word index lacks, found in ``ForwardIndex/extraTerms``:
    /// being within `k` is a property of each term alone, so the two lookups
    /// together find exactly what one in the whole ASCII vocabulary would.
    ///
    /// Why: looking every word up in both vocabularies makes two walks
    /// nearly alike, together a third of a two-word search.
    func typoTerms(_ word: String, maxTypos k: Int, in forward: ForwardIndex, store: ShardStore? = nil) -> [Int] {
        if typoTermsIndex !== forward {
            typoTermsIndex = forward
            typoTerms = [:]
        }
        let key = "\(k) \(word)"
        if let known = typoTerms[key] { return known }
        let found: [Int]
        if let store, let wordTerms = forward.wordTerms {
            let wordForms = store.typoForms(word, maxTypos: k, in: wordTerms)
            var ids: [Int] = []
            ids.reserveCapacity(wordForms.count)
            for form in wordForms where forward.asciiOfWordTerm[form.term] >= 0 { ids.append(Int(forward.asciiOfWordTerm[form.term])) }
            for extra in forward.extraTerms.fuzzy(word, maxTypos: k) { ids.append(Int(forward.extraAscii[extra.term])) }
            found = ids
        } else {
            found = forward.asciiVocabulary.fuzzy(word, maxTypos: k).map(\.term)
        }
        if typoTerms.count >= SearchCache.maxTypoForms { typoTerms = [:] }
        typoTerms[key] = found
        return found
    }
}

extension SearchRun {
    /// What ``textMatch(_:)`` keeps between items.
    final class TextScratch {
        var lowered: [UInt8] = []
        var rows: [Int] = []
        /// ``ProximityTracker``'s state, two integers a word, reused from
        /// item to item.
        private var proximityState = UnsafeMutableBufferPointer<Int>(start: nil, count: 0)

        func proximityBuffer(words: Int) -> UnsafeMutableBufferPointer<Int> {
            if proximityState.count < 2 * words {
                proximityState.deallocate()
                proximityState = .allocate(capacity: 2 * words)
            }
            return proximityState
        }

        deinit { proximityState.deallocate() }
    }

    /// How the query's words occur in one item's searchable text: nil when
    /// some word is in none of its searchable attributes (the definition of a
    /// match, which the word index only approximates); otherwise the
    /// proximity, the best attribute a word matched in, and the best
    /// attribute whose whole value is the query.
    ///
    /// From the shard's ``ForwardIndex`` while it is current, else by
    /// reading and scanning the item's text: the same numbers either way.
    func textMatch(_ id: Int64) throws -> (proximity: Int, attribute: Int, exactAttribute: Int)? {
        if let forward { return indexedTextMatch(id, forward) }
        return try scannedTextMatch(id)
    }

    /// ``textMatch(_:)`` from the item's text rows.
    func scannedTextMatch(_ id: Int64) throws -> (proximity: Int, attribute: Int, exactAttribute: Int)? {
        // One range read of the item's text rows, scanned in place (no String
        // per value unless it is not ASCII), with buffers kept across items.
        let s = try store.db.prepare("SELECT name, coalesce(text, key) FROM attrs WHERE item = ? AND kind IN (0, 5)")
        try s.bind(id, at: 0)
        defer { try? s.reset() }
        let scratch = self.scratch
        var tracker = ProximityTracker(words: plan.words.count, scratch.proximityBuffer(words: plan.words.count))
        var valueIndex = 0
        var attribute = noRank, exact = SearchRank.noExactAttribute
        while try s.step() {
            guard let rank = rankOf[s.int64(at: 0)] else { continue }
            let v = valueIndex
            valueIndex += 1
            var any = false, atStart = false
            // A phrase is reported where it ends, at its first position as
            // well as its last: its words' matches are put in the order of
            // their positions first, as the tracker takes them.
            let phrases = !matcher.phrases.isEmpty
            var met: [(position: Int, word: Int)] = []
            let record = { (w: Int, position: Int) in
                if phrases { met.append((position, w)) } else { tracker.met(w, value: v, position: position) }
                any = true
                if position == 0 { atStart = true }
            }
            var whole = s.withUTF8(at: 1) { matcher.scanASCII($0, lowered: &scratch.lowered, rows: &scratch.rows, record) } ?? nil
            if whole == nil { whole = matcher.scan(s.string(at: 1) ?? "", record) }
            if phrases {
                met.sort { ($0.position, $0.word) < ($1.position, $1.word) }
                for m in met { tracker.met(m.word, value: v, position: m.position) }
            }
            if any {
                attribute = min(attribute, attributes.attribute(rank, atStart: atStart))
                if whole == true { exact = min(exact, rank) }
            }
        }
        return tracker.proximity.map { ($0, attribute, exact) }
    }

    /// ``textMatch(_:)`` from the forward index: the item's values' token
    /// ids, each term's words decided once per query (``ForwardTokenCache``)
    /// by the matcher's own comparison for the kind of text it came from.
    func indexedTextMatch(_ id: Int64, _ forward: ForwardIndex) -> (proximity: Int, attribute: Int, exactAttribute: Int)? {
        let scratch = self.scratch
        let cache = store.searchCache.forwardTokens
        cache.lookUp(store)
        let words = plan.words.count
        var tracker = ProximityTracker(words: words, scratch.proximityBuffer(words: words))
        var attribute = noRank, exact = SearchRank.noExactAttribute
        var valueIndex = 0
        let rankByName = self.rankByName  // (read once: the property retains its array at every read)
        // Buffers, not arrays, in the loop over tokens: no bounds or
        // exclusivity checks on the cache's arrays at every token.
        forward.tokens.withUnsafeBufferPointer { tokens in
            cache.masks.withUnsafeMutableBufferPointer { masks in
                for v in forward.values(of: id) {
                    let name = Int(forward.valueName[v])
                    guard name < rankByName.count, rankByName[name] >= 0 else { continue }
                    let rank = rankByName[name]
                    let value = valueIndex
                    valueIndex += 1
                    var any = false, atStart = false
                    var whole = true
                    var wholeTokens = 0
                    var position = -1
                    var k = Int(forward.valueStart[v])
                    let end = Int(forward.valueStart[v + 1])
                    while k < end {
                        // Most tokens' terms match no word and are none (their
                        // mask is ``ForwardTokenCache/known`` alone): they only
                        // move the position and, unless camel-case parts, end the
                        // whole-value test (which never starts again). A loop of
                        // its own takes them with nothing kept off registers;
                        // the whole loop was a third of a two-word search.
                        var plain: UInt32 = 0
                        while k < end {
                            let entry = tokens[k]
                            if masks[Int(entry >> 1)] != ForwardTokenCache.known { break }
                            plain |= ~entry & 1
                            position &+= Int(~entry & 1)
                            k &+= 1
                        }
                        if plain != 0 { whole = false }
                        if k == end { break }
                        let entry = tokens[k]
                        k &+= 1
                        let term = Int(entry >> 1)
                        let isPart = entry & 1 != 0
                        if !isPart { position += 1 }
                        var mask = masks[term]
                        if mask == 0 {
                            mask = termMask(term, forward, cache) | ForwardTokenCache.known
                            masks[term] = mask
                            cache.decided.append(UInt32(term))
                        }
                        if !isPart, whole, mask & ForwardTokenCache.skipsWhole == 0 {
                            whole = wholeTokens < words && mask & (1 << (ForwardTokenCache.equalsShift + UInt32(wholeTokens))) != 0
                            wholeTokens += 1
                        }
                        var matches = mask & ForwardTokenCache.matchBits
                        if matches != 0 {
                            any = true
                            if position == 0 { atStart = true }
                            while matches != 0 {
                                tracker.met(matches.trailingZeroBitCount, value: value, position: position)
                                matches &= matches - 1
                            }
                        }
                    }
                    if any {
                        attribute = min(attribute, attributes.attribute(rank, atStart: atStart))
                        if whole, wholeTokens == words { exact = min(exact, rank) }
                    }
                }
            }
        }
        return tracker.proximity.map { ($0, attribute, exact) }
    }

    /// A folded term's masks for this query (see ``ForwardTokenCache/masks``;
    /// ASCII terms are decided when the query begins).
    func termMask(_ term: Int, _ forward: ForwardIndex, _ cache: ForwardTokenCache) -> UInt32 {
        // Cut from text that is not ASCII: ``SearchWordMatcher/scan(_:_:)``'s
        // rule, and its whole-value test skips tokens that fold to nothing
        // (as ``SearchTokens/queryWords(_:)`` drops them; no text found
        // yet has one, Foundation's folding keeps lone combining marks).
        let folded = forward.withTerm(term) { String(decoding: $0, as: UTF8.self) }
        return UInt32(matcher.matchesFolded(folded, rows: &cache.rows)) | UInt32(matcher.equalsFolded(folded)) << ForwardTokenCache.equalsShift
            | (folded.isEmpty ? ForwardTokenCache.skipsWhole : 0)
    }
}

/// The proximity of a query's words in one item, worked out as the scan
/// meets them: per pair of consecutive words, the least distance between
/// them in one value (at least 1, a token matching both counts 1), at most
/// 8; the sum over the pairs, nil when some word is met nowhere.
///
/// Why a running minimum and not every position kept: the positions come
/// in order, so the closest occurrence of word `w - 1` or `w + 1` before
/// one of `w` is the last met, and the least distance of two sets of
/// positions is between neighbours in that order. Keeping each word's
/// positions in arrays, then comparing every pair, would be a sixth of a
/// two-word search; this keeps two
/// integers per word, in buffers reused from item to item.
struct ProximityTracker {
    let words: Int
    /// Per word `w`, `state[w]`: the last (value << 32 | position) it was met
    /// at, -1 before; per pair (`w`, `w + 1`), `state[words + w]`: the least
    /// distance found.
    private let state: UnsafeMutablePointer<Int>
    /// The distinct words met.
    private var metWords = 0

    static let farthest = 8

    /// Starts an item on `buffer` (at least two integers a word; the
    /// tracker only borrows it).
    init(words: Int, _ buffer: UnsafeMutableBufferPointer<Int>) {
        self.words = words
        state = buffer.baseAddress!
        for w in 0..<words {
            state[w] = -1
            state[words + w] = Self.farthest
        }
    }

    /// Word `w` is met at `position` of value `value` (values and, within
    /// one, positions in the order of the text).
    @inline(__always)
    mutating func met(_ w: Int, value: Int, position: Int) {
        if state[w] < 0 { metWords += 1 }
        let here = value << 32 | position
        if w > 0 { closer(pair: w - 1, here, state[w - 1]) }
        if w + 1 < words { closer(pair: w, here, state[w + 1]) }
        state[w] = here
    }

    @inline(__always)
    private func closer(pair: Int, _ here: Int, _ other: Int) {
        guard other >> 32 == here >> 32 else { return }
        let distance = max(1, abs((here & 0xFFFF_FFFF) - (other & 0xFFFF_FFFF)))
        if distance < state[words + pair] { state[words + pair] = distance }
    }

    /// The item's proximity: nil when some word was met nowhere.
    var proximity: Int? {
        guard metWords == words else { return nil }
        var sum = 0
        for pair in 0..<max(0, words - 1) { sum += state[words + pair] }
        return sum
    }
}
