import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// The window a shard picks from its custom values' columns
/// (``SearchRun/customWindow(_:matched:typos:attribute:exactAttribute:exactWords:)``)
/// is the one the full ranking picks, over random items whose custom values
/// tie, go missing, are negative, fractional, booleans or text.
@Suite struct CustomWindowTests {
    static func items(_ n: Int, seed: UInt64) -> [JSONValue] {
        var rng = SplitMix(state: seed)
        let words = PostingSearchTests.words
        func text(_ most: Int) -> String {
            (0..<(1 + Int(rng.next() % UInt64(most)))).map { _ in words[Int(rng.next() % UInt64(words.count))] }.joined(separator: " ")
        }
        // (`rankingHint` is a standard attribute, a number: no booleans.)
        func value(booleans: Bool = true) -> String? {
            switch rng.next() % 9 {
            case 0: nil
            case 1: "-\(rng.next() % 3)"
            case 2: "\(Double(rng.next() % 7) / 4)"
            case 3 where booleans: rng.next() % 2 == 0 ? "true" : "false"
            case 4: "-0.0"
            default: "\(rng.next() % 4)"
            }
        }
        return (0..<n).map { i in
            var attributes = #""title": "\#(text(3))", "contentDescription": "\#(text(6))", "label": "\#(text(1))""#
            if let v = value(booleans: false) { attributes += #", "rankingHint": \#(v)"# }
            if let v = value() { attributes += #", "size": \#(v)"# }
            // A few items whose custom value is text: a ranking by it is not the columns'.
            if rng.next() % 50 == 0 { attributes += #", "mixed": "\#(text(1))""# } else if let v = value() { attributes += #", "mixed": \#(v)"# }
            return item("c\(i)", domain: ["@alpha", "@beta"][Int(rng.next() % 2)], "{" + attributes + "}")
        }
    }

    static func plans(_ n: Int, seed: UInt64) -> [SearchPlan] {
        var rng = SplitMix(state: seed)
        let rankings: [[CustomRank]] = [
            CustomRank.defaults, [CustomRank(attribute: "size", ascending: true)],
            [CustomRank(attribute: "size", ascending: false), CustomRank(attribute: "rankingHint", ascending: true)],
            [CustomRank(attribute: "mixed", ascending: false)], [CustomRank(attribute: "label", ascending: true)],
            [CustomRank(attribute: "absent", ascending: false), CustomRank(attribute: "rankingHint", ascending: false)], [],
        ]
        return (0..<n).map { _ in
            let words: [String] =
                switch rng.next() % 3 {
                case 0: []
                case 1: [PostingSearchTests.words[Int(rng.next() % UInt64(PostingSearchTests.words.count))]]
                default: [PostingSearchTests.queryWord(&rng)]
                }
            var plan = SearchPlan(
                words: words, prefixLast: rng.next() % 3 != 0, typos: TypoPolicy(enabled: rng.next() % 4 != 0),
                customRanking: rankings[Int(rng.next() % UInt64(rankings.count))], window: [1, 3, 10, 20][Int(rng.next() % 4)])
            if rng.next() % 4 == 0 { plan.filter = .domain(["@beta"]) }
            if rng.next() % 4 == 0 { plan.facets = ["label"] }
            return plan
        }
    }

    @Test func theColumnsWindowIsTheFullRankings() throws {
        var used = 0, hits = 0, ordered = 0
        for seed in [71, 73, 79] as [UInt64] {
            let dir = TempDir()
            let s = try openStore(dir)
            try s.put(Self.items(600, seed: seed))
            #expect(try s.delete(ids: ["c3", "c5", "c8"]) == 3)
            try s.buildSuggestionIndex()
            defer { PostingIndexes.shared.forget(path: s.path) }
            let full = try openStore(dir, mode: .readOnly)
            full.searchCache.searchesUseCustomWindow = false
            for plan in Self.plans(150, seed: seed) {
                if try PostingIndexTests.held(s) == nil { try s.buildSuggestionIndex() }
                let a = try s.search(plan), b = try full.search(plan)
                #expect(a == b, "\(plan.words) \(plan.customRanking) \(plan.window)")
                hits += a.hits.count
            }
            used += s.searchCache.customWindows
            ordered += s.universeCache.customOrders.builds
            #expect(full.searchCache.customWindows == 0)
        }
        #expect(used > 40 && hits > 1500, "\(used) \(hits)")
        #expect(ordered > 0, "searches without words walked a custom order")
    }

    /// The empty query's window from the shard's ``CustomOrder`` (built the
    /// second time the same data is searched without words) is the full
    /// ranking's: across a window's edge that falls inside a run of items
    /// tied on their values, with two identifiers equal as Strings (a
    /// precomposed and a decomposed é) whose order the ranking leaves open,
    /// under a filter, and after a write.
    @Test func theCustomOrdersWindowIsTheFullRankings() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        var items = (0..<300).map { i in
            item("t\(1000 + i)", domain: ["@alpha", "@beta"][i % 2], #"{"title": "tea", "rankingHint": \#(i % 3 == 0 ? 5 : 2)}"#)
        }
        items.append(item("t1050caf\u{E9}", domain: "@alpha", #"{"title": "tea", "rankingHint": 5}"#))
        items.append(item("t1050cafe\u{301}", domain: "@beta", #"{"title": "tea", "rankingHint": 5}"#))
        try w.put(items)
        try w.buildSuggestionIndex()
        defer {
            SharedColumns.shared.forget(path: w.path)
            PostingIndexes.shared.forget(path: w.path)
        }
        let reader = try openStore(dir, mode: .readOnly)
        var plans: [SearchPlan] = []
        for window in [1, 17, 18, 19, 20, 40] {
            plans.append(SearchPlan(words: [], customRanking: CustomRank.defaults, window: window))
            var filtered = SearchPlan(words: [], customRanking: CustomRank.defaults, window: window)
            filtered.filter = .domain(["@beta"])
            plans.append(filtered)
        }
        for round in 0..<2 {
            if round == 1 {
                try w.put([item("t0999", domain: "@beta", #"{"title": "tea", "rankingHint": 5}"#)])
                _ = try w.delete(ids: ["t1003"])
                try w.buildSuggestionIndex()
            }
            let full = try openStore(dir, mode: .readOnly)
            full.searchCache.searchesUseCustomWindow = false
            full.searchCache.sharesColumns = false
            for _ in 0..<2 {
                for plan in plans {
                    // (Uids compared as Strings: the two é are one, in either order.)
                    let a = try reader.search(plan), b = try full.search(plan)
                    #expect(a.hits.map(\.uniqueIdentifier) == b.hits.map(\.uniqueIdentifier), "round \(round), window \(plan.window)")
                    #expect(a.hits.map(\.rank) == b.hits.map(\.rank) && a.nbHits == b.nbHits)
                }
            }
        }
        #expect(reader.universeCache.customOrders.builds == 2, "one order a version of the data")
    }

    /// Between writes (new items, replacements under new ids, deletes), two
    /// long-lived readers patch their columns or take each other's
    /// (``SharedColumns``), and pick the window a fresh reader ranking
    /// every candidate picks.
    @Test func theColumnsWindowBetweenWritesIsTheFullRankings() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        try w.put(Self.items(400, seed: 83))
        let readers = try (0..<2).map { _ in try openStore(dir, mode: .readOnly) }
        defer {
            SharedColumns.shared.forget(path: w.path)
            PostingIndexes.shared.forget(path: w.path)
        }
        var rng = SplitMix(state: 89)
        var used = 0
        for round in 0..<6 {
            if round > 0 {
                let changed = Self.items(60, seed: 83 &+ UInt64(round))
                try w.put((0..<20).map { _ in changed[Int(rng.next() % 60)] })
                _ = try w.delete(ids: (0..<5).map { _ in "c\(rng.next() % 400)" })
            }
            // The window needs the identifiers' order a current index holds.
            try w.buildSuggestionIndex()
            let full = try openStore(dir, mode: .readOnly)
            full.searchCache.searchesUseCustomWindow = false
            full.searchCache.sharesColumns = false
            for plan in Self.plans(40, seed: 97 &+ UInt64(round)) {
                let expected = try full.search(plan)
                for r in readers {
                    #expect(try r.search(plan) == expected, "round \(round): \(plan.words) \(plan.customRanking)")
                }
            }
            used += readers.map(\.searchCache.customWindows).reduce(0, +)
        }
        #expect(used > 20)
        #expect(readers.map(\.universeCache.sortColumnPatches).reduce(0, +) >= 5, "patched, not read again")
    }
}
