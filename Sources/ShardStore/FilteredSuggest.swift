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
    /// another; here the vocabulary only proposes candidates, and the word
    /// index, intersected with the filter's items, decides. Candidates are
    /// tried most frequent first and counting stops once a candidate's
    /// shard-wide count cannot beat the `limit`-th best so far (a filtered
    /// count is never larger), or after ``filteredSuggestionBudget``
    /// candidates: past that, rarer completions of a very short prefix may be
    /// missed, never miscounted.
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
                let prefix = earlier.isEmpty ? "" : earlier.joined(separator: " ") + " "
                let match = try db.prepare("SELECT rowid FROM words WHERE words MATCH ?1")
                var out: [Suggestion] = []
                for t in terms.prefix(Self.filteredSuggestionBudget) {
                    if out.count >= limit, t.docs <= out[limit - 1].count { break }
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
}
