import Foundation
import QueryPlan
import SQLite

extension ShardStore {
    /// Completions a filtered suggestion request counts at most, most frequent
    /// (in the whole shard) first.
    static let filteredSuggestionBudget = 400

    /// Suggestions when the plan has a filter — an app's scope (every request
    /// made with an API key has one), a secured key's restrictions, or the
    /// caller's `filters`: each completion is counted over the items that
    /// pass the filter, and one that would find none of them is not offered.
    ///
    /// The shard's vocabulary is shared by every app, so the counts that
    /// ``suggest(_:limit:)`` reads from it would tell one app the words of
    /// another. One word is counted exactly by ``filteredWordCounts(_:prefixLast:allowed:)``.
    /// For several words the vocabulary only proposes completions, and the word
    /// index, intersected with the filter's items, decides. Candidates are
    /// tried most frequent first and counting stops once a candidate's
    /// shard-wide count cannot beat the best `max(limit, 40)`-th so far (a
    /// filtered count is never larger), or after ``filteredSuggestionBudget``
    /// candidates: past that, rarer completions of a very short prefix may be
    /// missed, never miscounted on this shard. The coordinator sums shards'
    /// counts, so, as for the unfiltered path's cut at 500, a completion past
    /// the cut on some shard is undercounted there.
    func filteredSuggest(_ plan: SearchPlan, limit: Int) throws -> [Suggestion] {
        guard let last = plan.words.last, limit > 0 else { return [] }
        let outside = db.isAutocommit
        do {
            return try db.transaction(.deferred) {
                try reloadIfChanged()
                searchCache.postings.shared = try currentPostingIndex(outside: outside)
                defer { searchCache.postings.shared = nil }
                let context = QueryContext(isCancelled: { false }, wantsScores: false)
                let found = try filterItems(plan.filter.simplified(), context)
                var allowed = IDs.subtract(try found ?? universe(context), try expiredIDs(now: Date()))
                if let kept = try slotScope() { allowed = kept.filter(allowed) }
                if allowed.isEmpty { return [] }
                let earlier = Array(plan.words.dropLast())
                if earlier.isEmpty { return try filteredWordCounts(last, prefixLast: plan.prefixLast, allowed: allowed) }
                let shared = searchCache.postings.shared
                let vocabulary = try shared?.terms ?? vocabulary()
                let prefix = earlier.joined(separator: " ") + " "
                // The earlier words' items that the filter allows, once; each
                // candidate is then counted by one intersection with its
                // posting list (see ``TermPostings``), with no query.
                let holding = ItemSet(IDs.intersect(try itemsHoldingAll(earlier, except: []), allowed))
                if holding.isEmpty { return [] }
                // More than the client wants, as the unfiltered path sends more:
                // the coordinator sums shards' counts, and a term cut on one shard is undercounted.
                let want = max(limit, Self.countedCompletions)
                let terms = vocabulary.mostFrequent(prefix: last, prefixLast: plan.prefixLast, Self.filteredSuggestionBudget)
                if shared == nil {
                    let likely = Set(terms.prefix(want).map(\.term))
                    try readPostings(
                        vocabulary.range(prefix: last).map { i in
                            let term = vocabulary.term(i)
                            return (term, Int(vocabulary.docs[i]), likely.contains(term))
                        })
                }
                var out: [Suggestion] = []
                for t in terms {
                    if out.count >= want, t.docs <= out[want - 1].count { break }
                    let n =
                        try shared.map { s in s.withList(t.i) { holding.count(in: $0) } }
                        ?? completionCount(t.term, docs: t.docs, earlier: earlier, holding: holding)
                    if n > 0 {
                        out.insertSorted(Suggestion(text: prefix + t.term, count: n))
                    }
                }
                return out
            }
        } catch {
            throw StoreError.wrap(error, "suggestions failed")
        }
    }

