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
}
