import Foundation
import Items
import QueryPlan
import Testing

@testable import SearchParameters

/// Algolia's `aroundPrecision`: the groups within which an explicit
/// ranking's `geo` criterion ties distances, read from the parameters,
/// carried by the plan, and reported in `_rankingInfo`. The examples are
/// Algolia's documented ones.
@Suite struct GeoPrecisionTests {
    /// "if you set aroundPrecision to 100, any object in the range 0-99 from
    /// the searched location is considered equal. Same goes for 100-199,
    /// 200-299, etc."
    @Test func oneSizeGroupsEveryDistance() throws {
        let p = try #require(try request(#"{"aroundLatLng": "40.71, -74.01", "aroundPrecision": 100}"#).plan.aroundPrecision)
        #expect(p.compare(0, 99) == 0)
        #expect(p.compare(99, 100) == -1)
        #expect(p.compare(100, 199) == 0)
        #expect(p.compare(250, 199) == 1)
        #expect(p.compare(200, 299) == 0)
        #expect(p.precision(at: 5_000) == 100)
    }

    /// "[{ "from": 0, "value": 25 }, { "from": 1000, "value": 2000 }] means
    /// records between 0 and 999 m have a precision of 25 m, and records
    /// above 1,000 m have a precision of 2,000 m."
    @Test func bandsGroupEachRangeByItsOwnSize() throws {
        let json = #"{"aroundLatLng": "40.71, -74.01", "aroundPrecision": [{ "from": 0, "value": 25 }, { "from": 1000, "value": 2000 }]}"#
        let p = try #require(try request(json).plan.aroundPrecision)
        #expect(p.precision(at: 999) == 25)
        #expect(p.precision(at: 1_000) == 2_000)
        #expect(p.compare(0, 24) == 0)
        #expect(p.compare(24, 25) == -1)
        #expect(p.compare(975, 999) == 0)
        #expect(p.compare(999, 1_000) == -1)
        // A band's groups start at its `from` (the reading written on ``GeoPrecision``).
        #expect(p.compare(1_000, 2_999) == 0)
        #expect(p.compare(2_999, 3_000) == -1)
        // Bands in any order; the same groups.
        let reversed = #"{"aroundPrecision": [{ "from": 1000, "value": 2000 }, { "from": 0, "value": 25 }]}"#
        #expect(try request(reversed).plan.aroundPrecision == p)
    }

    /// "If you set a value below 10, Algolia uses 10 as the minimum."
    @Test func sizesBelowTenMetresCountAsTen() throws {
        #expect(try request(#"{"aroundPrecision": 1}"#).plan.aroundPrecision == GeoPrecision(metres: 10))
        #expect(try request(#"{"aroundPrecision": 0}"#).plan.aroundPrecision == .algoliaDefault)
        let bands = try #require(try request(#"{"aroundPrecision": [{"from": 0, "value": 5}]}"#).plan.aroundPrecision)
        #expect(bands.precision(at: 3) == 10)
        // Distances below the first band's `from` are grouped by 10 m.
        let late = try #require(try request(#"{"aroundPrecision": [{"from": 500, "value": 100}]}"#).plan.aroundPrecision)
        #expect(late.precision(at: 499) == 10 && late.precision(at: 500) == 100)
    }

    /// The restaurants of Algolia's guide: with `aroundPrecision` 200, A
    /// (5 stars, 150 m) and B (3 stars, 100 m) tie on distance, and the
    /// custom ranking by rating puts A first; with the default 10 m, B is
    /// nearer and first.
    @Test func aCoarserPrecisionLetsTheCustomRankingDecide() throws {
        var plan = try request(
            #"{"query": "restaurant", "aroundLatLng": "48.85, 2.35", "aroundPrecision": 200, "ranking": ["typo", "geo", "words", "filters", "proximity", "attribute", "exact", "custom"], "customRanking": ["desc(rating)"]}"#
        ).plan
        let a = SearchRank(words: 1, custom: [.number(5)], geoDistance: 150)
        let b = SearchRank(words: 1, custom: [.number(3)], geoDistance: 100)
        #expect(SearchRanking.compare(a, b, plan: plan) < 0)
        plan.aroundPrecision = nil
        #expect(SearchRanking.compare(b, a, plan: plan) < 0)
    }

    @Test func theWireFormKeepsIt() throws {
        let plan = try request(#"{"aroundPrecision": [{ "from": 0, "value": 25 }, { "from": 1000, "value": 2000 }]}"#).plan
        #expect(try SearchPlan(json: plan.json).aroundPrecision == plan.aroundPrecision)
        let one = try request(#"{"aroundPrecision": 150}"#).plan
        #expect(try SearchPlan(json: one.json).aroundPrecision == GeoPrecision(metres: 150))
        #expect(try SearchPlan(json: SearchPlan().json).aroundPrecision == nil)
        // A URL-encoded `params` string carries it as text.
        #expect(try request(#"{"aroundPrecision": "300"}"#).plan.aroundPrecision == GeoPrecision(metres: 300))
        let text = #"{"aroundPrecision": "[{\"from\": 0, \"value\": 25}, {\"from\": 1000, \"value\": 2000}]"}"#
        #expect(try request(text).plan.aroundPrecision == plan.aroundPrecision)
    }

    @Test func badValuesAreNamed() throws {
        for bad in [#""near""#, "-5", "[]", #"[{"from": 0}]"#, #"[{"from": "a", "value": 10}]"#, "true"] {
            let e = try #require(try failure(#"{"aroundPrecision": \#(bad)}"#), "\(bad) was accepted")
            #expect(e.parameter == "aroundPrecision", "\(bad)")
        }
        let e = try #require(try failure(#"{"aroundPrecision": [{"from": 0, "value": 25}, {"value": 9}]}"#))
        #expect(e.message.contains("item 1"), "\(e.message)")
    }
}
