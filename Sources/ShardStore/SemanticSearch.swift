import Foundation
import QueryPlan

/// A semantic search's part on one shard.
struct SemanticScores {
    /// Every item of the shard that has a vector, sorted.
    var all: [Int64]
    /// The items with a vector that pass the filters (not expired, within
    /// the radius), sorted.
    var ids: [Int64]
    /// The best ``SearchPlan/window`` of them by cosine, best first.
    var best: [(id: Int64, score: Float)]
    /// Whether they count as matches (ratio above 0): a search by meaning has
    /// no words that must occur, so every item with a vector that passes the
    /// filters matches, and `nbHits` and the facets count them with the
    /// lexical matches. With ratio 0 the scores are only reported.
    var counts: Bool
}

extension SearchRun {
    /// The items that match by meaning and the best of them; nil for a
    /// search without a semantic part. Filters are applied before ranking:
    /// only passing items are candidates (see ``VectorIndex/nearest(_:k:among:)``).
    func semanticScores(filtered: [Int64]?, expired: [Int64]) throws -> SemanticScores? {
        guard let semantic = plan.semantic else { return nil }
        let index = try store.vectorIndex()
        let all = index.allIDs()
        let ids: [Int64], best: [(id: Int64, score: Float)]
        if filtered == nil, expired.isEmpty, plan.aroundRadius == nil {
            ids = all
            best = try index.nearest(semantic.vector, k: plan.window)
        } else {
            let candidates = try withinRadius(IDs.subtract(filtered ?? (try store.universe(context)), expired))
            ids = IDs.intersect(candidates, all)
            best = try index.nearest(semantic.vector, k: plan.window, among: ids)
        }
        try context.checkCancelled()
        return SemanticScores(all: all, ids: ids, best: best, counts: semantic.ratio > 0)
    }

    /// Gives the lexical hits their semantic scores, and adds the best
    /// ``SearchPlan/window`` items by score that are not among them, marked
    /// not lexical: the coordinator numbers both lists across shards and
    /// fuses them (see ``HybridRanking``).
    func addSemanticHits(_ semantic: SemanticScores, lexicalIDs: [Int64], to result: inout ShardSearchResult) throws {
        let lexical = Dictionary(uniqueKeysWithValues: lexicalIDs.enumerated().map { ($1, $0) })
        if let vector = plan.semantic?.vector {
            for s in try store.vectorIndex().scores(vector, of: lexicalIDs) {
                result.hits[lexical[s.id]!].rank.semanticScore = Double(s.score)
            }
        }
        let fetch = plan.fetchAttributes.map(FetchList.init)
        for best in semantic.best where lexical[best.id] == nil {
            try context.checkCancelled()
            // The identifier with the item, one lookup, from the rows in
            // memory when the index is current (as the lexical hits are).
            guard let (identifier, stored) = try store.fetchResultAndUID(best.id, attributes: fetch, rows: rows) else { continue }
            var rank = SearchRank(words: plan.words.count)
            rank.semanticScore = Double(best.score)
            rank.lexical = false
            result.hits.append(SearchHit(uniqueIdentifier: identifier, item: stored.item, rank: rank, rawItem: stored.rawItem))
        }
    }
}
