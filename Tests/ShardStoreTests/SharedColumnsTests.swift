import Foundation
import QueryPlan
import Testing

@testable import ShardStore

/// ``SharedColumns``: a shard's read-only connections hold one copy of its
/// ids and facet columns for the same data, and never take columns of
/// other data.
@Suite struct SharedColumnsTests {
    /// The empty query with a facet, unscoped (every item's id) and
    /// scoped to an app (the domain index).
    static func search(_ s: ShardStore) throws -> [ShardSearchResult] {
        var plan = SearchPlan(words: [], prefixLast: false, typos: TypoPolicy(enabled: false), window: 5)
        plan.facets = ["section"]
        var scoped = plan
        scoped.filter = .domain(["@alpha"])
        return [try s.search(plan), try s.search(scoped)]
    }

    @Test func readersOfTheSameDataHoldOneCopy() throws {
        let dir = TempDir()
        let w = try PostingSearchTests.store(dir, seed: 5)
        defer { SharedColumns.shared.forget(path: w.path) }
        let a = try openStore(dir, mode: .readOnly), b = try openStore(dir, mode: .readOnly)
        let first = try Self.search(a)
        #expect(try Self.search(b) == first)
        #expect(a.searchCache.facetColumnReads == 1 && a.searchCache.columnsTaken == 0)
        #expect(b.searchCache.facetColumnReads == 0 && b.searchCache.columnsTaken >= 2, "the ids and the column taken")
        let section = try #require(w.nameIDs["section"])
        func storage(_ s: ShardStore) throws -> UnsafeRawPointer? {
            try s.facetColumn(section).items.withUnsafeBytes { $0.baseAddress }
        }
        #expect(try storage(a) == storage(b), "one array for both")
        let ids = { (s: ShardStore) in s.universeCache.held?.1.withUnsafeBytes { $0.baseAddress } }
        #expect(ids(a) != nil && ids(a) == ids(b))
        #expect(a.universeCache.domains != nil && a.universeCache.domains?.1 === b.universeCache.domains?.1)
        #expect(a.domainIndexReads == 1 && b.domainIndexReads == 0)

        // A commit: the first reader to search patches and shares; the
        // other takes the patched columns, and both answer what a reader
        // that shares nothing answers.
        try w.put(PostingSearchTests.randomItems(7, seed: 9, prefix: "new-"))
        _ = try w.delete(ids: ["i1", "i2"])
        let alone = try openStore(dir, mode: .readOnly)
        alone.searchCache.sharesColumns = false
        let expected = try Self.search(alone)
        #expect(expected != first)
        #expect(try Self.search(b) == expected)
        #expect(b.searchCache.facetColumnPatches == 1 && b.universeCache.universePatches == 1)
        #expect(try Self.search(a) == expected)
        #expect(a.searchCache.facetColumnPatches == 0 && a.universeCache.universePatches == 0, "taken, not patched again")
        #expect(try storage(a) == storage(b))
        #expect(a.universeCache.domains?.1 === b.universeCache.domains?.1)
        #expect(a.domainIndexReads == 1 && b.domainIndexReads == 0, "patched, then taken")
    }

    /// Columns of a later state are kept when a connection still reading an
    /// earlier one publishes; any other state's columns are never taken.
    @Test func columnsAreTakenForTheirOwnDataOnly() {
        let shared = SharedColumns()
        let early = ChangeMark(watermark: 10, removedSeq: 3, epoch: "e")
        let late = ChangeMark(watermark: 12, removedSeq: 3, epoch: "e")
        #expect(early.precedes(late) && !late.precedes(early) && !early.precedes(early))
        #expect(!early.precedes(ChangeMark(watermark: 12, removedSeq: 3, epoch: "f")), "another content")
        #expect(!early.precedes(ChangeMark(watermark: 12, removedSeq: 2, epoch: "e")), "not comparable")
        shared.publish(path: "p", mark: late) { $0.universe = [1, 11] }
        shared.publish(path: "p", mark: early) { $0.universe = [1] }
        #expect(shared.columns(path: "p", mark: late)?.universe == [1, 11])
        #expect(shared.columns(path: "p", mark: early) == nil)
        shared.publish(path: "p", mark: late) { $0.facets[4] = FacetColumn() }
        #expect(shared.columns(path: "p", mark: late)?.universe == [1, 11], "added to, not replaced")
        let other = ChangeMark(watermark: 5, removedSeq: 0, epoch: "f")
        shared.publish(path: "p", mark: other) { $0.universe = [2] }
        #expect(shared.columns(path: "p", mark: other)?.universe == [2])
        #expect(shared.columns(path: "p", mark: late) == nil)
    }
}