    /// One word: every completion counted exactly, each by intersecting its
    /// posting list (see ``TermPostings``) with the items the filter allows.
    /// The completions are the word index's own terms (`fts5vocab` 'row'),
    /// not the ``Vocabulary``'s, which may lag writes. All completions that
    /// find any are returned, up to ``maxShardSuggestions``, as the unfiltered
    /// path returns them, so the coordinator's sums are as exact as its.
    ///
    /// Posting lists are read per distinct term, and once per change of the
    /// data, rather than in one pass over every instance of the prefix's
    /// terms, which costs tens of milliseconds for a short prefix. With the
    /// process's ``PostingIndex`` of the current data, terms and lists are
    /// its own, with no query: about a twentieth of reading them term by
    /// term.
    func filteredWordCounts(_ word: String, prefixLast: Bool, allowed: [Int64]) throws -> [Suggestion] {
        if let shared = searchCache.postings.shared {
            return filteredWordCounts(word, prefixLast: prefixLast, allowed: allowed, in: shared)
        }
        try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_vocab USING fts5vocab(main, 'words', 'row')")
        let s = try db.prepare(
            prefixLast
                ? "SELECT term, doc FROM temp.words_vocab WHERE term >= ?1"
                : "SELECT term, doc FROM temp.words_vocab WHERE term = ?1")
        try s.bind(word, at: 0)
        var terms: [(term: String, docs: Int)] = []
        do {
            // Reset however the loop ends: a statement left mid-way would keep
            // the connection's read snapshot open, and later reads would not see new writes.
            defer { try? s.reset() }
            let prefix = Array(word.utf8)
            while try s.step() {
                let within = s.withUTF8(at: 0) { $0.starts(with: prefix) } ?? false
                guard within else { break }
                terms.append((s.string(at: 0) ?? "", s.int(at: 1)))
            }
        }
        try readPostings(terms.map { ($0.term, $0.docs, true) })
        // Most frequent first: once the list is full, a term whose shard-wide
        // count cannot beat its last entry is past the cut, and so is every rarer one.
        terms.sort { $0.docs != $1.docs ? $0.docs > $1.docs : $0.term < $1.term }
        var out: [Suggestion] = []
        var least = Int.max  // the smallest count kept, once the list is full
        let allowedSet = ItemSet(allowed)
        for t in terms {
            if out.count >= Self.maxShardSuggestions {
                if least == .max { out.sort(by: Suggestion.precedes); least = out[Self.maxShardSuggestions - 1].count }
                if t.docs < least { break }
            }
            let n = allowedSet.count(in: try termPostings(t.term))
            if n > 0 { out.append(Suggestion(text: t.term, count: n)) }
        }
        out.sort(by: Suggestion.precedes)
        return Array(out.prefix(Self.maxShardSuggestions))
    }

    /// ``filteredWordCounts(_:prefixLast:allowed:)`` from the shared index:
    /// its terms are the word index's, and each count one pass over a list.
    func filteredWordCounts(_ word: String, prefixLast: Bool, allowed: [Int64], in index: PostingIndex) -> [Suggestion] {
        var terms: [(i: Int, docs: Int)] = index.terms.range(prefix: word).compactMap { i in
            prefixLast || index.terms.length(i) == word.utf8.count ? (i, Int(index.terms.docs[i])) : nil
        }
        terms.sort { $0.docs != $1.docs ? $0.docs > $1.docs : $0.i < $1.i }
        var out: [Suggestion] = []
        var least = Int.max
        let allowedSet = ItemSet(allowed)
        for t in terms {
            if out.count >= Self.maxShardSuggestions {
                if least == .max { out.sort(by: Suggestion.precedes); least = out[Self.maxShardSuggestions - 1].count }
                if t.docs < least { break }
            }
            let n = index.withList(t.i) { allowedSet.count(in: $0) }
            if n > 0 { out.append(Suggestion(text: index.terms.term(t.i), count: n)) }
        }
        out.sort(by: Suggestion.precedes)
        return Array(out.prefix(Self.maxShardSuggestions))
    }
}
