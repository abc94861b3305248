import Foundation
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// A query worker's budget split between its connections' SQLite caches and
/// maps and its posting indexes, and read-only stores opened with it.
@Suite struct ReaderMemoryTests {
    @Test func theBudgetIsSplitBetweenConnections() {
        let gib = 1 << 30
        // The default budget of a 24 GiB machine, 4 shards, 3 connections each.
        let r = ReaderMemory(budget: 3 * gib / 2, connections: 12)
        #expect(r.cacheKiB == 3 * gib / 2 / 8 / 12 / 1024)
        #expect(r.mmapBytes == 3 * gib / 2 / 4 / 12)
        #expect(r.cacheKiB * 1024 * 12 <= 3 * gib / 2 / 8 && r.mmapBytes * 12 <= 3 * gib / 2 / 4)
        #expect(r.indexBudget(3 * gib / 2, connections: 12) == 3 * gib / 2 - r.cacheKiB * 1024 * 12)
        // A large budget stays within the sizes chosen for speed.
        #expect(ReaderMemory(budget: 1 << 40, connections: 2) == .unbounded)
        // A small one: the smallest cache, and no map too short to be worth it.
        let small = ReaderMemory(budget: 16 << 20, connections: 12)
        #expect(small.cacheKiB == ReaderMemory.minCacheKiB && small.mmapBytes == 0)
        #expect(ReaderMemory(budget: 0, connections: 0).indexBudget(0, connections: 0) == 0)
    }

    /// A store opened read-only takes the process's reader sizes: a small
    /// budget maps none of the shard file and caches little, and answers as
    /// a store with the default sizes does.
    @Test func readOnlyStoresTakeTheReaderSizes() throws {
        let dir = TempDir()
        let path = dir.path("shard.sqlite")
        let writer = try ShardStore(path: path, logger: testLogger)
        try writer.put(PostingSearchTests.randomItems(300, seed: 91, prefix: "m"))
        let saved = ShardStore.readerMemory
        defer { ShardStore.readerMemory = saved }
        func pragma(_ store: ShardStore, _ name: String) throws -> Int64 {
            try store.db.prepare("PRAGMA \(name)").scalar()?.int64 ?? -1
        }
        let plain = try ShardStore(path: path, mode: .readOnly, logger: testLogger)
        #expect(try pragma(plain, "mmap_size") == Int64(ReaderMemory.unbounded.mmapBytes))
        #expect(try pragma(plain, "cache_size") == -Int64(ReaderMemory.unbounded.cacheKiB))
        ShardStore.readerMemory = ReaderMemory(budget: 16 << 20, connections: 12)
        let small = try ShardStore(path: path, mode: .readOnly, logger: testLogger)
        #expect(try pragma(small, "mmap_size") == 0)
        #expect(try pragma(small, "cache_size") == -Int64(ReaderMemory.minCacheKiB))
        var matched = 0
        for word in ["panda", "park", "pytest", "tables", "editr"] {
            let plan = SearchPlan(words: [word], window: 50)
            let expected = try plain.search(plan)
            matched += expected.nbHits
            let got = try small.search(plan)
            #expect(got.nbHits == expected.nbHits && got.hits.map(\.uniqueIdentifier) == expected.hits.map(\.uniqueIdentifier))
        }
        #expect(matched > 0)
    }
}
