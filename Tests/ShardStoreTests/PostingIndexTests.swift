import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// The shard's every posting list read in one pass (``PostingIndex``): its
/// lists must be the word index's own, suggestions counted with it the same
/// as SQL's, and it must never be used once the data has changed.
@Suite struct PostingIndexTests {
    /// Random items with a few accented and numeric words beside
    /// ``PostingsTests/words``, some deleted.
    static func store(_ dir: TempDir, seed: UInt64) throws -> ShardStore {
        let s = try openStore(dir)
        var items = PostingsTests.randomItems(300, seed: seed)
        items += (0..<20).map { item("x\($0)", domain: "@beta", #"{"title": "Café naïve \#($0 % 7) python", "keywords": ["zz\#($0)"]}"#) }
        try s.put(items)
        #expect(try s.delete(ids: ["i3", "i5", "i8", "x2", "x4"]) == 5)
        return s
    }

    /// The index of `s`'s data, if one is held.
    static func held(_ s: ShardStore) throws -> PostingIndex? {
        PostingIndexes.shared.index(path: s.path, key: try PostingIndex.key(s.db))
    }

    /// FTS5's string syntax: a quote inside is doubled, anything else is kept.
    @Test func ftsStringsDoubleTheirQuotes() {
        #expect(ShardStore.ftsQuote("vim") == "\"vim\"")
        #expect(ShardStore.ftsQuote("say\"hi\"") == "\"say\"\"hi\"\"\"")
        #expect(ShardStore.ftsQuote("\"") == "\"\"\"\"")
        #expect(ShardStore.ftsQuote("émile\"€") == "\"émile\"\"€\"")
        #expect(ShardStore.ftsQuote("") == "\"\"")
    }

    /// The ids whose bits are set, ascending.
    static func setBits(_ words: UnsafeBufferPointer<UInt64>) -> [Int64] {
        var ids: [Int64] = []
        for (k, word) in words.enumerated() {
            for bit in 0..<64 where word & (1 << UInt64(bit)) != 0 { ids.append(Int64(k * 64 + bit)) }
        }
        return ids
    }

    @Test func listsAreTheWordIndexsOnRandomData() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 21)
        let read = try s.buildSuggestionIndex()
        let index = try #require(try Self.held(s))
        try s.db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_vocab USING fts5vocab(main, 'words', 'row')")
        let rows = try s.db.prepare("SELECT term, doc FROM temp.words_vocab").map { ($0.string(at: 0) ?? "", $0.int(at: 1)) }
        #expect(rows.count == index.terms.count)
        #expect(read.terms == rows.count)
        var total = 0
        let match = try s.db.prepare("SELECT rowid FROM words WHERE words MATCH ?1 ORDER BY rowid")
        for (i, (term, docs)) in rows.enumerated() {
            #expect(index.terms.term(i) == term)
            try match.bind(ShardStore.ftsQuote(term), at: 0)
            let want = try match.map { $0.int64(at: 0) }
            try match.reset()
            #expect(index.list(i) == want, "\(term)")
            #expect(index.list(term) == want, "\(term)")
            #expect(Int(index.terms.docs[i]) == docs && want.count == docs, "\(term)")
            total += want.count
        }
        #expect(read.ids == total && index.entries == total)
        // The lists longer than a bitmap of the shard's ids has words are
        // held as that bitmap too, holding exactly their ids.
        var bitmaps = 0
        for i in 0..<index.terms.count {
            let held: [Int64]? = index.withBitmap(i) { words in words.map(Self.setBits) }
            #expect((held != nil) == (index.list(i).count > index.denseStride), "\(index.terms.term(i))")
            if let held {
                bitmaps += 1
                #expect(held == index.list(i), "\(index.terms.term(i))")
            }
        }
        #expect(bitmaps > 5 && bitmaps < index.terms.count / 2, "\(bitmaps) of \(index.terms.count)")
        // The slower read, taking each instance's term, reads the same.
        let slow = try #require(try s.db.transaction(.deferred) { try PostingIndex(db: s.db, termsWithInstances: true) })
        #expect(slow.terms.count == index.terms.count && slow.entries == index.entries && slow.key == index.key)
        for i in 0..<index.terms.count {
            #expect(slow.terms.term(i) == index.terms.term(i) && slow.list(i) == index.list(i))
        }
        // Past its limit on ids, no index.
        #expect(try s.db.transaction(.deferred) { try PostingIndex(db: s.db, maxEntries: total - 1) } == nil)
        #expect(try s.db.transaction(.deferred) { try PostingIndex(db: s.db, maxEntries: total - 1, termsWithInstances: true) } == nil)
        #expect(rows.contains { $0.0 == "cafe" })
        #expect(index.list("nosuchterm").isEmpty && index.index(of: "pyth") == nil && index.index(of: "python") != nil)
    }

