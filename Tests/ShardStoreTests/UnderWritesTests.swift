import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// Reads between another connection's writes: read-only connections kept
/// open across commits (their caches patched or read again, the process's
/// posting index of an older commit, vocabularies shared between them)
/// answer exactly what a connection opened afresh and reading everything
/// from SQLite and FTS5 answers, and queries what the plain definition over
/// the items says.
@Suite struct UnderWritesTests {
    /// Each round: new items, replaced ones (stored under new ids) and
    /// deleted ones, then random searches on two long-lived readers against
    /// a fresh one without the index or a shared vocabulary. Typo-tolerant
    /// plans only once the vocabularies' age has passed (a misspelling finds
    /// a word written since only after it, by ``Vocabulary``'s contract);
    /// exact and prefix ones at once.
    @Test(arguments: [61, 67] as [UInt64])
    func searchesBetweenWritesAgreeWithAFreshReader(seed: UInt64) throws {
        let dir = TempDir()
        let w = try PostingSearchTests.store(dir, seed: seed)
        let readers = try (0..<2).map { _ in try openStore(dir, mode: .readOnly) }
        defer {
            PostingIndexes.shared.forget(path: w.path)
            SharedVocabularies.shared.forget(path: w.path)
        }
        var rng = SplitMix(state: seed)
        var searched = 0, found = 0
        for round in 0..<6 {
            try w.put(PostingSearchTests.randomItems(20, seed: seed &+ UInt64(round) &* 7, prefix: "r\(round)-"))
            // Replacements of the first items (their ids change).
            try w.put(PostingSearchTests.randomItems(Int(rng.next() % 30), seed: seed &+ UInt64(round) &* 13))
            let gone = (0..<5).map { _ in "i\(100 + rng.next() % 200)" }
            _ = try w.delete(ids: gone)
            let settled = round % 2 == 1
            if settled {
                Thread.sleep(forTimeInterval: 2.2)
                // An index of this round's data (the next round's writes leave it stale).
                try readers[1].buildSuggestionIndex()
            }
            let fresh = try openStore(dir, mode: .readOnly)
            fresh.searchCache.searchesUsePostingIndex = false
            fresh.searchCache.sharesVocabulary = false
            fresh.searchCache.sharesColumns = false
            for var plan in PostingSearchTests.randomPlans(40, seed: seed &+ UInt64(round) &* 31) {
                if !settled { plan.typos = TypoPolicy(enabled: false) }
                let expected = try fresh.search(plan)
                for r in readers {
                    let got = try r.search(plan)
                    #expect(got == expected, "round \(round): \(plan.words) \(plan.searchableAttributes) \(plan.window)")
                }
                searched += 1
                found += expected.hits.count
            }
        }
        #expect(searched == 240 && found > 400)
        #expect(readers.allSatisfy { $0.searchCache.postingSearches > 0 && $0.searchCache.postingSearches < searched })
    }

    /// Facet counts, domain scopes and the empty query between writes: two
    /// long-lived readers patch their facet columns, domain index and
    /// universe with each commit's changes (the items stored since by id
    /// range, those removed from the ``RemovalLog``) and must answer what
    /// a fresh reader, reading everything whole, answers. Each round
    /// replaces items (under new ids), adds and deletes some; the readers
    /// must have patched rather than read again.
    @Test(arguments: [71, 73] as [UInt64])
    func facetsAndScopesBetweenWritesAgreeWithAFreshReader(seed: UInt64) throws {
        let dir = TempDir()
        let w = try PostingSearchTests.store(dir, seed: seed)
        let readers = try (0..<2).map { _ in try openStore(dir, mode: .readOnly) }
        defer {
            PostingIndexes.shared.forget(path: w.path)
            SharedVocabularies.shared.forget(path: w.path)
            SharedColumns.shared.forget(path: w.path)
        }
        var rng = SplitMix(state: seed)
        var searched = 0, counted = 0
        for round in 0..<8 {
            if round > 0 {
                try w.put(PostingSearchTests.randomItems(10, seed: seed &+ UInt64(round) &* 7, prefix: "r\(round)-"))
                try w.put(PostingSearchTests.randomItems(Int(rng.next() % 40), seed: seed &+ UInt64(round) &* 13))
                _ = try w.delete(ids: (0..<6).map { _ in "i\(rng.next() % 300)" } + ["r\(round - 1)-\(rng.next() % 10)"])
            }
            let fresh = try openStore(dir, mode: .readOnly)
            fresh.searchCache.searchesUsePostingIndex = false
            fresh.searchCache.sharesVocabulary = false
            fresh.searchCache.sharesColumns = false
            fresh.searchCache.patchesFacetColumns = false
            for i in 0..<30 {
                var plan = SearchPlan(
                    words: i % 3 == 0 ? [] : [PostingSearchTests.words[Int(rng.next() % UInt64(PostingSearchTests.words.count))]],
                    prefixLast: rng.next() % 2 == 0, typos: TypoPolicy(enabled: false), window: [0, 5, 20][Int(rng.next() % 3)])
                plan.facets = ["section", "size"]
                if rng.next() % 2 == 0 { plan.filter = .domain([["@alpha", "@beta"][Int(rng.next() % 2)]]) }
                if rng.next() % 2 == 0 {
                    plan.disjunctiveFilters = ["section": plan.filter]
                    plan.facets.append(SearchPlan.disjunctiveSetSizes)
                }
                let expected = try fresh.search(plan)
                for r in readers {
                    let got = try r.search(plan)
                    #expect(got == expected, "round \(round): \(plan.words) \(plan.filter)")
                }
                searched += 1
                counted += expected.facets["section"]?.count ?? 0
            }
        }
        #expect(searched == 240 && counted > 1_000)
        // The readers share their columns (``SharedColumns``): each column
        // is read once between them, then patched by the reader that
        // reaches a commit first (the first, here) and taken by the other.
        #expect(readers.map(\.searchCache.facetColumnReads).reduce(0, +) == 2, "each column read once, then patched or taken")
        #expect(readers.map(\.searchCache.facetColumnPatches).reduce(0, +) >= 14)
        #expect(readers[1].searchCache.columnsTaken >= 16)
        #expect(readers.map(\.universeCache.universeReads).reduce(0, +) == 1)
        #expect(readers.map(\.universeCache.universePatches).reduce(0, +) >= 7)
        #expect(readers.map(\.domainIndexReads).reduce(0, +) == 1)
    }
}
