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
        do {
            return try db.transaction(.deferred) {
                try reloadIfChanged()
                let context = QueryContext(isCancelled: { false }, wantsScores: false)
                let found = try candidates(try compile(plan.filter.simplified()), exact: true, context)
                let allowed = Set(IDs.subtract(try found.ids ?? universe(context), try expiredIDs(now: Date())))
                if allowed.isEmpty { return [] }
                let vocabulary = try vocabulary()
                var terms: [(term: String, docs: Int)] = vocabulary.range(prefix: last).compactMap { i in
                    let t = vocabulary.term(i)
                    return plan.prefixLast || t == last ? (t, Int(vocabulary.docs[i])) : nil
                }
                terms.sort { $0.docs != $1.docs ? $0.docs > $1.docs : $0.term < $1.term }
                let earlier = Array(plan.words.dropLast())
                if earlier.isEmpty { return try filteredWordCounts(last, prefixLast: plan.prefixLast, allowed: allowed) }
                let prefix = earlier.joined(separator: " ") + " "
                let match = try db.prepare("SELECT rowid FROM words WHERE words MATCH ?1")
                // More than the client wants, as the unfiltered path sends more:
                // the coordinator sums shards' counts, and a term cut on one shard is undercounted.
                let want = max(limit, Self.countedCompletions)
                var out: [Suggestion] = []
                for t in terms.prefix(Self.filteredSuggestionBudget) {
                    if out.count >= want, t.docs <= out[want - 1].count { break }
                    try match.bind((earlier + [t.term]).map(Self.ftsQuote).joined(separator: " "), at: 0)
                    var n = 0
                    while try match.step() { if allowed.contains(match.int64(at: 0)) { n += 1 } }
                    try match.reset()
                    if n > 0 {
                        out.append(Suggestion(text: prefix + t.term, count: n))
                        out.sort(by: Suggestion.precedes)
                    }
                }
                return out
            }
        } catch {
            throw StoreError.wrap(error, "suggestions failed")
        }
    }

    /// One word: every completion counted exactly, in one pass over the
    /// word index's instances of the prefix's terms (`fts5vocab` 'instance',
    /// ordered by term, then item), keeping the items the filter allows. All
    /// completions that find any are returned, up to
    /// ``maxShardSuggestions``, as the unfiltered path returns them, so the
    /// coordinator's sums are as exact as its.
    func filteredWordCounts(_ word: String, prefixLast: Bool, allowed: Set<Int64>) throws -> [Suggestion] {
        try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_instances USING fts5vocab(main, 'words', 'instance')")
        let s = try db.prepare(prefixLast ? "SELECT term, doc FROM temp.words_instances WHERE term >= ?1"
                                          : "SELECT term, doc FROM temp.words_instances WHERE term = ?1")
        try s.bind(word, at: 0)
        // Reset however the loop ends: a statement left mid-way would keep
        // the connection's read snapshot open, and later reads would not see new writes.
        defer { try? s.reset() }
        var counts: [String: Int] = [:]
        var term = "", lastDoc: Int64 = -1
        while try s.step() {
            guard let t = s.string(at: 0) else { continue }
            if t != term {
                guard t.hasPrefix(word) else { break }
                term = t
                lastDoc = -1
            }
            let doc = s.int64(at: 1)
            if doc != lastDoc, allowed.contains(doc) { counts[term, default: 0] += 1 }
            lastDoc = doc
        }
        var out = counts.map { Suggestion(text: $0.key, count: $0.value) }
        out.sort(by: Suggestion.precedes)
        return Array(out.prefix(Self.maxShardSuggestions))
    }
}
