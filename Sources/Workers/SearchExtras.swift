import Foundation
import QueryPlan
import ShardStore
import WireProtocol

/// What a `shard_search` asks for besides a parameter search's hits: a typed
/// query's suggestions, or Spotlight's groups instead of one ranked list.
struct SearchExtras: Sendable {
    var suggest: Int?
    var perDomain: Int?

    /// The shard's answer. Suggestions skip the search itself when no hits
    /// are wanted (a window of 0), which is what keeps them as fast as typing;
    /// groups replace the ranked list (their hits are in `groups`).
    /// The ranked hits carry their items as the store wrote them
    /// (``Body/RankedHit/rawItem``): a frame splices them in, the
    /// coordinator keeps them as bytes, and its own worker hands them over.
    func answer(_ store: ShardStore, plan: SearchPlan, isCancelled: @escaping () -> Bool) throws -> Body.ShardSearchResult {
        var out = Body.ShardSearchResult(shard: 0, hits: [], nbHits: 0, facets: [:], facetStats: [:], exhaustiveFacetsCount: true)
        if let perDomain {
            let groups = try store.searchGrouped(plan, perDomain: perDomain, isCancelled: isCancelled)
            out.groups = groups.map { g in
                Body.ShardGroup(domainIdentifier: g.domain, total: g.total, hits: g.hits.map(Self.ranked))
            }
            out.nbHits = groups.reduce(0) { $0 + $1.total }
            return out
        }
        if let suggest {
            out.suggestions = try store.suggest(plan, limit: suggest).map { Body.SuggestionCount(suggestion: $0.text, count: $0.count) }
            if plan.window == 0 { return out }
        }
        let r = try store.search(plan, rawItems: true, isCancelled: isCancelled)
        out.hits = r.hits.map(Self.ranked)
        out.nbHits = r.nbHits
        out.facets = r.facets
        out.facetStats = r.facetStats.mapValues { [$0.min, $0.max, $0.sum, Double($0.count)] }
        out.exhaustiveFacetsCount = r.exhaustiveFacetsCount
        return out
    }

    static func ranked(_ h: SearchHit) -> Body.RankedHit {
        Body.RankedHit(id: h.uniqueIdentifier, item: h.item, rank: h.rank, rawItem: h.rawItem.map { RawJSON(trusted: $0[...]) })
    }
}
