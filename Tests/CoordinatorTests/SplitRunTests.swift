import ControlPlane
import Foundation
import Testing
import WireProtocol

@testable import Coordinator

/// A split's decisions (``SplitRun``), without processes: copy and catch-up
/// (mirrored), the write pause, the new shards' purge, the stored phase, the
/// query pause, the sources' purge, the switch; failures on the way, and a
/// coordinator taking up a split its predecessor left.
@Suite struct SplitRunTests {
    let keys = ClusterKeys(cluster: "t")
    let t0 = ContinuousClock.now

    func split() throws -> ShardSplit { try ShardSplit(splitting: ShardMap(shards: 2, slotsPerShard: 8), to: 4) }

    func seen(fresh: Bool = false, drained: Bool = false, queries: Bool = false) -> SplitRun.Observed {
        SplitRun.Observed(targetsFresh: fresh, targetsDrained: drained, queriesRunning: queries)
    }

    static let publish = Body.publish(Body.Publish(items: []))
    static let query = Body.query(Body.QueryRequest(query: "*"))

    /// Drives a 2 → 4 split to the step where the sources' purge was sent.
    func toSourcesPurge() throws -> SplitRun {
        var run = SplitRun(split: try split(), now: t0)
        let r1 = run.tick(seen(fresh: true, drained: true), keys: keys, revision: 3, mapRevision: 1, now: t0)
        #expect(r1 == .purge([2, 3]))
        run.purgeSent("u1", shard: 2)
        run.purgeSent("u2", shard: 3)
        _ = run.purgeAnswered("u1", succeeded: true)
        _ = run.purgeAnswered("u2", succeeded: true)
        run.stored(true, now: t0)
        let r2 = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(r2 == .purge([0, 1]))
        return run
    }

    @Test func newShardsMirrorTheirSourcesWhileTheyAreCopied() throws {
        var run = SplitRun(split: try split(), now: t0)
        #expect(run.step == .copying)
        #expect(run.mirrors == [0: [2], 1: [3]])
        #expect(run.source(of: 3) == 1 && run.source(of: 1) == nil)
        #expect(!run.holds(Self.publish) && !run.holds(Self.query))
        let r3 = run.tick(seen(), keys: keys, revision: 3, mapRevision: 1, now: t0)
        #expect(r3 == nil)
        let r4 = run.tick(seen(drained: true), keys: keys, revision: 3, mapRevision: 1, now: t0)
        #expect(r4 == nil, "drained but not fresh: still copying")
        #expect(run.step == .copying && run.pausedAt == nil)
    }

    @Test func writesPauseWhenTheNewShardsAreFreshAndTheyPurgeOnceDrained() throws {
        var run = SplitRun(split: try split(), now: t0)
        let t1 = t0.advanced(by: .seconds(1))
        let r5 = run.tick(seen(fresh: true), keys: keys, revision: 3, mapRevision: 1, now: t1)
        #expect(r5 == nil)
        #expect(run.step == .draining && run.pausedAt == t1)
        #expect(run.holds(Self.publish) && !run.holds(Self.query), "writes wait; queries go on")
        #expect(run.mirrors == [0: [2], 1: [3]], "still mirrored until drained")
        #expect(run.source(of: 2) == 0)
        let r6 = run.tick(seen(fresh: true, drained: true), keys: keys, revision: 3, mapRevision: 1, now: t1)
        #expect(r6 == .purge([2, 3]))
        #expect(run.step == .purgingTargets && run.mirrors.isEmpty)
        #expect(run.source(of: 2) == nil, "no copy from the source once the new shards are purged")
    }

