import Foundation
import Items
import QueryPlan
import SQLite

/// One hit of a parameter search on a shard.
package struct SearchHit: Sendable, Hashable {
    package var uniqueIdentifier: String
    /// The item (`null` when ``rawItem`` holds it).
    package var item: JSONValue
    package var rank: SearchRank
    /// For a search run with `rawItems`: the item as JSON text in
    /// ``JSONWriter``'s form (only the fetched attributes), copied out of the
    /// stored row, and ``item`` is `null`. Why: the coordinator's local
    /// worker hands its hits to the response writer, which only writes them
    /// out again; reading each into a tree and walking the tree would cost
    /// about a tenth of a two-word search.
    package var rawItem: [UInt8]?
    package init(uniqueIdentifier: String, item: JSONValue, rank: SearchRank, rawItem: [UInt8]? = nil) {
        self.uniqueIdentifier = uniqueIdentifier
        self.item = item
        self.rank = rank
        self.rawItem = rawItem
    }
}

/// What one shard answers to a ``SearchPlan``.
package struct ShardSearchResult: Sendable, Hashable {
    /// The shard's best hits, best first, at most the plan's window.
    package var hits: [SearchHit]
    /// Every match of the shard, exactly.
    package var nbHits: Int
    /// Per facet, every value's count over the matching set.
    package var facets: [String: [String: Int]]
    package var facetStats: [String: FacetStats]
    /// False when a facet had more distinct values than a shard sends
    /// (``ShardStore/maxFacetValues``): its counts then omit the rarest.
    package var exhaustiveFacetsCount: Bool
    package init(
        hits: [SearchHit] = [], nbHits: Int = 0, facets: [String: [String: Int]] = [:],
        facetStats: [String: FacetStats] = [:], exhaustiveFacetsCount: Bool = true
    ) {
        self.hits = hits
        self.nbHits = nbHits
        self.facets = facets
        self.facetStats = facetStats
        self.exhaustiveFacetsCount = exhaustiveFacetsCount
    }
}

extension ShardStore {
    /// The longest a typo vocabulary is kept once the shard has changed.
    static let vocabularyMaxAge = Duration.seconds(2)
    /// Distinct values of one facet a shard sends at most, most frequent first.
    package static let maxFacetValues = 10_000
    /// Terms a shard's word index must hold for a search to start reading
    /// its ``PostingIndex`` when there is none (suggestions always do): on
    /// smaller shards FTS5's lookups are cheap, and an index would take one
    /// of the process's ``PostingIndexes/maxFiles`` slots from a shard that
    /// needs it.
    static let searchIndexMinTerms = 5_000
    /// Misspelt forms of one query word searched for at most (the most common).
    static let maxTypoTerms = 64

