import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// The structures that keep parameter search fast give the answers the
/// definitions give: one-typo lookups against the edit distance, facet
/// counts against a count of the data written, and the ASCII scan against
/// the tokenizer on text with many near misses.
@Suite struct SearchSpeedTests {
    /// `fuzzy` with one typo takes the split-word path from four bytes on:
    /// the same terms, distances and order as checking every term, including
    /// transpositions across the cut and words whose cut falls inside a
    /// two-byte character.
    @Test func oneTypoLookupAgreesWithEveryTermChecked() {
        var rng = SplitMix64(state: 41)
        let letters = ["a", "b", "c", "d", "é", "ab", "ba"]
        func word(_ n: Int) -> String { (0..<n).map { _ in letters[Int(rng.next() % UInt64(letters.count))] }.joined() }
        var terms = Set<String>()
        for _ in 0..<1500 { terms.insert(word(2 + Int(rng.next() % 7))) }
        // Every neighbour of a few words, so that each kind of edit is present.
        let seeds =
            (0..<20).map { _ in word(5 + Int(rng.next() % 3)) }
            + (0..<10).map { _ in (0..<4).map { _ in ["a", "b", "c", "d"][Int(rng.next() % 4)] }.joined() }  // 4 bytes: a 2-byte second half
        for s in seeds {
            let b = Array(s.utf8)
            for i in 0..<b.count {
                var d = b; d.remove(at: i); terms.insert(String(decoding: d, as: UTF8.self))
                if i + 1 < b.count { var t = b; t.swapAt(i, i + 1); terms.insert(String(decoding: t, as: UTF8.self)) }
                var sub = b; sub[i] = 0x7A; terms.insert(String(decoding: sub, as: UTF8.self))
                var ins = b; ins.insert(0x79, at: i); terms.insert(String(decoding: ins, as: UTF8.self))
            }
        }
        let sorted = terms.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let v = Vocabulary()
        for t in sorted { v.append(t, docs: 1) }
        for q in seeds + (0..<300).map({ _ in word(3 + Int(rng.next() % 6)) }) where q.utf8.count >= 4 {
            let got = v.fuzzy(q, maxTypos: 1).map { "\(v.term($0.term)) \($0.typos)" }
            let want = sorted.compactMap { t in Typos.distance(Array(q.utf8), Array(t.utf8), max: 1).map { "\(t) \($0)" } }
            #expect(got == want, "\(q)")
        }
    }

    /// `fuzzy` with two typos takes the three-piece path from eight bytes on:
    /// the same terms, distances and order as checking every term, on a
    /// vocabulary holding many neighbours one and two edits away of each
    /// kind (swaps across either cut, edits in the first and last pieces
    /// together, a two-byte character cut in half), and on random words.
    @Test func twoTypoLookupAgreesWithEveryTermChecked() {
        var rng = SplitMix64(state: 77)
        let letters = ["a", "b", "c", "d", "é", "ab", "ba"]
        func word(_ n: Int) -> String { (0..<n).map { _ in letters[Int(rng.next() % UInt64(letters.count))] }.joined() }
        func edit(_ b: [UInt8]) -> [UInt8] {
            guard !b.isEmpty else { return [0x61] }
            let i = Int(rng.next() % UInt64(b.count))
            var t = b
            switch rng.next() % 4 {
            case 0: t.remove(at: i)
            case 1: if i + 1 < t.count { t.swapAt(i, i + 1) } else { t.swapAt(i - 1, i) }
            case 2: t[i] = [0x61, 0x62, 0x7A, 0xC3, 0xA9][Int(rng.next() % 5)]
            default: t.insert([0x61, 0x79, 0xC3][Int(rng.next() % 3)], at: i)
            }
            return t
        }
        var terms = Set<String>()
        for _ in 0..<1500 { terms.insert(word(3 + Int(rng.next() % 9))) }
        let seeds = (0..<40).map { _ in word(8 + Int(rng.next() % 6)) }
        for s in seeds {
            let b = Array(s.utf8)
            for _ in 0..<60 { terms.insert(String(decoding: edit(edit(b)), as: UTF8.self)) }
            for _ in 0..<20 { terms.insert(String(decoding: edit(b), as: UTF8.self)) }
            for _ in 0..<10 { terms.insert(String(decoding: edit(edit(edit(b))), as: UTF8.self)) }
        }
        let sorted = terms.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let v = Vocabulary()
        for t in sorted { v.append(t, docs: 1) }
        var compared = 0, matches = 0
        for q in seeds + (0..<200).map({ _ in word(6 + Int(rng.next() % 6)) }) where q.utf8.count >= 8 {
            let got = v.fuzzy(q, maxTypos: 2).map { "\(v.term($0.term)) \($0.typos)" }
            let want = sorted.compactMap { t in Typos.distance(Array(q.utf8), Array(t.utf8), max: 2).map { "\(t) \($0)" } }
            #expect(got == want, "\(q)")
            compared += 1
            matches += want.count
        }
        #expect(compared > 150 && matches > 1000, "too few cases to mean anything: \(compared) words, \(matches) matches")
    }

