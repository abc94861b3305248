import Foundation
import Items
import QueryPlan

/// One domain's part of Spotlight's grouped results on a shard.
package struct DomainGroup: Sendable, Hashable {
    package var domain: String
    /// Every match of the text in exactly this domain (not its subdomains).
    package var total: Int
    /// The best few, best first, by ``SearchRanking``.
    package var hits: [SearchHit]
    package init(domain: String, total: Int, hits: [SearchHit]) {
        self.domain = domain
        self.total = total
        self.hits = hits
    }
}

extension ShardStore {
    /// Spotlight's view of a search: per domain the shard holds, the best
    /// `perDomain` hits and the exact number of matches, for domains with at
    /// least one match.
    ///
    /// Each group is the plan run with an `exactDomain` filter added, through
    /// ``search(_:rawItems:isCancelled:)``: the same matching and ranking as a
    /// parameter search, and a domain lives on one shard, so a shard's group
    /// is already the whole group and the coordinator only orders groups. It
    /// costs one search per domain of the shard; facets are not counted.
    package func searchGrouped(_ plan: SearchPlan, perDomain: Int, isCancelled: @escaping () -> Bool = { false }) throws -> [DomainGroup] {
        let domains = try domains().keys.sorted()
        var groups: [DomainGroup] = []
        for domain in domains {
            if isCancelled() { throw StoreError(.cancelled, "cancelled") }
            var p = plan
            p.filter = Predicate.and([plan.filter, .exactDomain([domain])]).simplified()
            p.window = perDomain
            p.facets = []
            p.disjunctiveFilters = [:]
            let r = try search(p, isCancelled: isCancelled)
            if r.nbHits > 0 { groups.append(DomainGroup(domain: domain, total: r.nbHits, hits: r.hits)) }
        }
        return groups
    }
}