    /// Evaluates a parameter search: every query word must match a token of a
    /// searchable attribute (the last also as a prefix, and words long enough
    /// with typos), the filters must hold, and the matches are ranked by
    /// ``SearchRanking``. Returns the best ``SearchPlan/window`` hits, the
    /// exact number of matches and the facet counts over all of them.
    ///
    /// How it stays fast: the word index gives, for each query word, the items
    /// holding it exactly, as a prefix or misspelt (the typo forms come from
    /// the shard's ``Vocabulary``), so typos, the attribute matched and
    /// exactness are set operations over posting lists, never a read of an
    /// item. Only proximity needs the text: it is worked out for the items in
    /// the best typo buckets that fill the window, and no others. While the
    /// process holds the shard's ``PostingIndex`` of the current data, those
    /// lists, and the one-word attribute criterion, come from memory with no
    /// FTS5 query (see ``PostingSearch``), and proximity from the index's
    /// ``ForwardIndex`` (the items' tokens as ids, cut once by the matcher's
    /// own tokenizer) instead of reading and scanning each candidate's text;
    /// otherwise, and inside a caller's transaction, from FTS5 and the text,
    /// with the same answers.
    ///
    /// The rest is built so that the work grows with the page, not with the
    /// matches:
    /// - Typo forms come from one walk that serves both vocabularies (the
    ///   forward index's ASCII terms are aligned with the posting index's,
    ///   ``ForwardTokenCache/typoTerms(_:maxTypos:in:store:)``), two typos by
    ///   cutting the word in three (``Vocabulary/fuzzyTwo(_:)``) rather than
    ///   walking the whole trie. Misspelt and prefix forms are about three
    ///   quarters of a two-word search's time, so this is where it pays.
    /// - The word lookups are bit sets (``IDBits``: levels ORed, words ANDed,
    ///   typos one bit test per level), not lists merged and intersected.
    /// - Proximity, attribute and whole-value exactness come from the
    ///   matched terms' occurrences in the candidates (``TermOccurrences``,
    ///   ``SearchRun/indexedTextMatches(_:_:always:)``) when walking those
    ///   lists reads fewer entries than the candidates' tokens, and
    ///   proximity is a running minimum per pair of words
    ///   (``ProximityTracker``).
    /// - Common words tie thousands of matches on every criterion: ties are
    ///   ordered by ``ItemOrder``'s places, the window's last key comes from
    ///   a bounded heap (``SearchRun/least(_:_:)``), and only the page's
    ///   identifiers are read.
    /// - The empty query (every item; an InstantSearch page's first request)
    ///   takes the ids kept per connection (``universe(_:)``) and ranks only
    ///   the matches with custom values beside the window's first by place
    ///   (``SearchRun/withoutTiesPastTheWindow(_:matched:)``).
    package func search(_ plan: SearchPlan, rawItems: Bool = false, isCancelled: @escaping () -> Bool = { false }) throws -> ShardSearchResult {
        db.setProgressHandler(every: 4000) { isCancelled() }
        defer { db.setProgressHandler(nil) }
        rawResults = rawItems
        defer { rawResults = false }
        let outside = db.isAutocommit
        do {
            return try db.transaction(.deferred) {
                try reloadIfChanged()
                let context = QueryContext(isCancelled: isCancelled, wantsScores: false)
                var index: PostingIndex?
                if searchCache.searchesUsePostingIndex, !plan.words.isEmpty {
                    index = try currentPostingIndex(outside: outside) { try vocabulary().count >= Self.searchIndexMinTerms }
                    if index != nil { searchCache.postingSearches += 1 }
                }
                return try SearchRun(store: self, plan: plan, context: context, index: index).run()
            }
        } catch {
            throw StoreError.wrap(error, "search failed")
        }
    }

    /// The shard's vocabulary, rebuilt when the data changed and the one held
    /// is older than ``vocabularyMaxAge`` (read-only connections share it,
    /// see ``SharedVocabularies``).
    func vocabulary() throws -> Vocabulary {
        let cache = searchCache
        if let v = cache.vocabulary,
            cache.vocabularyVersion == dataVersion || cache.vocabularyBuilt.duration(to: .now) < Self.vocabularyMaxAge
        {
            return v
        }
        let read = try readVocabulary()
        cache.vocabulary = read.vocabulary
        cache.typoForms = [:]
        cache.vocabularyVersion = read.isCurrent ? dataVersion : -2
        cache.vocabularyBuilt = read.built
        return read.vocabulary
    }

    /// `vocabulary.fuzzy`, remembered while `vocabulary` is the one asked
    /// (the shard's, or its ``PostingIndex``'s terms while it is current).
    func typoForms(_ word: String, maxTypos k: Int, in vocabulary: Vocabulary) -> [(term: Int, typos: Int)] {
        if searchCache.typoFormsVocabulary !== vocabulary {
            searchCache.typoForms = [:]
            searchCache.typoFormsVocabulary = vocabulary
        }
        let key = "\(k) \(word)"
        if let known = searchCache.typoForms[key] { return known }
        let found = vocabulary.fuzzy(word, maxTypos: k)
        if searchCache.typoForms.count >= SearchCache.maxTypoForms { searchCache.typoForms = [:] }
        searchCache.typoForms[key] = found
        return found
    }

}

/// One evaluation of a search plan on one shard.
///
/// A class, not a struct: the closures its methods pass around (marking
/// matches, the window's comparisons) would otherwise capture copies of the
/// whole run, a dozen counted references retained and released per copy.
final class SearchRun {
    let store: ShardStore
    let plan: SearchPlan
    let context: QueryContext

