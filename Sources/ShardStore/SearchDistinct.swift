import Foundation
import Items
import QueryPlan
import SQLite

/// Distinct (Algolia's `distinct` with `attributeForDistinct`) on a shard:
/// only the best ``DistinctPlan/count`` hits per value of the attribute, and
/// the groups the matches fall into, for the coordinator's `nbHits`.
///
/// A hit's group is the first value of its attribute as facets read it
/// (``FacetColumn``); a hit without one is a group of its own. The window is
/// ``SearchPlan/window`` groups (Algolia's `hitsPerPage` counts groups), so
/// the shard ranks every match rather than the few buckets that fill a
/// window of hits: deduplicating can empty most of them. Hits that only a
/// semantic search found carry no value and are groups of their own.
extension SearchRun {
    /// Each of `ids`' group: the first value of the distinct attribute, nil when it has none.
    func distinctKeys(_ ids: [Int64], _ d: DistinctPlan) throws -> [String?] {
        guard let name = store.nameIDs[d.attribute] else { return ids.map { _ in nil } }
        let column = try store.facetColumn(name)
        if !column.offsets.isEmpty {
            return ids.map { id in
                guard id >= 0, id < column.offsets.count - 1 else { return nil }
                let e = Int(column.offsets[Int(id)])
                return e < Int(column.offsets[Int(id) + 1]) ? column.names[Int(column.values[e])] : nil
            }
        }
        var first: [Int64: Int32] = [:]
        for (i, item) in column.items.enumerated() where first[item] == nil { first[item] = column.values[i] }
        return ids.map { id in first[id].map { column.names[Int($0)] } }
    }

    /// The groups of `matched`, as ``QueryPlan/DistinctPlan/groupsFacet`` sends them.
    func distinctGroups(_ matched: [Int64], _ d: DistinctPlan) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        var missing = 0
        for key in try distinctKeys(matched, d) {
            if let key { counts[key, default: 0] += 1 } else { missing += 1 }
        }
        if missing > 0 { counts[DistinctPlan.missingKey] = missing }
        return counts
    }

    /// The window with distinct: every candidate ordered in full (ties by
    /// identifier, through places when the shard has them), then the best
    /// `count` of each group, up to ``SearchPlan/window`` groups. Sets each
    /// kept rank's ``SearchRank/distinctValue``.
    func distinctWindow(ids: [Int64], ranks: inout [SearchRank], _ d: DistinctPlan) throws -> [Int] {
        let keys = try distinctKeys(ids, d)
        for i in ids.indices { ranks[i].distinctValue = keys[i].map { .string($0) } }
        let all = Array(ids.indices)
        let order: [Int]
        if let tie = try tieOrder(candidates: ids.count), let places = Self.places(ids, in: tie) {
            order = all.sorted { [ranks, plan] a, b in
                let c = SearchRanking.compare(ranks[a], ranks[b], plan: plan)
                return c != 0 ? c < 0 : places[a] < places[b]
            }
        } else {
            var uids = [String](repeating: "", count: ids.count)
            let uid = try store.db.prepare("SELECT uid FROM items WHERE id = ?")
            for k in all {
                try uid.bind(ids[k], at: 0)
                uids[k] = try uid.step() ? uid.string(at: 0) ?? "" : ""
                try uid.reset()
            }
            order = all.sorted { [ranks, plan] a, b in SearchRanking.precedes(ranks[a], uids[a], ranks[b], uids[b], plan: plan) }
        }
        // Best first, as every shard answers (the merge groups them again).
        let kept = Set(DistinctPlan.pick(order, keys: { keys[$0] }, perGroup: d.count, groups: plan.window).joined())
        return order.filter(kept.contains)
    }
}
