import Synchronization

/// How long each shard's searches have been taking, and so whether the next
/// may run on the socket's thread that took it (``ShardQueryRunner``'s
/// `inline`).
///
/// A socket's thread that searches reads nothing else meanwhile: other
/// clients' requests, cancels, a worker's heartbeats. That is a fair price
/// for a search of a few hundred microseconds, whose two thread wake-ups
/// saved are a good part of its time; past a millisecond they are a small
/// part, and a long search would hold everything else up. So a shard's
/// searches run there only while its recent ones took under ``limit`` on
/// average (a moving average, each search weighing an eighth): a shard whose
/// searches are slow (a large one, heavy facets) goes back to the threads
/// after a few of them, and comes back once they are quick again.
///
/// A shard not yet searched ``warmup`` times never runs inline: its first
/// searches open its posting index and read its columns, seconds on a large
/// shard, and a worker whose socket's thread is held that long sends no
/// heartbeat and is declared lost by the coordinator. Each shard is paced
/// apart for the same reason: one shard's quick searches say nothing of a
/// shard nobody has searched.
package final class SearchPace: Sendable {
    struct Shard {
        /// The recent average, in microseconds.
        var recent = 0
        /// Searches counted, up to ``SearchPace/warmup``.
        var counted = 0
    }

    private let shards = Mutex<[Int: Shard]>([:])
    package let limit: Duration
    package let warmup: Int

    package init(limit: Duration = .milliseconds(1), warmup: Int = 3) {
        self.limit = limit
        self.warmup = warmup
    }

    /// Whether the shard's recent searches were quick enough, and numerous
    /// enough to judge by, to run its next one inline.
    package func allowsInline(shard: Int) -> Bool {
        let limit = Self.micros(limit)
        return shards.withLock { s in
            guard let pace = s[shard] else { return false }
            return pace.counted >= warmup && pace.recent < limit
        }
    }

    /// Counts one of the shard's searches' time.
    package func record(_ took: Duration, shard: Int) {
        let micros = min(Self.micros(took), 10_000_000)
        let warmup = self.warmup
        shards.withLock { s in
            var pace = s[shard] ?? Shard()
            // Until the shard is warm its last search is the average (the
            // first ones' opening costs would weigh on it for dozens of
            // searches); from then on each moves it by an eighth.
            pace.recent = pace.counted < warmup ? micros : pace.recent + (micros - pace.recent) / 8
            pace.counted = min(pace.counted + 1, warmup)
            s[shard] = pace
        }
    }

    static func micros(_ d: Duration) -> Int {
        Int(d.components.seconds) * 1_000_000 + Int(d.components.attoseconds / 1_000_000_000_000)
    }
}