    /// The searchable attributes' ids, and each one's rank.
    var searchable: [Int64] { attributes.searchable }
    var rankOf: [Int64: Int] { attributes.rankOf }
    /// Word-index columns to search, with the best rank of the attributes each holds.
    var columns: [(column: Int, rank: Int)] { attributes.columns }
    /// The attribute criterion of a match in no attribute (past the worst).
    var noRank: Int { attributes.noRank }
    /// Whether a searched column also holds attributes this search must not
    /// match in, so matches have to be confirmed on the text.
    var mustVerify: Bool { attributes.mustVerify }
    /// ``rankOf`` by name id, -1 for names not searched (for the forward index's loop).
    var rankByName: [Int] { attributes.rankByName }
    /// Whether the searched columns hold every column of the shard's attribute names.
    var coversEveryColumn: Bool { attributes.coversEveryColumn }
    let attributes: SearchAttributes
    let matcher: SearchWordMatcher
    /// The word lookups from memory, when the shard's ``PostingIndex`` is current.
    let postingSearch: PostingSearch?
    /// The hits' rows from memory, when the shard's ``PostingIndex`` is current.
    let rows: ItemRows?
    /// Buffers ``textMatch(_:)`` reuses from one item to the next.
    let scratch = TextScratch()
    /// The shard's ``ForwardIndex``, when it is current and ranking takes
    /// proximity from it (see ``textMatch(_:)``).
    let forward: ForwardIndex?

    init(store: ShardStore, plan: SearchPlan, context: QueryContext, index: PostingIndex? = nil) throws {
        self.store = store
        self.plan = plan
        self.context = context
        postingSearch = index.map(PostingSearch.init)
        rows = store.searchCache.searchesUseItemRows ? index?.rows : nil
        matcher = SearchWordMatcher(words: plan.words, prefixLast: plan.prefixLast, policy: plan.typos, alternatives: plan.alternatives)
        // A phrase alternative needs the tokens in order, which the forward
        // index's per-term masks do not follow: such a plan ranks by the scan.
        if store.searchCache.searchesUseForwardIndex, let f = index?.forward, plan.words.count <= ForwardTokenCache.maxWords,
            matcher.phrases.isEmpty
        {
            forward = f
            store.searchCache.forwardTokens.begin(f, matcher)
            store.searchCache.forwardSearches += 1
        } else {
            forward = nil
        }
        let ids: [Int64]
        if plan.searchableAttributes.isEmpty {
            // The names `*` covers, as every other query language resolves them.
            if case .exists(.allText(let all)) = try store.compile(.exists(.allText)) { ids = all } else { ids = [] }
        } else {
            ids = try SearchableAttribute.parse(plan.searchableAttributes).compactMap { try store.searchableNameID($0.name) }
        }
        let key = SearchAttributes.Key(order: plan.searchableAttributes, ids: ids, names: store.names.count, data: store.dataSeen)
        if let held = store.searchCache.attributes, held.key == key {
            attributes = held
        } else {
            attributes = try SearchAttributes(key, names: store.names, holdsText: store.holdsText)
            store.searchCache.attributes = attributes
        }
    }

