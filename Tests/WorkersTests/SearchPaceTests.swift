import Testing

@testable import Workers

/// Whether a shard's search may run on the socket's thread follows how long
/// its recent ones took: never before it has been searched a few times,
/// then quick ones let it, a run of slow ones stops it, and quick ones again
/// let it back.
@Suite struct SearchPaceTests {
    @Test func slowSearchesSendTheNextToTheThreadsAndQuickOnesBringThemBack() {
        let pace = SearchPace(limit: .milliseconds(1), warmup: 3)
        for _ in 0..<20 { pace.record(.microseconds(300), shard: 0) }
        #expect(pace.allowsInline(shard: 0))
        // One slow search among quick ones does not stop it...
        pace.record(.milliseconds(4), shard: 0)
        #expect(pace.allowsInline(shard: 0))
        // ...a run of them does.
        for _ in 0..<6 { pace.record(.milliseconds(4), shard: 0) }
        #expect(!pace.allowsInline(shard: 0))
        for _ in 0..<30 { pace.record(.microseconds(300), shard: 0) }
        #expect(pace.allowsInline(shard: 0))
        // A search stuck for minutes counts as ten seconds, so the pace recovers.
        pace.record(.seconds(600), shard: 0)
        #expect(!pace.allowsInline(shard: 0))
        for _ in 0..<80 { pace.record(.microseconds(100), shard: 0) }
        #expect(pace.allowsInline(shard: 0))
    }

    /// A shard's first searches open its index (seconds on a large one):
    /// run on the socket's thread, they held the worker's heartbeats past
    /// the coordinator's patience. None runs inline before the shard has
    /// been searched `warmup` times, and a slow opening does not keep the
    /// shard off the socket's thread once its searches are quick.
    @Test func aShardIsSearchedOnTheThreadsUntilItIsWarm() {
        let pace = SearchPace(limit: .milliseconds(1), warmup: 3)
        #expect(!pace.allowsInline(shard: 0))
        pace.record(.seconds(4), shard: 0)
        #expect(!pace.allowsInline(shard: 0))
        pace.record(.microseconds(200), shard: 0)
        #expect(!pace.allowsInline(shard: 0))
        pace.record(.microseconds(200), shard: 0)
        #expect(pace.allowsInline(shard: 0))
        // Quick searches of one shard say nothing of another.
        #expect(!pace.allowsInline(shard: 1))
        // A shard warm but slow stays on the threads.
        for _ in 0..<3 { pace.record(.milliseconds(5), shard: 1) }
        #expect(!pace.allowsInline(shard: 1))
        #expect(pace.allowsInline(shard: 0))
    }
}
