import Foundation
import Items
import QueryPlan
import SQLite

/// A completion of typed text, with how many items it would find.
package struct Suggestion: Sendable, Hashable {
    package var text: String
    package var count: Int
    package init(text: String, count: Int) {
        self.text = text
        self.count = count
    }

    /// Best first: more items, then alphabetical (so that shards and the
    /// coordinator agree on ties).
    package static func precedes(_ a: Suggestion, _ b: Suggestion) -> Bool {
        a.count != b.count ? a.count > b.count : a.text < b.text
    }
}

extension ShardStore {
    /// Completions a shard sends for one word at most: the coordinator sums
    /// them, so each shard sends many more than are shown, and a sum is exact
    /// unless a term was past this rank on some shard.
    package static let maxShardSuggestions = 500
    /// Completions of the last word whose count is run, for text of several words.
    static let countedCompletions = 40

    /// Suggestions for typed text (`CSUserQuery`): the last word completed
    /// from the shard's ``Vocabulary`` (the index's own terms), the earlier
    /// words kept, best first by how many items each would find.
    ///
    /// What "count" means:
    /// - One word: the term's document count in the word index — the items
    ///   that hold the word as a token (in any attribute). It is read from
    ///   the vocabulary, with no search at all, which is what lets
    ///   suggestions keep up with typing. The vocabulary lags writes by at
    ///   most ``ShardStore/vocabularyMaxAge``, and items expired but not yet
    ///   purged are counted.
    /// - Several words: the items that hold every earlier word and the
    ///   completion as tokens, counted by the word index for the
    ///   ``countedCompletions`` most frequent completions, expired items left
    ///   out. Completions that would find nothing are dropped. They are
    ///   counted most frequent first, and counting stops once a completion's
    ///   document count cannot beat the `limit`-th best count so far, so the
    ///   shard's top `limit` is exact whatever the cut. Each count is an
    ///   intersection of posting lists held in memory: the process's
    ///   ``PostingIndex`` of the shard when it holds the current data (then
    ///   the completions are its terms, the word index's own), or else lists
    ///   read term by term (``TermPostings``) while it is read in the
    ///   background. The index makes a suggestion cheaper than a word query;
    ///   a query per completion would cost several word queries.
    ///
    /// Text that ends with a space (`prefixLast` false) is complete: its only
    /// suggestion is itself, with its count. The words are the plan's
    /// (folded, as the index holds them), so suggestions are folded too.
    ///
    /// With a filter (an app's scope, a secured key's restrictions, the
    /// caller's `filters`), counts are of the items that pass it: see
    /// ``filteredSuggest(_:limit:)``.
    package func suggest(_ plan: SearchPlan, limit: Int) throws -> [Suggestion] {
        // While a split's purge is under way, or the request was routed by a
        // map that gives some of the shard's rows to another shard, the
        // vocabulary still counts those items: count the items left in instead.
        let purging = try !slotFilters().isEmpty
        if plan.filter != .all || purging { return try filteredSuggest(plan, limit: limit) }
        guard let last = plan.words.last, limit > 0 else { return [] }
        let outside = db.isAutocommit
        do {
            return try db.transaction(.deferred) {
                try reloadIfChanged()
                let earlier = Array(plan.words.dropLast())
                if earlier.isEmpty {
                    // The user is typing: have the lists ready for a second word.
                    if Self.buildsSuggestionIndex, !PostingIndexes.shared.hasAny(path: path) { _ = try currentPostingIndex(outside: outside) }
                } else {
                    searchCache.postings.shared = try currentPostingIndex(outside: outside)
                }
                defer { searchCache.postings.shared = nil }
                // With the shared index, completions are its terms (the word
                // index's, exactly); otherwise the vocabulary's (see ``Vocabulary``).
                let shared = searchCache.postings.shared
                let vocabulary = try shared?.terms ?? vocabulary()
                let prefix = earlier.isEmpty ? "" : earlier.joined(separator: " ") + " "
                if earlier.isEmpty {
                    return vocabulary.mostFrequent(prefix: last, prefixLast: plan.prefixLast, max(limit, Self.maxShardSuggestions))
                        .map { Suggestion(text: $0.term, count: $0.docs) }
                }
                // The items holding every earlier word, from posting lists
                // kept in memory: each completion's count is then one
                // intersection, with no query.
                let holding = ItemSet(try itemsHoldingAll(earlier, except: try expiredIDs(now: Date())))
                if holding.isEmpty { return [] }
                let candidates = vocabulary.mostFrequent(prefix: last, prefixLast: plan.prefixLast, max(limit, Self.countedCompletions))
                if shared == nil {
                    let wanted = Set(candidates.map(\.term))
                    try readPostings(
                        vocabulary.range(prefix: last).map { i in
                            let term = vocabulary.term(i)
                            return (term, Int(vocabulary.docs[i]), wanted.contains(term))
                        })
                }
                var out: [Suggestion] = []
                for t in candidates {
                    // A completion finds at most the items holding it: once the
                    // next one's document count cannot beat the limit-th best
                    // count, no later (rarer) one can either.
                    if out.count >= limit, t.docs <= out[limit - 1].count { break }
                    let n =
                        try shared.map { s in s.withList(t.i) { holding.count(in: $0) } }
                        ?? completionCount(t.term, docs: t.docs, earlier: earlier, holding: holding)
                    if n > 0 {
                        out.insertSorted(Suggestion(text: prefix + t.term, count: n))
                    }
                }
                out.sort(by: Suggestion.precedes)
                return out
            }
        } catch {
            throw StoreError.wrap(error, "suggestions failed")
        }
    }

}

extension [Suggestion] {
    /// Inserts `s` where ``Suggestion/precedes(_:_:)`` puts it in this sorted
    /// list (a sort after each append cost more than the counts for short prefixes).
    mutating func insertSorted(_ s: Suggestion) {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if Suggestion.precedes(self[mid], s) { lo = mid + 1 } else { hi = mid }
        }
        insert(s, at: lo)
    }
}
