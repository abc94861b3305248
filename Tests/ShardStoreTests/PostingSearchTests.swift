import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// Parameter search's word lookups from the in-memory ``PostingIndex``
/// (``PostingSearch``): the index's column masks must be FTS5's own, and a
/// search must answer exactly the same with the index as with FTS5 queries,
/// falling back to them whenever the index is not of the current data.
@Suite struct PostingSearchTests {
    static let words = [
        "pa", "pal", "palm", "pan", "panda", "pandas", "park", "parking", "parkings", "path",
        "pathfinder", "pathfinders", "python", "python3", "pytest", "table", "tables", "tablet",
        "café", "naïve", "ZeroMQ", "libFoo", "x86", "data-base", "editor", "editors",
    ]

    /// Random items whose words land in several columns (title, display
    /// name, description, keywords, and `section`, in the shared last
    /// column), at their starts or not; some deleted.
    static func store(_ dir: TempDir, seed: UInt64, count: Int = 300) throws -> ShardStore {
        let s = try openStore(dir)
        try s.put(randomItems(count, seed: seed))
        #expect(try s.delete(ids: ["i3", "i5", "i8"]) == 3)
        return s
    }

    static func randomItems(_ n: Int, seed: UInt64, prefix: String = "i") -> [JSONValue] {
        var rng = SplitMix(state: seed)
        func text(_ most: Int) -> String {
            (0..<Int(rng.next() % UInt64(most + 1))).map { _ in words[Int(rng.next() % UInt64(words.count))] }.joined(separator: " ")
        }
        return (0..<n).map { i in
            let keywords = (0..<Int(rng.next() % 3)).map { _ in "\"" + text(2) + "\"" }.joined(separator: ", ")
            return item(
                "\(prefix)\(i)", domain: ["@alpha", "@beta"][Int(rng.next() % 2)],
                #"{"title": "\#(text(3))", "displayName": "\#(text(3))", "contentDescription": "\#(text(6))", "keywords": [\#(keywords)], "section": "\#(text(2))", "size": \#(rng.next() % 100)}"#
            )
        }
    }