    /// Facet counts and stats over random items (lists with repeated values
    /// included) equal a count of what was written, on one reading
    /// connection kept across writes and deletes: its facet columns must
    /// follow every change.
    @Test func facetCountsFollowWritesAndDeletes() throws {
        let dir = TempDir()
        let writer = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        var rng = SplitMix64(state: 5)
        let sections = ["utils", "libs", "net", "doc"]
        let tags = ["red", "green", "blue", "cyan"]
        // What each stored item holds: section, tags (distinct), size.
        var data: [String: (section: String, tags: Set<String>, size: Double)] = [:]
        var next = 0
        func write(_ n: Int) throws {
            var items: [JSONValue] = []
            for _ in 0..<n {
                let id = "i\(next)"
                next += 1
                let section = sections[Int(rng.next() % 4)]
                let t = (0..<Int(rng.next() % 4)).map { _ in tags[Int(rng.next() % 4)] }
                let size = Double(rng.next() % 50)
                let tagList = t.map { "\"\($0)\"" }.joined(separator: ", ")
                items.append(item(id, #"{"title": "widget \#(id)", "section": "\#(section)", "tags": [\#(tagList)], "size": \#(Int(size))}"#))
                data[id] = (section, Set(t), size)
            }
            try writer.put(items)
        }
        func check(_ when: String) throws {
            let r = try reader.search(SearchPlan(words: ["widget"], facets: ["section", "tags", "size"], window: 1))
            var sectionCounts: [String: Int] = [:], tagCounts: [String: Int] = [:]
            for d in data.values {
                sectionCounts[d.section, default: 0] += 1
                for t in d.tags { tagCounts[t, default: 0] += 1 }
            }
            #expect(r.nbHits == data.count, "\(when)")
            #expect(r.facets["section"] == sectionCounts, "\(when)")
            #expect(r.facets["tags"] == tagCounts, "\(when)")
            let sizes = data.values.map(\.size)
            #expect(r.facetStats["size"] == FacetStats(min: sizes.min()!, max: sizes.max()!, sum: sizes.reduce(0, +), count: sizes.count), "\(when)")
            // A refinement: the matching set is a part of the column.
            let refined = try reader.search(SearchPlan(words: ["widget"], filter: text("section", "net", "cd"), facets: ["tags"], window: 1))
            var refinedTags: [String: Int] = [:]
            for d in data.values where d.section == "net" { for t in d.tags { refinedTags[t, default: 0] += 1 } }
            #expect(refined.facets["tags"] == refinedTags, "\(when)")
        }
        try write(300)
        try check("first")
        try write(40)
        try check("after a write")
        let gone = data.keys.sorted().prefix(120)
        #expect(try writer.delete(ids: Array(gone)) == gone.count)
        for id in gone { data[id] = nil }
        try check("after a delete")
        // Rewriting an item changes its values in place.
        #expect(data["i250"] != nil)
        next = 250
        try write(1)
        next = 340
        try check("after a rewrite")
    }

    /// The ASCII scan agrees with the tokenizer and `WordMatch` on values
    /// full of near misses (the letter-mask test skips the edit distance
    /// only where it must fail).
    @Test func asciiScanAgreesOnNearMisses() {
        var rng = SplitMix64(state: 99)
        let alphabet = Array("abcdeABCDE9".utf8)
        func token() -> String {
            String(decoding: (0..<(1 + Int(rng.next() % 9))).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }, as: UTF8.self)
        }
        for _ in 0..<2000 {
            let value = (0..<Int(rng.next() % 8)).map { _ in token() }.joined(separator: rng.next() % 3 == 0 ? "-" : " ")
            let query = (0..<(1 + Int(rng.next() % 2))).map { _ in token().lowercased() }
            let policy = TypoPolicy(enabled: true, minWordSizeForOneTypo: 2, minWordSizeForTwoTypos: 5)
            let prefixLast = rng.next() % 2 == 0
            let matcher = SearchWordMatcher(words: query, prefixLast: prefixLast, policy: policy)
            var fast = Set<[Int]>()
            _ = matcher.scan(value) { fast.insert([$0, $1]) }
            var slow = Set<[Int]>()
            for t in SearchTokens.tokens(value) {
                for (w, word) in query.enumerated() {
                    let isLast = prefixLast && w == query.count - 1
                    if WordMatch.of(word: word, token: t.folded, isLast: isLast, policy: policy) != nil { slow.insert([w, t.position]) }
                }
            }
            #expect(fast == slow, "\(query) in \(value)")
        }
    }

    /// The candidates kept for the window, sorted (in full, and as
    /// ``SearchRun/windowOrder`` orders them), start as every candidate
    /// sorted does: ranks drawn from few values (so ties are many), custom
    /// values missing or not, windows smaller and larger than the candidates.
    @Test func theWindowSelectionKeepsTheBestAndTheirTies() {
        var rng = SplitMix64(state: 17)
        let plan = SearchPlan(words: ["a", "b"])
        for round in 0..<300 {
            let n = Int(rng.next() % 200)
            let ranks = (0..<n).map { _ -> SearchRank in
                let hint: JSONValue = rng.next() % 3 == 0 ? .null : .number(Double(rng.next() % 3))
                return SearchRank(
                    words: 2, typos: Int(rng.next() % 2), proximity: 1 + Int(rng.next() % 3), attribute: Int(rng.next() % 2),
                    exactAttribute: SearchRank.noExactAttribute, exactWords: Int(rng.next() % 2),
                    custom: [.number(Double(rng.next() % 2)), hint])
            }
            let uids = (0..<n).map { "u\($0 * 7919 % 1000)-\($0)" }
            func precedes(_ a: Int, _ b: Int) -> Bool { SearchRanking.precedes(ranks[a], uids[a], ranks[b], uids[b], plan: plan) }
            let window = 1 + Int(rng.next() % 40)
            let all = Array(0..<n).sorted(by: precedes)
            let (kept, last) = SearchRun.notBehindWindow(ranks, window: window, plan: plan)
            #expect(Set(kept).count == kept.count, "round \(round)")
            #expect(Array(kept.sorted(by: precedes).prefix(window)) == Array(all.prefix(window)), "round \(round)")
            // Ordered with only the ties' identifiers compared, the same first `window`.
            #expect(
                SearchRun.windowOrder(kept, last: last, ranks: ranks, uids: uids, window: window, plan: plan) == Array(all.prefix(window)),
                "round \(round)")
        }
    }

