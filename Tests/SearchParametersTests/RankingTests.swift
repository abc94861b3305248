import Foundation
import Items
import QueryPlan
import Testing
import WireProtocol

@testable import SearchParameters

/// The ranking formula as an ordered list of criteria (`ranking`), the
/// searchable attributes' order, and distinct: parsed from the parameters,
/// compared by ``SearchRanking``, merged by ``SearchResponseBuilder``.
@Suite struct RankingTests {
    @Test func rankingIsParsedInOrderAndUnknownCriteriaAreNamed() throws {
        let plan = try request(#"{"query": "a", "ranking": ["desc(price)", "typo", "geo", "custom"]}"#).plan
        #expect(plan.ranking == [.sort(CustomRank(attribute: "price", ascending: false)), .typo, .geo, .custom])
        #expect(try request(#"{"query": "a"}"#).plan.ranking == nil)
        let e = try #require(try failure(#"{"query": "a", "ranking": ["typo", "speed", "asc()", "desc(x)"]}"#))
        #expect(e.parameter == "ranking")
        #expect(e.message.contains("'speed'") && e.message.contains("'asc()'") && !e.message.contains("'desc(x)'"), "\(e.message)")
        // The plan's wire form keeps the order.
        #expect(try SearchPlan(json: plan.json).ranking == plan.ranking)
        #expect(RankCriterion.algolia.map(\.name) == ["typo", "geo", "words", "filters", "proximity", "attribute", "exact", "custom"])
    }

    /// Algolia puts distance second: a nearer hit before a farther one with a
    /// higher custom rank, where Limelight's own order (custom before
    /// distance) puts the farther one first.
    @Test func geoIsSecondInAlgoliasDefault() {
        var plan = SearchPlan(words: ["cafe"], customRanking: [CustomRank(attribute: "rating", ascending: false)])
        plan.around = Location(latitude: 48.85, longitude: 2.35)
        let near = SearchRank(words: 1, typos: 0, attribute: 0, custom: [.number(3)], geoDistance: 100)
        let far = SearchRank(words: 1, typos: 0, attribute: 0, custom: [.number(5)], geoDistance: 2_000)
        #expect(SearchRanking.compare(far, near, plan: plan) < 0)
        plan.ranking = RankCriterion.algolia
        #expect(SearchRanking.compare(near, far, plan: plan) < 0)
        // Typos still come first.
        let nearWithTypo = SearchRank(words: 1, typos: 1, attribute: 0, custom: [.number(9)], geoDistance: 1)
        #expect(SearchRanking.compare(far, nearWithTypo, plan: plan) < 0)
        // Within Algolia's precision (10 m) distances tie, and the custom ranking decides.
        let close = SearchRank(words: 1, custom: [.number(1)], geoDistance: 101)
        let closer = SearchRank(words: 1, custom: [.number(2)], geoDistance: 105)
        #expect(SearchRanking.compare(closer, close, plan: plan) < 0)
        // A hit without a location goes after those with one.
        #expect(SearchRanking.compare(far, SearchRank(words: 1, custom: [.number(9)]), plan: plan) < 0)
    }

    @Test func reorderedCriteriaDecideInTheirOrder() {
        var plan = SearchPlan(words: ["a", "b"], customRanking: [CustomRank(attribute: "rating", ascending: false)])
        let typo = SearchRank(words: 2, typos: 1, proximity: 1, attribute: 0, custom: [.number(1)])
        let attribute = SearchRank(words: 2, typos: 0, proximity: 1, attribute: 3000, custom: [.number(1)])
        let rated = SearchRank(words: 2, typos: 2, proximity: 8, attribute: 5000, custom: [.number(9)])
        plan.ranking = [.typo, .attribute, .custom]
        #expect(SearchRanking.compare(attribute, typo, plan: plan) < 0)
        plan.ranking = [.attribute, .typo, .custom]
        #expect(SearchRanking.compare(typo, attribute, plan: plan) < 0)
        plan.ranking = [.custom, .typo]
        #expect(SearchRanking.compare(rated, typo, plan: plan) < 0 && SearchRanking.compare(rated, attribute, plan: plan) < 0)
        // A criterion left out of the ranking does not count at all.
        plan.ranking = [.proximity]
        #expect(SearchRanking.compare(typo, attribute, plan: plan) == 0)
    }

    /// `asc()`/`desc()` anywhere in the list: their values follow the custom
    /// ranking's in a rank's ``SearchRank/custom`` (``SearchPlan/rankValues``).
    @Test func sortsInTheRankingUseTheirOwnValues() throws {
        let plan = try request(#"{"query": "a", "customRanking": ["desc(rating)"], "ranking": ["asc(price)", "typo", "custom"]}"#).plan
        #expect(plan.rankValues == [CustomRank(attribute: "rating", ascending: false), CustomRank(attribute: "price", ascending: true)])
        let cheap = SearchRank(words: 1, typos: 2, custom: [.number(1), .number(5)])
        let dear = SearchRank(words: 1, typos: 0, custom: [.number(9), .number(50)])
        let dearer = SearchRank(words: 1, typos: 0, custom: [.number(9), .null])
        #expect(SearchRanking.compare(cheap, dear, plan: plan) < 0)
        // A missing value sorts last, ascending or not.
        #expect(SearchRanking.compare(dear, dearer, plan: plan) < 0)
    }

    /// Random ranks under random orders: the packed key and the rest of the
    /// comparison (``SearchRankKey``) order as the full comparison does.
    @Test func keysOrderAsTheComparisonForAnyOrder() throws {
        var rng = SplitMix64(state: 71)
        func small(_ n: UInt64) -> Int { Int(rng.next() % n) }
        let all: [RankCriterion] = [
            .typo, .geo, .words, .filters, .proximity, .attribute, .exact, .custom, .sort(CustomRank(attribute: "p", ascending: true)),
        ]
        let ranks: [SearchRank] = (0..<200).map { _ in
            SearchRank(
                words: 1 + small(2), typos: small(3), proximity: 1 + small(3),
                attribute: SearchRank.attribute(small(3), atStart: small(2) == 0),
                exactAttribute: small(3) == 0 ? SearchRank.noExactAttribute : small(3), exactWords: small(3),
                custom: [small(3) == 0 ? .null : .number(Double(small(4))), .number(Double(small(3)))],
                geoDistance: small(2) == 0 ? nil : Double(small(5) * 7))
        }
        var packedSizes: Set<Int> = []
        for round in 0..<40 {
            var plan = SearchPlan(words: ["a", "b"], customRanking: [CustomRank(attribute: "popularity", ascending: false)])
            if round % 2 == 0 { plan.around = Location(latitude: 0, longitude: 0) }
            var order = all
            for i in order.indices.reversed() { order.swapAt(i, small(UInt64(i + 1))) }
            plan.ranking = round == 0 ? RankCriterion.algolia : Array(order.prefix(3 + small(7)))
            let key = SearchRankKey(plan: plan)
            packedSizes.insert(key.packed.count)
            for a in ranks {
                for b in ranks.prefix(40) {
                    let full = SearchRanking.compare(a, b, plan: plan)
                    let ka = try #require(key.key(a)), kb = try #require(key.key(b))
                    let byKey = ka == kb ? key.compareRest(a, b, plan: plan) : (ka < kb ? -1 : 1)
                    #expect(full.signum() == byKey.signum(), "\(plan.ranking!.map(\.name)) \(a) \(b)")
                }
            }
            if !key.restMatters(ranks) {
                #expect(ranks.allSatisfy { key.compareRest($0, ranks[0], plan: plan) == 0 }, "\(plan.ranking!.map(\.name))")
            }
        }
        #expect(packedSizes.count > 3, "\(packedSizes)")
        // Algolia's default with a point packs typo alone (geo is second); without one, every textual criterion.
        var plan = SearchPlan(words: ["a"])
        plan.ranking = RankCriterion.algolia
        #expect(SearchRankKey(plan: plan).packed == [.typo, .words, .proximity, .attribute, .exact])
        #expect(SearchRankKey(plan: plan).rest == [.custom])
        plan.around = Location(latitude: 0, longitude: 0)
        #expect(SearchRankKey(plan: plan).packed == [.typo])
        #expect(SearchRankKey(plan: plan).rest == [.geo, .words, .proximity, .attribute, .exact, .custom])
    }

    @Test func searchableAttributesKeepGroupsAndUnordered() {
        let parsed = SearchableAttribute.parse(["title,alternative", "unordered(description)", "tags"])
        #expect(
            parsed == [
                SearchableAttribute(name: "title", rank: 0, unordered: false),
                SearchableAttribute(name: "alternative", rank: 0, unordered: false),
                SearchableAttribute(name: "description", rank: 1, unordered: true),
                SearchableAttribute(name: "tags", rank: 2, unordered: false),
            ])
    }

    @Test func distinctIsParsedAsAlgoliaReadsIt() throws {
        #expect(try request(#"{"distinct": true, "attributeForDistinct": "source"}"#).plan.distinct == DistinctPlan(attribute: "source", count: 1))
        #expect(try request(#"{"distinct": 3, "attributeForDistinct": "source"}"#).plan.distinct == DistinctPlan(attribute: "source", count: 3))
        #expect(try request(#"{"distinct": 0, "attributeForDistinct": "source"}"#).plan.distinct == nil)
        // Without an attribute, distinct is ignored (Algolia's documented behaviour).
        #expect(try request(#"{"distinct": 1}"#).plan.distinct == nil)
        #expect(try failure(#"{"distinct": 9, "attributeForDistinct": "source"}"#)?.parameter == "distinct")
        #expect(try failure(#"{"distinct": "yes", "attributeForDistinct": "source"}"#)?.parameter == "distinct")
        let plan = try request(#"{"distinct": 2, "attributeForDistinct": "source"}"#).plan
        #expect(try SearchPlan(json: plan.json).distinct == plan.distinct)
    }

    @Test func pickKeepsTheBestOfEachGroup() {
        let keys: [String?] = ["a", "b", "a", nil, "a", "c", nil, "b"]
        #expect(DistinctPlan.pick(Array(keys.indices), keys: { keys[$0] }, perGroup: 1, groups: 10) == [[0], [1], [3], [5], [6]])
        #expect(DistinctPlan.pick(Array(keys.indices), keys: { keys[$0] }, perGroup: 2, groups: 3) == [[0, 2], [1, 7], [3]])
        #expect(DistinctPlan.groups(["a": 3, "b": 1, DistinctPlan.missingKey: 2]) == 4)
    }

    /// The same value on two shards is one group: the merge keeps the best
    /// hits of it over both, pages by groups, and counts groups as `nbHits`
    /// from the shards' value counts, while facet counts stay those before
    /// distinct (Algolia's `facetingAfterDistinct: false`).
    @Test func theMergeDedupesAcrossShards() throws {
        let r = try request(#"{"query": "lib", "distinct": 1, "attributeForDistinct": "source", "hitsPerPage": 2, "facets": ["*"]}"#)
        var b = SearchResponseBuilder(request: r)
        func hit(_ id: String, _ typos: Int, _ source: String) -> Body.RankedHit {
            var rank = SearchRank(words: 1, typos: typos)
            rank.distinctValue = .string(source)
            return Body.RankedHit(id: id, item: .object(["attributes": .object(["title": .string(id)])]), rank: rank)
        }
        b.add(
            Body.ShardSearchResult(
                shard: 0, hits: [hit("libx-dev", 0, "x"), hit("liby1", 1, "y")], nbHits: 3,
                facets: ["section": ["libs": 3], DistinctPlan.groupsFacet: ["x": 2, "y": 1]], facetStats: [:], exhaustiveFacetsCount: true))
        b.add(
            Body.ShardSearchResult(
                shard: 1, hits: [hit("libx1", 0, "x"), hit("libz", 2, "z")], nbHits: 2,
                facets: ["section": ["libs": 2], DistinctPlan.groupsFacet: ["x": 1, "z": 1]], facetStats: [:], exhaustiveFacetsCount: true))
        let response = try JSONValue.parse(Data(b.responseBytes(processingTimeMS: 1)))
        #expect(response["hits"]?.arrayValue?.compactMap { $0["objectID"]?.stringValue } == ["libx-dev", "liby1"])
        #expect(response["nbHits"]?.intValue == 3)
        #expect(response["nbPages"]?.intValue == 2)
        #expect(response["facets"]?["section"]?["libs"]?.intValue == 5)
        #expect(response["facets"]?[DistinctPlan.groupsFacet] == nil)
    }
}
