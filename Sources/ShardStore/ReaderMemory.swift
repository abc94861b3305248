import Synchronization

/// What SQLite may hold for each read-only connection of a process: its page
/// cache (anonymous memory, the connection's own) and the length of the
/// shard file it maps (file-backed pages, shared with the page cache).
///
/// A query worker splits its `--memory-budget` between its connections
/// (``init(budget:connections:)``); a process that sets nothing keeps
/// ``unbounded``, the sizes chosen for speed alone.
///
/// How the budget counts memory: anonymous bytes are the budget's (the
/// posting indexes' heap, ``ShardStore/memoryBudget``, and these caches);
/// SQLite's maps are bounded by it too, since every connection maps the file
/// on its own and their resident pages count once per map; the shard's
/// derived file (``DerivedFile``) is mapped once per process, whole; its
/// pages are clean and shared with the page cache, and a query worker lets
/// them go from its resident set whenever that passes the budget (the
/// worker's `ResidentBound`), so they are read again from the page cache,
/// not the disk.
package struct ReaderMemory: Sendable, Equatable {
    /// The page cache of one connection, in KiB (SQLite's `cache_size`).
    package var cacheKiB: Int
    /// Bytes of the shard file one connection maps (SQLite's `mmap_size`; 0: none).
    package var mmapBytes: Int

    package init(cacheKiB: Int, mmapBytes: Int) {
        self.cacheKiB = cacheKiB
        self.mmapBytes = mmapBytes
    }

    /// 64 MiB of cache, 1 GiB mapped: a word query reads its pages from the
    /// map rather than copying each one out of the page cache.
    package static let unbounded = ReaderMemory(cacheKiB: 64 * 1024, mmapBytes: 1 << 30)

    /// The smallest cache given (SQLite's B-tree walks want a few pages per level).
    static let minCacheKiB = 512
    /// A map shorter than this is not worth its address space: reads go
    /// through the cache instead.
    static let minMapBytes = 4 << 20

    /// The share of `budget` bytes of each of `connections` read-only
    /// connections: an eighth of the budget for their caches together and a
    /// quarter for their maps together, each within ``unbounded``; the rest
    /// is the posting indexes' (``indexBudget(_:connections:)``).
    package init(budget: Int, connections: Int) {
        let n = max(1, connections)
        cacheKiB = min(Self.unbounded.cacheKiB, max(Self.minCacheKiB, budget / 8 / n / 1024))
        let map = min(Self.unbounded.mmapBytes, budget / 4 / n)
        mmapBytes = map >= Self.minMapBytes ? map : 0
    }

    /// What the posting indexes' heap may take of `budget` once
    /// `connections` caches of this size are set aside.
    package func indexBudget(_ budget: Int, connections: Int) -> Int {
        max(0, budget - cacheKiB * 1024 * max(1, connections))
    }
}

extension ShardStore {
    /// What each read-only connection opened from now on may hold (see
    /// ``ReaderMemory``); a query worker sets it from its budget at start.
    package static var readerMemory: ReaderMemory {
        get { readerMemorySetting.withLock { $0 } }
        set { readerMemorySetting.withLock { $0 = newValue } }
    }
    private static let readerMemorySetting = Mutex(ReaderMemory.unbounded)
}
