import Foundation
import QueryPlan
import Testing

@testable import ShardStore

/// ``ConditionIDs``: a search filter's conditions are read once while the
/// data is the same, and read again after any commit.
@Suite struct ConditionIDsTests {
    /// `size < 30`, alone and refined by the app's scope, as a faceted
    /// search's filter.
    static var plans: [SearchPlan] {
        let small = QueryPlan.Predicate.range(RangeTest(attribute: "size", upper: Bound(30, inclusive: false)))
        var plan = SearchPlan(words: [], prefixLast: false, typos: TypoPolicy(enabled: false), window: 1000)
        plan.filter = small
        var scoped = plan
        scoped.filter = .and([.domain(["@alpha"]), small])
        return [plan, scoped]
    }

    /// The hits' identifiers and the count.
    static func answer(_ s: ShardStore, _ plan: SearchPlan) throws -> [String] {
        let r = try s.search(plan)
        return r.hits.map(\.uniqueIdentifier).sorted() + ["\(r.nbHits)"]
    }

    static func search(_ s: ShardStore) throws -> [[String]] { try plans.map { try answer(s, $0) } }

    /// What readers that have kept nothing answer: a new connection for each search.
    static func expected(_ dir: TempDir) throws -> [[String]] {
        try plans.map { plan in
            let alone = try openStore(dir, mode: .readOnly)
            let a = try answer(alone, plan)
            #expect(alone.conditionReads == (1, 0))
            return a
        }
    }

    @Test func aConditionIsReadOncePerDataAndAgainAfterACommit() throws {
        let dir = TempDir()
        let w = try PostingSearchTests.store(dir, seed: 11)
        let r = try openStore(dir, mode: .readOnly)
        let first = try Self.search(r)
        #expect(first[0].count > 1 && first[1].count < first[0].count)
        #expect(r.conditionReads == (1, 1), "the second search takes the first's items")
        #expect(try Self.search(r) == first)
        #expect(r.conditionReads == (1, 3))
        #expect(try Self.expected(dir) == first)

        // A commit that adds, changes and removes items under the condition.
        try w.put(PostingSearchTests.randomItems(40, seed: 12, prefix: "new-"))
        try w.put([item("i1", domain: "@alpha", #"{"title": "moved", "size": 1}"#)])
        _ = try w.delete(ids: ["i2", "i4"])
        let after = try Self.search(r)
        #expect(after != first)
        #expect(after == (try Self.expected(dir)))
        #expect(r.conditionReads == (2, 4), "read again for the new data, once")
    }

    /// Past its bounds (ids, conditions) the held items start again empty,
    /// and a condition larger than the ids' bound alone is not kept.
    @Test func theHeldIDsAreBounded() {
        var c = ConditionIDs()
        let v = UniverseCache.Version(data: 1, changes: 0)
        let key = { (n: Double) in
            ConditionIDs.Key(condition: .range(RangeTest(attribute: "size", upper: Bound(n, inclusive: true))), routed: nil)
        }
        let half = [Int64](repeating: 1, count: ConditionIDs.maxIDs / 2 + 1)
        c.put(key(1), half, at: v)
        #expect(c.take(key(1), at: v) == .some(half))
        #expect(c.take(key(1), at: UniverseCache.Version(data: 2, changes: 0)) == nil, "another data's")
        c.put(key(2), half, at: v)
        #expect(c.take(key(1), at: v) == nil && c.take(key(2), at: v) == .some(half))
        c.put(key(3), [Int64](repeating: 1, count: ConditionIDs.maxIDs + 1), at: v)
        #expect(c.take(key(3), at: v) == nil && c.take(key(2), at: v) == nil)
        c.put(key(4), nil, at: v)
        #expect(c.take(key(4), at: v) == .some(nil), "every item, kept as such")

        // Conditions that hold no id still count against their own bound.
        var empty = ConditionIDs()
        for n in 0..<ConditionIDs.maxConditions { empty.put(key(Double(n)), [], at: v) }
        #expect(empty.take(key(0), at: v) == .some([]))
        empty.put(key(-1), [], at: v)
        #expect(empty.take(key(0), at: v) == nil && empty.take(key(-1), at: v) == .some([]))
    }
}
