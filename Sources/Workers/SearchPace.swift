import Synchronization

/// How long a runner's searches have been taking, and so whether the next
/// may run on the socket's thread that took it (``ShardQueryRunner``'s
/// `inline`).
///
/// A socket's thread that searches reads nothing else meanwhile: other
/// clients' requests, cancels, a worker's heartbeats. That is a fair price
/// for a search of a few hundred microseconds, whose two thread wake-ups
/// saved are a good part of its time; past a millisecond they are a small
/// part, and a long search would hold everything else up. So searches run
/// there only while the recent ones took under ``limit`` on average (a
/// moving average, each search weighing an eighth): a shard whose searches
/// are slow (a large one, heavy facets) goes back to the threads after a
/// few of them, and comes back once they are quick again.
package final class SearchPace: Sendable {
    /// The recent average, in microseconds.
    private let recent = Atomic<Int>(0)
    package let limit: Duration

    package init(limit: Duration = .milliseconds(1)) { self.limit = limit }

    /// Whether the recent searches were quick enough to run the next inline.
    package var allowsInline: Bool { recent.load(ordering: .relaxed) < Self.micros(limit) }

    /// Counts a search's time. Threads that record at once may lose one of
    /// the updates: it is an estimate.
    package func record(_ took: Duration) {
        let micros = min(Self.micros(took), 10_000_000)
        let old = recent.load(ordering: .relaxed)
        recent.store(old + (micros - old) / 8, ordering: .relaxed)
    }

    static func micros(_ d: Duration) -> Int {
        Int(d.components.seconds) * 1_000_000 + Int(d.components.attoseconds / 1_000_000_000_000)
    }
}
