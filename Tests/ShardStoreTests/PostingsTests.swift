import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// Suggestions' in-memory posting lists (``TermPostings``): the counts they
/// give must be the word index's own, on any data, and after any write.
@Suite struct PostingsTests {
    /// A few short words, so that prefixes have many completions and words share items.
    static let words = [
        "pa", "pal", "palm", "pan", "panda", "pandas", "par", "park", "pat", "path",
        "py", "pyt", "pytest", "python", "python3", "pyx", "ta", "tab", "table", "tap",
    ]

    static func randomItems(_ n: Int, seed: UInt64, domains: [String] = ["@alpha", "@beta", "@gamma"]) -> [JSONValue] {
        var rng = SplitMix(state: seed)
        return (0..<n).map { i in
            let title = (0..<(1 + Int(rng.next() % 4))).map { _ in words[Int(rng.next() % UInt64(words.count))] }
            let body = (0..<Int(rng.next() % 5)).map { _ in words[Int(rng.next() % UInt64(words.count))] }
            return item(
                "i\(i)", domain: domains[Int(rng.next() % UInt64(domains.count))],
                #"{"title": "\#(title.joined(separator: " "))", "contentDescription": "\#(body.joined(separator: " "))"}"#)
        }
    }

    /// What suggestions counted before the lists: one FTS5 query per
    /// completion, the items holding every word and alive.
    static func sqlCount(_ s: ShardStore, _ words: [String], domains: [String]? = nil) throws -> Int {
        let match = words.map { "\"" + $0 + "\"" }.joined(separator: " ")
        var sql = """
            SELECT count(*) FROM words JOIN items ON items.id = words.rowid
            WHERE words MATCH ?1 AND (items.expires IS NULL OR items.expires > ?2)
            """
        if let domains { sql += " AND items.domain IN (" + domains.map { "'\($0)'" }.joined(separator: ", ") + ")" }
        let q = try s.db.prepare(sql)
        try q.bind(match, at: 0)
        try q.bind(Date().timeIntervalSinceReferenceDate, at: 1)
        defer { try? q.reset() }
        return Int(try q.scalar()?.int64 ?? 0)
    }

    /// Every suggestion's count against the SQL count, and no completion
    /// with items left out (each completion of the prefix that finds any is
    /// offered when the limit allows all).
    static func check(_ s: ShardStore, earlier: [String], prefix: String, domains: [String]? = nil) throws {
        var plan = SearchPlan(words: earlier + [prefix])
        if let domains { plan.filter = .domain(domains) }
        let got = try s.suggest(plan, limit: 100)
        var want: [Suggestion] = []
        for w in Set(words) where w.hasPrefix(prefix) {
            let n = try sqlCount(s, earlier + [w], domains: domains)
            if n > 0 { want.append(Suggestion(text: (earlier + [w]).joined(separator: " "), count: n)) }
        }
        want.sort(by: Suggestion.precedes)
        #expect(got == want, "\(earlier) \(prefix) \(domains ?? [])")
    }

    @Test func countsAreTheWordIndexsOnRandomData() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put(Self.randomItems(400, seed: 5))
        for (earlier, prefix) in [
            (["python"], "pa"), (["pa"], "py"), (["table", "pa"], "p"), (["pan"], "t"),
            (["pytest"], "pyt"), (["nothing"], "p"), (["palm", "python3"], "ta"),
        ] {
            try Self.check(s, earlier: earlier, prefix: prefix)
            try Self.check(s, earlier: earlier, prefix: prefix, domains: ["@beta"])
        }
        // One word under a filter: every completion counted over the filter's items.
        for prefix in ["p", "pa", "pyt", "t", "x"] {
            try Self.check(s, earlier: [], prefix: prefix, domains: ["@alpha"])
            try Self.check(s, earlier: [], prefix: prefix, domains: ["@alpha", "@gamma"])
        }
    }