    func run() throws -> ShardSearchResult {
        // Filters first: usually exact index lookups, each condition read
        // once for this filter and the disjunctive facets' (``SearchFilters``).
        // A keyed search's filter is its app's scope and the rest: the scope
        // narrows the rest's candidates by its bits, and when it is the whole
        // filter, the words' bits are narrowed by it a word at a time.
        let filters = SearchFilters(store: store, context: context)
        let parts = try filters.parts(plan.filter)
        let scope = parts.scope
        let filtered = parts.ids
        let expired = try store.expiredIDs(now: Date())

        var postings: [WordPostings] = []
        var textBits: IDBits?
        for (i, word) in plan.words.enumerated() {
            let p = try wordPostings(word, isLast: i == plan.words.count - 1, alternatives: plan.alternatives(of: i))
            postings.append(p)
            textBits = textBits.map { $0.intersection(p.all) } ?? p.all
            if textBits?.isEmpty == true { break }
        }
        var textIDsRead: [Int64]?
        func textIDs() -> [Int64]? {
            if textIDsRead == nil { textIDsRead = textBits?.ids }
            return textIDsRead
        }
        func restrict(_ filter: [Int64]?) throws -> [Int64] {
            var ids: [Int64]
            switch (textIDs(), filter) {
            case (let t?, let f?): ids = IDs.intersect(t, f)
            case (let t?, nil): ids = t
            case (nil, let f?): ids = f
            case (nil, nil): ids = try store.universe(context)
            }
            return try withinRadius(IDs.subtract(ids, expired))
        }
        var matched: [Int64]
        var scopeIsWholeFilter = false
        if scope != nil, parts.restIsAll { scopeIsWholeFilter = true }
        if let scope, scopeIsWholeFilter, let textBits {
            matched = try withinRadius(IDs.subtract(textBits.intersection(scope.bits).ids, expired))
        } else {
            matched = try restrict(filtered)
        }
        if mustVerify, !plan.words.isEmpty {
            matched = try matched.filter { try textMatch($0) != nil }
        }

        // Semantic search: every item passing the filters that has a vector
        // matches too, ranked by its score (see ``SemanticScores``).
        let semantic = try semanticScores(filtered: filtered, expired: expired)
        var result: ShardSearchResult
        if let semantic, semantic.counts {
            result = ShardSearchResult(nbHits: IDs.union(matched, semantic.ids).count)
            try countFacets(
                matched: IDs.union(matched, semantic.ids), filters: filters, restrict: restrict,
                alsoMatching: { try self.withinRadius(IDs.subtract(IDs.intersect(semantic.all, $0 ?? semantic.all), expired)) },
                into: &result)
        } else {
            result = ShardSearchResult(nbHits: matched.count)
            try countFacets(matched: matched, filters: filters, restrict: restrict, into: &result)
            if let d = plan.distinct { result.facets[DistinctPlan.groupsFacet] = try distinctGroups(matched, d) }
        }
        guard plan.window > 0 else { return result }
        var lexicalIDs: [Int64] = []
        if !matched.isEmpty, (plan.semantic?.ratio ?? 0) < 1 {
            lexicalIDs = try rankLexically(matched: matched, postings: postings, into: &result)
        }
        if let semantic { try addSemanticHits(semantic, lexicalIDs: lexicalIDs, to: &result) }
        return result
    }

    /// Per match (`matched`, each held by some form of the word), the typos
    /// of the word's best form it holds added to `typos`, and 1 to
    /// `exactWords` where it holds the word itself. Through buffers: as
    /// arrays, every `+=` checked its array's uniqueness (a call) and every
    /// test went through a set's array (two-word searches hold ~500 matches).
    static func addTypos(
        of p: WordPostings, _ matched: [Int64],
        _ typos: UnsafeMutableBufferPointer<Int>, _ exactWords: UnsafeMutableBufferPointer<Int>
    ) {
        p.byTypos[0].withWords { zero in
            p.byTypos[1].withWords { one in
                p.byTypos[2].withWords { two in
                    p.exact.withWords { exact in
                        for (k, id) in matched.enumerated() {
                            typos[k] += zero.contains(id) ? 0 : one.contains(id) ? 1 : two.contains(id) ? 2 : 0
                            if exact.contains(id) { exactWords[k] += 1 }
                        }
                    }
                }
            }
        }
    }

    /// The best ``SearchPlan/window`` matches by the lexical criteria, added
    /// to `result` best first; returns their item ids in the same order.
    func rankLexically(matched: [Int64], postings: [WordPostings], into result: inout ShardSearchResult) throws -> [Int64] {
        // Without words, the window's candidates can come from the shard's
        // custom order; only they are ranked then (see ``CustomOrder``).
        if let window = try orderedWindow(matched) {
            return try rankLexically(ranking: window.map { matched[$0] }, postings: postings, into: &result)
        }
        return try rankLexically(ranking: matched, postings: postings, into: &result)
    }

