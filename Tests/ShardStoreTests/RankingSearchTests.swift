import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// A shard's search under a ranking formula (``SearchPlan/ranking``), the
/// searchable attributes' order, and distinct.
@Suite struct RankingSearchTests {
    /// The window a shard picks without ranking every match (typo buckets,
    /// the one-word attribute lookups cut short, the packed keys) is the
    /// first `window` of every match ranked in full (a window past the
    /// matches ranks them all), for random plans with reordered rankings,
    /// searchable attribute groups and distinct; with the shard's index and without.
    @Test func windowsAreThePrefixOfEveryMatchRanked() throws {
        var compared = 0, reordered = 0
        for seed in [53, 59] as [UInt64] {
            let dir = TempDir()
            let s = try PostingSearchTests.store(dir, seed: seed)
            try s.buildSuggestionIndex()
            defer { PostingIndexes.shared.forget(path: s.path) }
            let plain = try openStore(dir, mode: .readOnly)
            plain.searchCache.searchesUsePostingIndex = false
            for plan in PostingSearchTests.randomPlans(150, seed: seed) {
                var all = plan
                all.window = 100_000
                for store in [s, plain] {
                    let window = try store.search(plan).hits, every = try store.search(all).hits
                    var expected = Array(every.prefix(plan.window))
                    if let d = plan.distinct {
                        let picked = DistinctPlan.pick(
                            Array(every.indices), keys: { every[$0].rank.distinctValue }, perGroup: d.count, groups: plan.window)
                        expected = Set(picked.joined()).sorted().map { every[$0] }
                    }
                    #expect(
                        window.map(\.uniqueIdentifier) == expected.map(\.uniqueIdentifier),
                        "\(plan.words) \(plan.alternatives) \(plan.prefixLast) \(plan.searchableAttributes) \(plan.window) \(plan.ranking ?? []) \(String(describing: plan.distinct)) index: \(store === s)"
                    )
                    #expect(window.map(\.rank) == expected.map(\.rank))
                    compared += window.count
                }
                if plan.ranking != nil { reordered += 1 }
            }
        }
        #expect(compared > 1000 && reordered > 50, "\(compared) \(reordered)")
    }

    func search(_ s: ShardStore, _ words: [String], _ attributes: [String], ranking: [RankCriterion]? = nil) throws -> [String] {
        var plan = SearchPlan(words: words, searchableAttributes: attributes, window: 10)
        plan.ranking = ranking
        return try s.search(plan).hits.map(\.uniqueIdentifier)
    }

    /// A match in an earlier searchable attribute ranks higher; an
    /// equal-rank group shares one rank; `unordered()` makes the position
    /// within the attribute not count.
    @Test func searchableAttributesOrderWeighsTheAttributeCriterion() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item("a", #"{"title": "gnome terminal", "contentDescription": "vim clone"}"#),
            item("b", #"{"title": "editor like vim", "contentDescription": "an editor"}"#),
        ])
        #expect(try search(s, ["vim"], ["title", "contentDescription"]) == ["b", "a"])
        #expect(try search(s, ["vim"], ["contentDescription", "title"]) == ["a", "b"])
        // One rank: "vim" starts a's description, not b's title.
        #expect(try search(s, ["vim"], ["title,contentDescription"]) == ["a", "b"])
        // Unordered: b's title counts as a match at its start, and title comes first.
        #expect(try search(s, ["vim"], ["unordered(title)", "contentDescription"]) == ["b", "a"])
        // A rank is unordered only when all of its attributes are.
        #expect(try search(s, ["vim"], ["unordered(title),contentDescription"]) == ["a", "b"])
        // Two words, from the text (proximity ties: adjacent in both).
        try s.put([item("c", #"{"title": "x vim y", "contentDescription": "vim editor"}"#)])
        #expect(try search(s, ["vim", "editor"], ["title", "contentDescription"], ranking: [.attribute]).first == "b")
        #expect(try search(s, ["vim", "editor"], ["contentDescription", "title"], ranking: [.attribute]).first == "c")
    }

    /// A ranking led by a sort or distance ranks every match by it, not the
    /// typo buckets' best: a misspelt match with the highest value first.
    @Test func aRankingLedBySortRanksEveryMatch() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put(
            (0..<60).map { i in item("p\(i)", #"{"title": "python \#(i)", "size": \#(i)}"#) }
                + [item("typo", #"{"title": "pythn", "size": 1000}"#)])
        var plan = SearchPlan(words: ["python"], window: 3)
        plan.ranking = [.sort(CustomRank(attribute: "size", ascending: false)), .typo]
        #expect(try s.search(plan).hits.map(\.uniqueIdentifier) == ["typo", "p59", "p58"])
        plan.ranking = [.typo, .sort(CustomRank(attribute: "size", ascending: false))]
        #expect(try s.search(plan).hits.map(\.uniqueIdentifier) == ["p59", "p58", "p57"])
    }

    /// Distinct on a shard: the best hit per value, a window of groups, and
    /// every value's count for the coordinator.
    @Test func distinctKeepsTheBestPerValue() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item("libfoo1", #"{"title": "libfoo1", "source": "foo", "size": 3}"#),
            item("libfoo-dev", #"{"title": "libfoo-dev", "source": "foo", "size": 9}"#),
            item("libbar1", #"{"title": "libbar1", "source": "bar", "size": 5}"#),
            item("libnone", #"{"title": "libnone", "size": 1}"#),
        ])
        var plan = SearchPlan(words: ["lib"], customRanking: [CustomRank(attribute: "size", ascending: false)], window: 10)
        plan.ranking = RankCriterion.algolia
        plan.distinct = DistinctPlan(attribute: "source", count: 1)
        let r = try s.search(plan)
        #expect(r.hits.map(\.uniqueIdentifier) == ["libfoo-dev", "libbar1", "libnone"])
        #expect(r.hits.map(\.rank.distinctValue) == [.string("foo"), .string("bar"), nil])
        #expect(r.nbHits == 4)
        #expect(r.facets[DistinctPlan.groupsFacet] == ["foo": 2, "bar": 1, DistinctPlan.missingKey: 1])
        plan.distinct?.count = 2
        plan.window = 1
        #expect(try s.search(plan).hits.map(\.uniqueIdentifier) == ["libfoo-dev", "libfoo1"])
    }
}