    /// Long lists not read yet are counted by FTS5 against the earlier
    /// words' items (here every list is long, and none is read ahead by a
    /// scan): the same counts.
    @Test func completionsCountedByFTS5AreTheSame() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put(Self.randomItems(400, seed: 11))
        s.searchCache.postings.directCountMinDocs = 0
        s.searchCache.postings.scanBudget = 0
        for (earlier, prefix) in [(["pytest", "palm"], "pa"), (["table", "pa", "py"], "p"), (["pandas", "tap"], "t")] {
            try Self.check(s, earlier: earlier, prefix: prefix)
            try Self.check(s, earlier: earlier, prefix: prefix, domains: ["@gamma"])
        }
    }

    @Test func anotherConnectionsWritesAndDeletesAreCountedAtOnce() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        try w.put(Self.randomItems(200, seed: 9))
        let r = try openStore(dir, mode: .readOnly)
        try Self.check(r, earlier: ["python"], prefix: "pa")
        try Self.check(r, earlier: [], prefix: "pa", domains: ["@alpha"])
        // New items holding both words, then deletions: the lists read
        // before must not be used again.
        try w.put((0..<7).map { item("new\($0)", domain: "@alpha", #"{"title": "python pandas"}"#) })
        try Self.check(r, earlier: ["python"], prefix: "pa")
        try Self.check(r, earlier: [], prefix: "pa", domains: ["@alpha"])
        let before = try r.suggest(SearchPlan(words: ["python", "pandas"]), limit: 1).first?.count ?? 0
        #expect(try w.delete(ids: (0..<7).map { "new\($0)" } + ["i1", "i2", "i3"]) >= 7)
        try Self.check(r, earlier: ["python"], prefix: "pa")
        try Self.check(r, earlier: [], prefix: "pa", domains: ["@alpha"])
        let after = try r.suggest(SearchPlan(words: ["python", "pandas"]), limit: 1).first?.count ?? 0
        #expect(after <= before - 7)
    }

    @Test func theConnectionsOwnWritesAreCountedAtOnce() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([item("a", domain: "@alpha", #"{"title": "python pandas"}"#)])
        #expect(try s.suggest(SearchPlan(words: ["python", "pa"]), limit: 5) == [Suggestion(text: "python pandas", count: 1)])
        // Its own commits leave `PRAGMA data_version` alone.
        try s.put([item("b", domain: "@alpha", #"{"title": "python pandas"}"#)])
        #expect(try s.suggest(SearchPlan(words: ["python", "pa"]), limit: 5) == [Suggestion(text: "python pandas", count: 2)])
        #expect(try s.suggest(SearchPlan(words: ["pa"], filter: .domain(["@alpha"])), limit: 5) == [Suggestion(text: "pandas", count: 2)])
        #expect(try s.delete(ids: ["a"]) == 1)
        #expect(try s.suggest(SearchPlan(words: ["python", "pa"]), limit: 5) == [Suggestion(text: "python pandas", count: 1)])
        #expect(try s.suggest(SearchPlan(words: ["pa"], filter: .domain(["@alpha"])), limit: 5) == [Suggestion(text: "pandas", count: 1)])
        try Self.check(s, earlier: ["python"], prefix: "p")
    }

    @Test func expiredItemsAreNotCounted() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item("a", #"{"title": "python pandas"}"#),
            item("b", expires: "2001-01-01T00:00:00Z", #"{"title": "python pandas"}"#),
        ])
        #expect(try s.suggest(SearchPlan(words: ["python", "pan"]), limit: 5) == [Suggestion(text: "python pandas", count: 1)])
        #expect(try s.suggest(SearchPlan(words: ["pan"], filter: .domain(["org.example"])), limit: 5) == [Suggestion(text: "pandas", count: 1)])
    }

    @Test func intersectionCountMatchesASetsOnRandomLists() {
        var rng = SplitMix(state: 3)
        for _ in 0..<300 {
            let n = Int(rng.next() % 700), m = Int(rng.next() % 3000)
            let range = UInt64(1 + rng.next() % 5000)
            let a = IDs.sortedUnique((0..<n).map { _ in Int64(rng.next() % range) })
            let b = IDs.sortedUnique((0..<m).map { _ in Int64(rng.next() % range) })
            let want = Set(a).intersection(b).count
            #expect(IDs.intersectionCount(a, b) == want)
            #expect(IDs.intersectionCount(b, a) == want)
            // The positions of the common ids, whichever list is the long one
            // (lengths from equal to hundreds of times apart).
            let shared = Set(a).intersection(b)
            #expect(IDs.intersect(a, b) == shared.sorted() && IDs.intersect(b, a) == shared.sorted())
            var pairs: [[Int]] = []
            IDs.common(a, b) { i, j in pairs.append([i, j]) }
            #expect(pairs == shared.sorted().map { [a.firstIndex(of: $0)!, b.firstIndex(of: $0)!] })
            // As bits (sets of 512 ids or more) and as a list.
            #expect(ItemSet(b).count(in: a) == want)
            #expect(ItemSet(a).count(in: b) == want)
            // ``IDBits``: the same sets, unions and intersections as the lists'.
            let x = IDBits(a), y = IDBits(b)
            #expect(x.ids == a && y.ids == b && x.count == a.count)
            #expect(x.intersection(y).ids == shared.sorted() && y.intersection(x).ids == shared.sorted())
            #expect(x.union(y).ids == IDs.union(a, b) && y.union(x).ids == IDs.union(a, b))
            #expect(IDBits.union([x, IDBits(), y]).ids == IDs.union(a, b))
            #expect(x.intersection(IDBits()).isEmpty && x.union(IDBits()) == x)
            let probe = Int64(rng.next() % (range + 70))
            #expect(x.contains(probe) == a.contains(probe) && !x.contains(-1))
        }
    }
}

/// A seeded generator, so a failure repeats.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