    func rankLexically(ranking matched: [Int64], postings: [WordPostings], into result: inout ShardSearchResult) throws -> [Int64] {
        // Typos, attribute and exactness of every match, from posting lists.
        let n = matched.count
        var typos = [Int](repeating: 0, count: n)
        var exactWords = [Int](repeating: 0, count: n)
        typos.withUnsafeMutableBufferPointer { typos in
            exactWords.withUnsafeMutableBufferPointer { exactWords in
                for p in postings { Self.addTypos(of: p, matched, typos, exactWords) }
            }
        }
        var attribute = [Int](repeating: noRank, count: n)
        var exactAttribute = [Int](repeating: SearchRank.noExactAttribute, count: n)
        // With a phrase alternative, the attribute and exactness come from
        // the text, as with several words (a phrase is not one posting).
        let fromText = plan.words.count > 1 || !matcher.phrases.isEmpty
        if !fromText, let p = postings.first {
            // One word: the attribute and exactness of every match decide which
            // items make the window, so they come from posting lists (with
            // several words they come from the text, read anyway for
            // proximity). An item's attribute is the best one its best form of
            // the word (exact or prefix, else the fewest typos) occurs in; and
            // only the typo levels that fill the window are looked at, since
            // typos rank first.
            var perLevel = [Int](repeating: 0, count: 4)
            for t in typos { perLevel[min(t, 3)] += 1 }
            var needed = 0, filled = 0
            while needed < 3, filled < plan.window { filled += perLevel[needed]; needed += 1 }
            // Only when typos decide first and the attribute next (and
            // every hit of the window counts, so not with distinct) do the
            // levels and groups past the window not matter.
            let lead = Self.selectionCriteria(plan)
            let cutShort = plan.distinct == nil && lead.starts(with: [.typo, .attribute])
            if !cutShort { needed = 3 }
            // Per rank group, the items whose word starts the attribute (FTS5's
            // `^`, the first token of the column) and the others; an item takes
            // the first group it is found in.
            let groups = Dictionary(grouping: columns, by: \.rank).sorted { $0.key < $1.key }
            var before = 0  // matches at better typo levels
            for level in 0..<needed where perLevel[level] > 0 {
                defer { before += perLevel[level] }
                let forms = p.formsByTypos[level]
                guard !forms.isEmpty || p.termsByTypos[level]?.isEmpty == false else { continue }
                if let terms = p.termsByTypos[level] {
                    // From the index: each match's columns and starts, and
                    // in one pass its attribute, the first group (best
                    // first) it is in at the start, else anywhere, else the
                    // last group's (the word is in some searched column).
                    let masks = postingSearch!.masks(of: matched, terms)
                    let table = groups.map { rank, cols in
                        let mask = PostingSearch.mask(cols.map(\.column))
                        return (
                            start: mask << 16, any: mask, atStart: attributes.attribute(rank, atStart: true),
                            elsewhere: attributes.attribute(rank, atStart: false)
                        )
                    }
                    guard let last = table.last else { continue }
                    for k in 0..<n where typos[k] == level {
                        let m = masks[k]
                        var value = last.elsewhere
                        for g in table {
                            if m & g.start != 0 { value = g.atStart; break }
                            if m & g.any != 0 { value = g.elsewhere; break }
                        }
                        attribute[k] = value
                    }
                    continue
                }
                // From FTS5, a query per group and kind: groups go best
                // first, so once the window is full the rest of this
                // level's matches rank below it whatever their attribute:
                // they keep the worst value and are not looked up.
                var assigned = [Bool](repeating: false, count: n)
                var count = 0
                func assign(_ ids: [Int64], _ value: Int) {
                    mark(matched, ids) { k in
                        if typos[k] == level, !assigned[k] { assigned[k] = true; attribute[k] = value; count += 1 }
                    }
                }
                groups: for (g, (rank, cols)) in groups.enumerated() {
                    let filter = "{" + cols.map { "c\($0.column)" }.joined(separator: " ") + "} : "
                    // In an unordered group a match away from the start ranks
                    // as one at the start: the window can be full only once both are in.
                    let startRanksBetter = attributes.attribute(rank, atStart: true) != attributes.attribute(rank, atStart: false)
                    assign(
                        try ftsIDs(filter + "(" + forms.map { "^" + $0 }.joined(separator: " OR ") + ")"),
                        attributes.attribute(rank, atStart: true))
                    if cutShort, startRanksBetter, before + count >= plan.window { break groups }
                    if g == groups.count - 1 {
                        // A match found in no better column is in one of the last group's.
                        for k in 0..<n where typos[k] == level && !assigned[k] { attribute[k] = attributes.attribute(rank, atStart: false) }
                    } else {
                        assign(try ftsIDs(filter + "(" + forms.joined(separator: " OR ") + ")"), attributes.attribute(rank, atStart: false))
                        if cutShort, before + count >= plan.window { break groups }
                    }
                }
            }
            for (rank, ids) in try wholeValueMatches() {
                mark(matched, ids) { exactAttribute[$0] = min(exactAttribute[$0], rank) }
            }
        }

        // The buckets that fill the window: by typos when proximity must still
        // be worked out (several words), by every cheap criterion otherwise.
        // One integer per item orders by the cheap criteria (each is small).
        // The key packs the criteria the plan's order starts with, of
        // those known here (``selectionCriteria(_:)``); with none (a ranking
        // led by a sort or distance) or with distinct, every match goes on.
        let lead = Self.selectionCriteria(plan)
        let keys: [Int] = (0..<n).map { k in
            var key = 0
            for c in lead {
                switch c {
                case .typo: key = key << 8 | min(typos[k], 255)
                case .attribute: key = key << 16 | min(attribute[k], 65535)
                case .exact: key = key << 26 | min(exactAttribute[k], 65535) << 10 | (1023 - min(exactWords[k], 1023))
                default: break
                }
            }
            return key
        }
        // The buckets wanted are every item whose key is at most the window's
        // last key, the `window`-th least (``SearchRun/least(_:_:)``); the
        // order they are taken in does not matter, since the full comparison
        // sorts them below.
        let last = lead.isEmpty || plan.distinct != nil ? Int.max : Self.least(keys, min(plan.window, n))
        var chosen = (0..<n).filter { keys[$0] <= last }
        if let window = try customWindow(
            chosen, matched: matched, typos: typos, attribute: attribute, exactAttribute: exactAttribute, exactWords: exactWords)
        {
            chosen = window
        } else if plan.words.isEmpty, plan.around == nil, plan.distinct == nil, chosen.count > 4 * plan.window {
            chosen = try withoutTiesPastTheWindow(chosen, matched: matched)
        }
        let ids = chosen.map { matched[$0] }

        var ranks: [SearchRank] = chosen.map { k in
            SearchRank(
                words: plan.words.count, typos: typos[k], proximity: 0, attribute: attribute[k],
                exactAttribute: exactAttribute[k], exactWords: exactWords[k])
        }
        if fromText {
            // From the forward index all at once (see
            // ``indexedTextMatches(_:_:always:)``), else item by item.
            let found =
                try forward.map { indexedTextMatches(ids, $0) }
                ?? ids.map { id in
                    try context.checkCancelled()
                    return try textMatch(id)
                }
            for (i, m) in found.enumerated() {
                if let m {
                    ranks[i].proximity = m.proximity
                    ranks[i].attribute = m.attribute
                    ranks[i].exactAttribute = m.exactAttribute
                } else {
                    ranks[i].proximity = 8 * (plan.words.count - 1)
                }
            }
        }
        try addCustomRanking(ids: ids, to: &ranks)
        try addDistances(ids: ids, to: &ranks)
        // The window's hits without sorting every candidate (a page 10 can
        // leave thousands tied on the cheap criteria): the window's last
        // rank is found by ranks alone, and only the candidates not behind
        // it — the window, and whatever ties with its last — have their
        // identifier read and are ordered (see ``windowOrder``).
        let positions: [Int]
        if let d = plan.distinct {
            positions = try distinctWindow(ids: ids, ranks: &ranks, d)
        } else if let order = try tieOrder(candidates: ids.count), let places = Self.places(ids, in: order) {
            // Places in the identifiers' order stand for them: the window
            // comes out of one bounded heap in the full order, and only its
            // own identifiers are read. (`ranks` as a constant: the closure
            // then reads it without an access check or a copy per rank.)
            let ranks = ranks
            let rankKey = SearchRankKey(plan: plan)
            if !plan.words.isEmpty, !rankKey.packed.isEmpty, let keys = Self.primaryKeys(ranks, rankKey) {
                // One integer per candidate for the criteria that decide
                // most comparisons (see ``SearchRankKey``).
                // (Ranks read through a buffer: an array's element passed
                // on is copied, its custom values retained and released.)
                let tail = rankKey.restMatters(ranks)
                if !tail, ids.count <= 4 * plan.window {
                    // The key and the place order the candidates wholly:
                    // sorted as pairs of integers, with no closure called
                    // per comparison (a two-word search's few dozen
                    // candidates, ~1% of its cycle through a cluster).
                    var pairs = ids.indices.map { (key: keys[$0], place: places[$0], index: $0) }
                    pairs.sort { ($0.key, $0.place) < ($1.key, $1.place) }
                    positions = pairs.prefix(plan.window).map(\.index)
                } else {
                    positions = ranks.withUnsafeBufferPointer { ranks in
                        Self.smallest(Array(ids.indices), plan.window) { a, b in
                            if keys[a] != keys[b] { return keys[a] < keys[b] }
                            if tail {
                                let c = rankKey.compareRest(ranks[a], ranks[b], plan: plan)
                                if c != 0 { return c < 0 }
                            }
                            return places[a] < places[b]
                        }
                    }
                }
            } else {
                positions = ranks.withUnsafeBufferPointer { ranks in
                    Self.smallest(Array(ids.indices), plan.window) { a, b in
                        let c = SearchRanking.compare(ranks[a], ranks[b], plan: plan)
                        return c != 0 ? c < 0 : places[a] < places[b]
                    }
                }
            }
            // (Their identifiers are read with their items, below.)
        } else {
            let (window, windowLast) = Self.notBehindWindow(ranks, window: plan.window, plan: plan)
            // (Only here: with the places, no identifier is read for the order.)
            var uids = [String](repeating: "", count: ids.count)
            let uid = try store.db.prepare("SELECT uid FROM items WHERE id = ?")
            for k in window {
                try uid.bind(ids[k], at: 0)
                uids[k] = try uid.step() ? uid.string(at: 0) ?? "" : ""
                try uid.reset()
            }
            positions = Self.windowOrder(window, last: windowLast, ranks: ranks, uids: uids, window: plan.window, plan: plan)
        }
        let fetch = plan.fetchAttributes.map(FetchList.init)
        var added: [Int64] = []
        for p in positions {
            try context.checkCancelled()
            // The identifier with the item, one lookup (the ties' order
            // above read some of them already).
            guard let (uid, stored) = try store.fetchResultAndUID(ids[p], attributes: fetch, rows: rows) else { continue }
            result.hits.append(SearchHit(uniqueIdentifier: uid, item: stored.item, rank: ranks[p], rawItem: stored.rawItem))
            added.append(ids[p])
        }
        return added
    }