    /// ``SearchRun/least(_:_:)`` is the `k`-th of the keys sorted, for
    /// windows small and large beside them and keys with many repeats.
    /// A rank's primary key orders ranks as the full comparison does on its
    /// criteria, and where keys tie the rest of the comparison decides:
    /// random ranks with small values (so that criteria tie often), custom
    /// values and distances, against ``SearchRanking/compare(_:_:plan:)``.
    @Test func primaryKeysOrderAsTheComparison() throws {
        var rng = SplitMix64(state: 59)
        func small(_ n: UInt64) -> Int { Int(rng.next() % n) }
        var plan = SearchPlan(words: ["a", "b"], prefixLast: true, typos: TypoPolicy(), window: 20)
        plan.customRanking = [CustomRank(attribute: "popularity", ascending: false)]
        let ranks: [SearchRank] = (0..<300).map { _ in
            SearchRank(
                words: 1 + small(2), typos: small(3), proximity: 1 + small(3),
                attribute: SearchRank.attribute(small(3), atStart: small(2) == 0),
                exactAttribute: small(3) == 0 ? SearchRank.noExactAttribute : small(3), exactWords: small(3),
                custom: [small(3) == 0 ? .null : .number(Double(small(4)))],
                geoDistance: small(2) == 0 ? nil : Double(small(5)))
        }
        var decidedByKey = 0, decidedAfter = 0
        for a in ranks {
            for b in ranks.prefix(100) {
                let full = SearchRanking.compare(a, b, plan: plan)
                let ka = try #require(SearchRanking.primaryKey(a)), kb = try #require(SearchRanking.primaryKey(b))
                let byKey = ka == kb ? SearchRanking.compareAfterPrimary(a, b, plan: plan) : (ka < kb ? -1 : 1)
                #expect(full.signum() == byKey.signum(), "\(a) \(b)")
                if ka == kb { decidedAfter += 1 } else { decidedByKey += 1 }
            }
        }
        #expect(decidedByKey > 1000 && decidedAfter > 100, "\(decidedByKey) \(decidedAfter)")
        #expect(SearchRanking.primaryKey(SearchRank(words: 1, attribute: 70_000)) == nil)
        #expect(SearchRanking.afterPrimaryMatters(ranks) && !SearchRanking.afterPrimaryMatters([SearchRank(words: 1, custom: [.null])]))
    }