    /// Suggestions served from the index count as SQL does, with and
    /// without a filter, one word and several.
    @Test func suggestionsWithTheIndexAreSQLs() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 23)
        try s.buildSuggestionIndex()
        let uses = s.searchCache.postings.sharedUses
        for (earlier, prefix) in [
            (["python"], "pa"), (["pa"], "py"), (["table", "pa"], "p"), (["pan"], "t"),
            (["pytest"], "pyt"), (["nothing"], "p"), (["palm", "python3"], "ta"), (["cafe"], "p"),
        ] {
            try PostingsTests.check(s, earlier: earlier, prefix: prefix)
            try PostingsTests.check(s, earlier: earlier, prefix: prefix, domains: ["@beta"])
        }
        for prefix in ["p", "pa", "pyt", "t", "x", "python"] {
            try PostingsTests.check(s, earlier: [], prefix: prefix, domains: ["@alpha"])
            try PostingsTests.check(s, earlier: [], prefix: prefix, domains: ["@alpha", "@beta"])
        }
        // The text's last word complete: itself only, counted.
        var plan = SearchPlan(words: ["pa"])
        plan.prefixLast = false
        plan.filter = .domain(["@alpha"])
        let n = try PostingsTests.sqlCount(s, ["pa"], domains: ["@alpha"])
        #expect(try s.suggest(plan, limit: 10) == (n > 0 ? [Suggestion(text: "pa", count: n)] : []))
        // 8 × 2 with several words and 6 × 2 + 1 with one word under a filter.
        #expect(s.searchCache.postings.sharedUses - uses == 29)
    }

    /// Another connection's writes and deletes, and the reading connection's
    /// own, retire the index at once: counts stay SQL's.
    @Test func writesOfEitherConnectionRetireIt() throws {
        let dir = TempDir()
        let w = try Self.store(dir, seed: 25)
        let r = try openStore(dir, mode: .readOnly)
        try r.buildSuggestionIndex()
        let key = try PostingIndex.key(r.db)
        try PostingsTests.check(r, earlier: ["python"], prefix: "pa")
        #expect(r.searchCache.postings.sharedUses == 1)
        try w.put((0..<7).map { item("new\($0)", domain: "@alpha", #"{"title": "python pandas"}"#) })
        #expect(try PostingIndex.key(r.db) != key)
        try PostingsTests.check(r, earlier: ["python"], prefix: "pa")
        try PostingsTests.check(r, earlier: [], prefix: "pa", domains: ["@alpha"])
        try r.buildSuggestionIndex()
        try PostingsTests.check(r, earlier: ["python"], prefix: "pa")
        let key2 = try PostingIndex.key(r.db)
        #expect(try w.delete(ids: (0..<7).map { "new\($0)" } + ["i1"]) == 8)
        #expect(try PostingIndex.key(r.db) != key2)
        try PostingsTests.check(r, earlier: ["python"], prefix: "pa")
        try PostingsTests.check(r, earlier: [], prefix: "pa", domains: ["@alpha"])
        // The writer's own connection, with an index of its data.
        try w.buildSuggestionIndex()
        try PostingsTests.check(w, earlier: ["python"], prefix: "pa")
        try w.put([item("own", domain: "@alpha", #"{"title": "python pandas palm"}"#)])
        try PostingsTests.check(w, earlier: ["python"], prefix: "pa")
        try PostingsTests.check(w, earlier: [], prefix: "pa", domains: ["@alpha"])
    }

    /// Within a caller's transaction, writes not committed yet are counted.
    @Test func notUsedInsideACallersTransaction() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 27)
        try s.buildSuggestionIndex()
        try s.db.transaction(.immediate) {
            try s.put((0..<5).map { item("t\($0)", domain: "@alpha", #"{"title": "python pandas"}"#) })
            try PostingsTests.check(s, earlier: ["python"], prefix: "pa")
            try PostingsTests.check(s, earlier: [], prefix: "pan", domains: ["@alpha"])
        }
    }

    /// A suggestion that finds no index of the current data starts reading
    /// one in the background; once read, suggestions use it.
    @Test func aSuggestionStartsABackgroundRead() async throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 29)
        #expect(try Self.held(s) == nil)
        _ = try s.suggest(SearchPlan(words: ["python", "pa"]), limit: 5)
        // Up to two minutes: the read is about a second of CPU here, but the
        // whole suite runs beside it on two cores (CI once waited 60 s in
        // vain). Other suites' indexes, read in parallel, can push this one
        // out of the process's few (``PostingIndexes/maxFiles``) between two
        // looks, so it is used as soon as it is seen held, and looked for
        // again (suggesting again starts another read) when it went first.
        let end = Date().addingTimeInterval(120)
        var seen = false
        var used = false
        while !used, Date() < end {
            if try Self.held(s) != nil {
                seen = true
                let uses = s.searchCache.postings.sharedUses
                try PostingsTests.check(s, earlier: ["python"], prefix: "pa")
                used = s.searchCache.postings.sharedUses == uses + 1
            } else {
                _ = try s.suggest(SearchPlan(words: ["python", "pa"]), limit: 5)
            }
            if !used { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(seen, "no background read finished")
        #expect(used, "suggestions did not use the index read")
        withExtendedLifetime(dir) {}
    }
}

/// ``Vocabulary/mostFrequent(prefix:prefixLast:_:)`` picks what sorting every
/// completion would: by count, ties in String order (accents composed and
/// not, where that order is not the bytes').
@Suite struct MostFrequentTests {
    @Test func sameAsSortingEveryCompletion() {
        var rng = SplitMix(state: 41)
        let letters = ["a", "b", "e", "é", "e\u{301}", "z"]
        var words = Set<[UInt8]>()
        for _ in 0..<600 {
            let w = (0..<(1 + Int(rng.next() % 4))).map { _ in letters[Int(rng.next() % UInt64(letters.count))] }.joined()
            words.insert(Array(w.utf8))
        }
        let sorted = words.sorted { $0.lexicographicallyPrecedes($1) }
        let v = Vocabulary()
        var all: [(term: String, docs: Int)] = []
        for w in sorted {
            let n = 1 + Int(rng.next() % 4)
            v.append(bytes: w, docs: n)
            all.append((String(decoding: w, as: UTF8.self), n))
        }
        for prefix in ["", "a", "b", "e", "é", "e\u{301}", "ab", "zz", "q"] {
            for k in [0, 1, 3, 10, 40, 1000] {
                var want = all.filter { Array($0.term.utf8).starts(with: Array(prefix.utf8)) }
                want.sort { $0.docs != $1.docs ? $0.docs > $1.docs : $0.term < $1.term }
                let got = v.mostFrequent(prefix: prefix, k)
                #expect(got.map(\.term) == want.prefix(k).map(\.term) && got.map(\.docs) == want.prefix(k).map(\.docs), "\(prefix) \(k)")
            }
            let exact = v.mostFrequent(prefix: prefix, prefixLast: false, 5)
            let want = all.filter { Array($0.term.utf8) == Array(prefix.utf8) }
            #expect(exact.map(\.term) == want.map(\.term) && exact.map(\.docs) == want.map(\.docs), "\(prefix)")
        }
    }
}