    @Test func thePurgePhaseIsStoredOnceEveryNewShardAnswered() throws {
        var run = SplitRun(split: try split(), now: t0)
        _ = run.tick(seen(fresh: true, drained: true), keys: keys, revision: 3, mapRevision: 1, now: t0)
        run.purgeSent("u1", shard: 2)
        run.purgeSent("u2", shard: 3)
        let r7 = run.purgeAnswered("other", succeeded: true)
        #expect(r7 == .notAPurge)
        let r8 = run.purgeAnswered("u1", succeeded: false)
        #expect(r8 == .resend(shard: 2))
        run.purgeSent("u3", shard: 2)
        let r9 = run.purgeAnswered("u2", succeeded: true)
        #expect(r9 == .counted)
        #expect(run.step == .purgingTargets, "u3 is still out")
        let r10 = run.purgeAnswered("u3", succeeded: true)
        #expect(r10 == .counted)
        #expect(run.step == .storing)
        let stored = run.tick(seen(), keys: keys, revision: 9, mapRevision: 1, now: t0)
        #expect(stored == .store(try split().storingPurge(keys: keys, readAt: 9)))
        run.stored(false, now: t0)
        #expect(run.step == .storing, "a refused store is tried again")
        run.stored(true, now: t0)
        #expect(run.step == .holdingQueries && run.split.phase == .purging)
        #expect(run.holds(Self.query) && run.holds(Self.publish))
    }

    @Test func theSourcesPurgeOnceNoQueryRunsThenTheMapIsCommitted() throws {
        var run = SplitRun(split: try split(), now: t0)
        _ = run.tick(seen(fresh: true, drained: true), keys: keys, revision: 3, mapRevision: 1, now: t0)
        run.purgeSent("u1", shard: 2)
        run.purgeSent("u2", shard: 3)
        _ = run.purgeAnswered("u1", succeeded: true)
        _ = run.purgeAnswered("u2", succeeded: true)
        run.stored(true, now: t0)
        let r11 = run.tick(seen(queries: true), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(r11 == nil, "a query still runs")
        let r12 = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(r12 == .purge([0, 1]))
        run.purgeSent("u3", shard: 0)
        run.purgeSent("u4", shard: 1)
        _ = run.purgeAnswered("u3", succeeded: true)
        let r13 = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(r13 == nil)
        _ = run.purgeAnswered("u4", succeeded: true)
        let s = try split()
        #expect(
            run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
                == .commit(s.committing(keys: keys, readAt: 4, mapRevision: 1), s.after))
        let r14 = run.committed(false)
        #expect(!r14, "refused: tried again")
        #expect(
            run.tick(seen(), keys: keys, revision: 5, mapRevision: 2, now: t0)
                == .commit(s.committing(keys: keys, readAt: 5, mapRevision: 2), s.after))
        let r15 = run.committed(true)
        #expect(r15)
        #expect(!run.holds(Self.query))
    }

    @Test func aSplitLeftInItsPurgePhaseGoesOnFromTheSources() throws {
        var stored = try split()
        stored.phase = .purging
        let decoded = try #require(ShardSplit.decode(stored.encoded()))
        var run = SplitRun(split: decoded, now: t0)
        #expect(run.step == .holdingQueries && run.mirrors.isEmpty)
        #expect(run.source(of: 2) == nil, "the new shards are never copied again")
        #expect(run.holds(Self.publish) && run.holds(Self.query))
        let r16 = run.tick(seen(queries: true), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(r16 == nil)
        let r17 = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(r17 == .purge([0, 1]))
    }

    @Test func aSplitLeftWhileCopyingStartsOverMirrored() throws {
        let decoded = try #require(ShardSplit.decode(try split().encoded()))
        let run = SplitRun(split: decoded, now: t0)
        #expect(run.step == .copying && run.mirrors == [0: [2], 1: [3]] && !run.holds(Self.publish))
    }

    @Test func aFullRunEndsCommitted() throws {
        var run = try toSourcesPurge()
        run.purgeSent("u5", shard: 0)
        run.purgeSent("u6", shard: 1)
        _ = run.purgeAnswered("u5", succeeded: true)
        _ = run.purgeAnswered("u6", succeeded: true)
        guard case .commit(_, let map) = run.tick(seen(), keys: keys, revision: 6, mapRevision: 1, now: t0) else {
            Issue.record("expected the commit")
            return
        }
        #expect(map.shards == 4 && map.epoch == 2)
        let r18 = run.committed(true)
        #expect(r18)
    }
}