    @Test func theLeastKeysAreTheSortedOnes() {
        var rng = SplitMix64(state: 29)
        for round in 0..<500 {
            let n = 1 + Int(rng.next() % 300)
            let spread = 1 + rng.next() % (round % 2 == 0 ? 5 : 10_000)
            let keys = (0..<n).map { _ in Int(rng.next() % spread) }
            let k = 1 + Int(rng.next() % UInt64(n))
            #expect(SearchRun.least(keys, k) == keys.sorted()[k - 1], "round \(round)")
            #expect(SearchRun.least(keys, 1) == keys.min())
        }
    }

    /// Both ways of counting a facet column (the table by item id, and the
    /// merge kept for sparse ids) equal a count by hand: items with no
    /// entry, several entries, a value repeated, numbers for the stats.
    @Test func facetColumnCountsAgreeBothWays() {
        var rng = SplitMix64(state: 3)
        for round in 0..<400 {
            var column = FacetColumn()
            column.names = ["a", "b", "c", "1", "2.5"]
            // Half the rounds with text values alone (counted without stats).
            column.numbers = round % 2 == 0 ? [nil, nil, nil, 1, 2.5] : [nil, nil, nil, nil, nil]
            var byItem: [Int64: [Int32]] = [:]
            var id: Int64 = Int64(rng.next() % 3)
            for _ in 0..<Int(rng.next() % 60) {
                id += 1 + Int64(rng.next() % 4)
                // (Mostly one value an item, as categories hold.)
                let values = (0..<(rng.next() % 3 == 0 ? 1 + Int(rng.next() % 3) : 1)).map { _ in Int32(rng.next() % 5) }
                byItem[id] = values
                for v in values { column.items.append(id); column.values.append(v) }
            }
            let set = (0...(id + 3)).filter { _ in rng.next() % 2 == 0 }
            var want = [Int](repeating: 0, count: 5)
            var stats: FacetStats?
            for item in set {
                for v in Set(byItem[item] ?? []) {
                    want[Int(v)] += 1
                    if let x = column.numbers[Int(v)] {
                        if stats == nil { stats = FacetStats(min: x, max: x, sum: 0, count: 0) }
                        stats!.merge(FacetStats(min: x, max: x, sum: x, count: 1))
                    }
                }
            }
            let merged = column.counts(over: set)
            column.index()
            #expect(!column.offsets.isEmpty || column.items.isEmpty)
            let table = column.counts(over: set)
            #expect(merged.counts == want, "round \(round)")
            #expect(table.counts == want, "round \(round)")
            #expect(merged.stats == stats && table.stats == stats, "round \(round)")
        }
    }
}