    @Test func masksAreFTS5sOnRandomData() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 31)
        try s.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: s.path) }
        let index = try #require(try PostingIndexTests.held(s))
        let match = try s.db.prepare("SELECT rowid FROM words WHERE words MATCH ?1 ORDER BY rowid")
        func fts(_ q: String) throws -> [Int64] {
            try match.bind(q, at: 0)
            defer { try? match.reset() }
            return try match.map { $0.int64(at: 0) }
        }
        var starts = 0
        for i in 0..<index.terms.count {
            let term = index.terms.term(i)
            let ids = index.list(i), masks = index.masks(i)
            #expect(ids.count == masks.count)
            for c in 0..<Layout.wordColumnCount {
                let inColumn = try fts("{c\(c)} : " + ShardStore.ftsQuote(term))
                let atStart = try fts("{c\(c)} : ^" + ShardStore.ftsQuote(term))
                #expect(zip(ids, masks).filter { $0.1 & (1 << c) != 0 }.map(\.0) == inColumn, "\(term) c\(c)")
                #expect(zip(ids, masks).filter { $0.1 & (1 << (16 + c)) != 0 }.map(\.0) == atStart, "\(term) ^c\(c)")
                starts += atStart.count
            }
            // No bit past the columns.
            #expect(masks.allSatisfy { $0 & ~(0x1FF | 0x1FF << 16) == 0 })
        }
        #expect(starts > 0 && index.maxID > 0)
        // The slower read, taking each instance's term, reads the same masks.
        let slow = try #require(try s.db.transaction(.deferred) { try PostingIndex(db: s.db, termsWithInstances: true) })
        for i in 0..<index.terms.count { #expect(slow.masks(i) == index.masks(i)) }
    }

    /// A match's masks, looked up through a table by id or by merging each
    /// list with the matches, are the same, for random sets of terms and of
    /// items (some holding none of the terms, some deleted, some past every id).
    @Test func masksByTableAndByMergeAgree() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 37)
        try s.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: s.path) }
        let search = PostingSearch(index: try #require(try PostingIndexTests.held(s)))
        var rng = SplitMix(state: 41)
        var bits = 0
        for _ in 0..<200 {
            let terms = (0..<(1 + Int(rng.next() % 4))).map { _ in Int(rng.next() % UInt64(search.index.terms.count)) }
            let items = (-2...Int64(search.index.maxID + 3)).filter { _ in rng.next() % 3 == 0 }
            let table = search.masks(of: items, terms, sparse: false)
            #expect(search.masks(of: items, terms, sparse: true) == table, "\(terms)")
            bits += table.filter { $0 != 0 }.count
        }
        #expect(bits > 1000)
    }

    /// A word of random length from the list, misspelt, cut short or in
    /// capitals now and then.
    static func queryWord(_ rng: inout SplitMix) -> String {
        var w = Array(words[Int(rng.next() % UInt64(words.count))])
        switch rng.next() % 6 {
        case 0 where w.count > 4: w.remove(at: Int(rng.next() % UInt64(w.count)))
        case 1 where w.count > 4: let k = Int(rng.next() % UInt64(w.count - 1)); w.swapAt(k, k + 1)
        case 2 where w.count > 3: w = Array(w.prefix(2 + Int(rng.next() % UInt64(w.count - 2))))
        case 3: w[0] = Character(w[0].uppercased())
        default: break
        }
        return String(w)
    }

    static func randomPlans(_ n: Int, seed: UInt64) -> [SearchPlan] {
        var rng = SplitMix(state: seed)
        let attributeSets: [[String]] = [
            [], ["title"], ["contentDescription", "title"], ["keywords", "displayName"],
            ["section"], ["title", "section", "displayName"], ["title,displayName", "unordered(contentDescription)"],
            ["unordered(keywords)", "title"],
        ]
        // Reordered rankings, sorts among them (``RankCriterion``), now and then.
        let rankings: [[RankCriterion]] = [
            RankCriterion.algolia, [.attribute, .typo, .exact, .custom], [.sort(CustomRank(attribute: "size", ascending: false)), .typo],
            [.exact, .proximity, .typo], [.typo, .custom, .attribute], [.custom, .sort(CustomRank(attribute: "size", ascending: true))],
        ]
        let plans = (0..<n).map { _ in
            let words = (0..<(1 + Int(rng.next() % 2))).map { _ in queryWord(&rng) }
            var plan = SearchPlan(
                words: words, prefixLast: rng.next() % 3 != 0,
                typos: TypoPolicy(enabled: rng.next() % 5 != 0),
                searchableAttributes: attributeSets[Int(rng.next() % UInt64(attributeSets.count))],
                window: [1, 3, 10, 20, 200][Int(rng.next() % 5)])
            if rng.next() % 4 == 0 { plan.filter = .domain(["@beta"]) }
            if rng.next() % 4 == 0 { plan.facets = ["section"] }
            if rng.next() % 3 == 0 { plan.ranking = rankings[Int(rng.next() % UInt64(rankings.count))] }
            if rng.next() % 5 == 0 { plan.distinct = DistinctPlan(attribute: "section", count: 1 + Int(rng.next() % 2)) }
            return plan
        }
        return ForwardIndexTests.withAlternatives(plans, seed: seed, words: words)
    }

    /// Two readers of one shard, one taking the index and one FTS5, answer
    /// random plans identically, and the first did use the index.
    @Test func searchesWithAndWithoutTheIndexAgree() throws {
        for seed in [41, 43, 47] as [UInt64] {
            let dir = TempDir()
            _ = try Self.store(dir, seed: seed)
            let indexed = try openStore(dir, mode: .readOnly)
            let plain = try openStore(dir, mode: .readOnly)
            plain.searchCache.searchesUsePostingIndex = false
            try indexed.buildSuggestionIndex()
            defer { PostingIndexes.shared.forget(path: indexed.path) }
            var found = 0
            for plan in Self.randomPlans(150, seed: seed) {
                // Other suites' indexes, read in parallel, can push this one
                // out of the process's few: read it again then.
                if try PostingIndexTests.held(indexed) == nil { try indexed.buildSuggestionIndex() }
                let a = try indexed.search(plan), b = try plain.search(plan)
                #expect(a == b, "\(plan.words) \(plan.searchableAttributes) \(plan.window) \(plan.ranking ?? [])")
                found += a.hits.count
            }
            #expect(found > 500)
            #expect(indexed.searchCache.postingSearches == 150 && plain.searchCache.postingSearches == 0)
        }
    }

    /// Matches that tie on every criterion are ordered by unique identifier,
    /// with the index (by ``ItemOrder``'s places) as without it (by reading
    /// the identifiers): inserted in an order unlike theirs, with numbers
    /// that sort as text ("t10" before "t2") and letters past ASCII.
    @Test func tiesAreOrderedByIdentifierWithTheIndexToo() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        var rng = SplitMix(state: 61)
        var uids = (0..<120).map { "t\($0)" } + ["Ünter", "über", "zeta", "Zeta", "é1", "e\u{301}2", "a"]
        for k in stride(from: uids.count - 1, to: 0, by: -1) { uids.swapAt(k, Int(rng.next() % UInt64(k + 1))) }
        try w.put(uids.map { item($0, #"{"title": "pandas table"}"#) })
        let indexed = try openStore(dir, mode: .readOnly)
        let plain = try openStore(dir, mode: .readOnly)
        plain.searchCache.searchesUsePostingIndex = false
        try indexed.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: indexed.path) }
        // (Windows of a quarter of the matches or more sort them whole.)
        for (words, window) in [(["pandas"], 7), (["table"], 30), (["pandas", "tab"], 12), (["pandas", "tab"], 40), (["panda"], 200)] {
            let plan = SearchPlan(words: words, window: window)
            let a = try indexed.search(plan), b = try plain.search(plan)
            #expect(a == b, "\(words) \(window)")
            #expect(a.hits.map(\.uniqueIdentifier) == Array(uids.sorted().prefix(window)), "\(words) \(window)")
        }
        #expect(indexed.searchCache.postingSearches == 5)
    }

    /// Without a posting index (an empty query takes none), a search that
    /// ties thousands of matches orders them by the connection's own
    /// ``ItemOrder``, read once and kept while the data is unchanged: an
    /// item written since, by the same connection or another, is in the
    /// next answer at its place.
    @Test func emptyQueriesOrderTiesByIdentifierAfterWritesToo() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        var rng = SplitMix(state: 67)
        var uids = (0..<2_500).map { "e\($0)" }
        for k in stride(from: uids.count - 1, to: 0, by: -1) { uids.swapAt(k, Int(rng.next() % UInt64(k + 1))) }
        try w.put(uids.map { item($0, #"{"title": "same"}"#) })
        let r = try openStore(dir, mode: .readOnly)
        let plan = SearchPlan(words: [], window: 25)
        let first = try r.search(plan)
        #expect(first.nbHits == 2_500)
        #expect(first.hits.map(\.uniqueIdentifier) == Array(uids.sorted().prefix(25)))
        // Another connection's commit, then this connection's own write.
        try w.put([item("a-other", #"{"title": "same"}"#)])
        let second = try r.search(plan)
        #expect(second.hits.first?.uniqueIdentifier == "a-other" && second.nbHits == 2_501)
        try w.put([item("a-own", #"{"title": "same"}"#)])
        #expect(try w.search(plan).hits.prefix(2).map(\.uniqueIdentifier) == ["a-other", "a-own"])
        try w.db.transaction(.immediate) {
            try w.put([item("a-inside", #"{"title": "same"}"#)])
            #expect(try w.search(plan).hits.prefix(3).map(\.uniqueIdentifier) == ["a-inside", "a-other", "a-own"])
        }
        #expect(r.searchCache.itemOrder != nil)
        // Items with custom values come first, by them, whatever their
        // identifiers; the rest after, by identifier.
        try w.put([
            item("zz-hint-2", #"{"title": "same", "rankingHint": 2}"#), item("zz-hint-9", #"{"title": "same", "rankingHint": 9}"#),
            item("zz-downloads", #"{"title": "same", "downloads": 5}"#),
        ])
        let hinted = try r.search(plan).hits.prefix(4).map(\.uniqueIdentifier)
        #expect(hinted == ["zz-hint-9", "zz-hint-2", "a-inside", "a-other"])
        var byDownloads = plan
        byDownloads.customRanking = [CustomRank(attribute: "downloads", ascending: false)]
        #expect(try r.search(byDownloads).hits.prefix(3).map(\.uniqueIdentifier) == ["zz-downloads", "a-inside", "a-other"])
    }

    /// Typos, then exact words, as Algolia ranks them, whatever the
    /// identifiers, with the index and without: the word itself and a
    /// prefix of it are no typo, the word beside a misspelling of it is no
    /// typo either (its fewest), and the word itself beats a longer word it
    /// begins.
    @Test func typosThenExactWordsDecideTheOrder() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        try w.put([
            item("a-typo", #"{"title": "pandaz library"}"#), item("m-prefix", #"{"title": "pandas3 library"}"#),
            item("z-exact", #"{"title": "pandas library"}"#), item("b-both", #"{"title": "pandas pandaz"}"#),
            item("c-none", #"{"title": "library"}"#),
        ])
        let indexed = try openStore(dir, mode: .readOnly)
        let plain = try openStore(dir, mode: .readOnly)
        plain.searchCache.searchesUsePostingIndex = false
        try indexed.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: indexed.path) }
        for store in [indexed, plain] {
            let r = try store.search(SearchPlan(words: ["pandas"], window: 10))
            #expect(r.hits.map(\.uniqueIdentifier) == ["b-both", "z-exact", "m-prefix", "a-typo"])
            #expect(r.hits.map(\.rank.typos) == [0, 0, 0, 1] && r.hits.map(\.rank.exactWords) == [1, 1, 0, 0])
        }
        #expect(indexed.searchCache.postingSearches == 1 && plain.searchCache.postingSearches == 0)
    }

    /// Another connection's commit retires the index at once: the next
    /// search takes FTS5 and finds the new items; inside a caller's
    /// transaction, its writes not yet committed are found too.
    @Test func fallsBackAfterAnotherConnectionsWrite() throws {
        let dir = TempDir()
        let w = try Self.store(dir, seed: 53)
        let r = try openStore(dir, mode: .readOnly)
        let plain = try openStore(dir, mode: .readOnly)
        plain.searchCache.searchesUsePostingIndex = false
        try r.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: r.path) }
        let plan = SearchPlan(words: ["pathfinder"], window: 400)
        let before = try r.search(plan)
        #expect(r.searchCache.postingSearches == 1)
        #expect(!before.hits.contains { $0.uniqueIdentifier.hasPrefix("new") })
        try w.put(Self.randomItems(40, seed: 59, prefix: "new") + [item("new-start", #"{"title": "pathfinder first"}"#)])
        #expect(try w.delete(ids: ["i1", "i2"]) == 2)
        let after = try r.search(plan)
        #expect(r.searchCache.postingSearches == 1)
        #expect(after == (try plain.search(plan)))
        #expect(after.hits.contains { $0.uniqueIdentifier == "new-start" } && after.nbHits != before.nbHits)
        #expect(!after.hits.contains { $0.uniqueIdentifier == "i1" || $0.uniqueIdentifier == "i2" })
        // Read again, the index serves the new data.
        try r.buildSuggestionIndex()
        #expect(try r.search(plan) == after)
        #expect(r.searchCache.postingSearches == 2)
        // The writer's own transaction: its uncommitted items are found, without the index.
        try w.buildSuggestionIndex()
        try w.db.transaction(.immediate) {
            try w.put([item("uncommitted", #"{"title": "pathfinder"}"#)])
            let inside = try w.search(plan)
            #expect(inside.hits.contains { $0.uniqueIdentifier == "uncommitted" } && inside.nbHits == after.nbHits + 1)
            #expect(w.searchCache.postingSearches == 0)
        }
    }
}