    /// Every rank's ``SearchRankKey/key(_:)``; nil when one has none.
    static func primaryKeys(_ ranks: [SearchRank], _ rankKey: SearchRankKey) -> [UInt64]? {
        var keys: [UInt64] = []
        keys.reserveCapacity(ranks.count)
        for r in ranks {
            guard let k = rankKey.key(r) else { return nil }
            keys.append(k)
        }
        return keys
    }

    /// Calls `body` with the position in `sorted` of every id also in `ids` (both sorted).
    func mark(_ sorted: [Int64], _ ids: [Int64], _ body: (Int) -> Void) {
        IDs.common(sorted, ids) { i, _ in body(i) }
    }

    static func quote(_ term: String) -> String { ShardStore.ftsQuote(term) }

    func ftsIDs(_ match: String) throws -> [Int64] {
        let s = try store.db.prepare("SELECT rowid FROM words WHERE words MATCH ?")
        try s.bind(match, at: 0)
        var ids: [Int64] = []
        do {
            while try s.step() { ids.append(s.int64(at: 0)) }
        } catch {
            // A word FTS5's tokenizer splits differently is found by no term.
            try? s.reset()
            if error.message.contains("phrase queries are not supported") || error.message.contains("syntax error") { return [] }
            throw error
        }
        return IDs.sortedUnique(ids)
    }

    /// The FTS5 column filter of the searchable attributes; none when they
    /// cover every column any attribute of the shard is in (the default,
    /// every text attribute): FTS5 then answers from its doclists without
    /// decoding positions (a third to a half of the lookup).
    var columnFilter: String {
        coversEveryColumn ? "" : "{" + columns.map { "c\($0.column)" }.joined(separator: " ") + "} : "
    }

    /// The searched columns' mask for ``PostingSearch``: nil when FTS5 gets no column filter.
    var columnMask: UInt32? {
        coversEveryColumn ? nil : PostingSearch.mask(columns.map(\.column))
    }
}
