import ControlPlane
import Foundation
import Testing
import WireProtocol

@testable import Coordinator

/// A split's decisions (``SplitRun``), without processes: copy and catch-up
/// (mirrored), the write pause, the stored purge phase, queries going over
/// to the new map (never held), the purges once the old map's queries end,
/// the commit; failures on the way, and a coordinator taking up a
/// split its predecessor left.
@Suite struct SplitRunTests {
    let keys = ClusterKeys(cluster: "t")
    let t0 = ContinuousClock.now

    func split() throws -> ShardSplit { try ShardSplit(splitting: ShardMap(shards: 2, slotsPerShard: 8), to: 4) }

    func seen(fresh: Bool = false, drained: Bool = false, queries: Bool = false) -> SplitRun.Observed {
        SplitRun.Observed(targetsFresh: fresh, targetsDrained: drained, queriesRunning: queries)
    }

    static let publish = Body.publish(Body.Publish(items: []))
    static let query = Body.query(Body.QueryRequest(query: "*"))

    /// Drives a 2 → 4 split to the step where every shard's purge was sent
    /// (message u<shard> to shard <shard>).
    func toPurge() throws -> SplitRun {
        var run = SplitRun(split: try split(), now: t0)
        let stored = run.tick(seen(fresh: true, drained: true), keys: keys, revision: 3, mapRevision: 1, now: t0)
        #expect(stored == .store(try split().storingPurge(keys: keys, readAt: 3)))
        run.stored(true, running: [], now: t0)
        let purge = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(purge == .purge([0, 1, 2, 3]))
        for shard in 0..<4 { run.purgeSent("u\(shard)", shard: shard, worker: "w\(shard)") }
        return run
    }

    @Test func newShardsMirrorTheirSourcesWhileTheyAreCopied() throws {
        var run = SplitRun(split: try split(), now: t0)
        #expect(run.step == .copying)
        #expect(run.mirrors == [0: [2], 1: [3]])
        #expect(run.source(of: 3) == 1 && run.source(of: 1) == nil)
        #expect(!run.holds(Self.publish) && !run.holds(Self.query))
        let idle = run.tick(seen(), keys: keys, revision: 3, mapRevision: 1, now: t0)
        #expect(idle == nil)
        let drainedOnly = run.tick(seen(drained: true), keys: keys, revision: 3, mapRevision: 1, now: t0)
        #expect(drainedOnly == nil, "drained but not fresh: still copying")
        #expect(run.step == .copying && run.pausedAt == nil)
    }

    @Test func writesPauseWhenTheNewShardsAreFreshAndThePurgePhaseIsStoredOnceDrained() throws {
        var run = SplitRun(split: try split(), now: t0)
        let t1 = t0.advanced(by: .seconds(1))
        let fresh = run.tick(seen(fresh: true), keys: keys, revision: 3, mapRevision: 1, now: t1)
        #expect(fresh == nil)
        #expect(run.step == .draining && run.pausedAt == t1)
        #expect(run.holds(Self.publish) && !run.holds(Self.query), "writes wait; queries go on")
        #expect(run.mirrors == [0: [2], 1: [3]], "still mirrored until drained")
        #expect(run.source(of: 2) == 0)
        let drained = run.tick(seen(fresh: true, drained: true), keys: keys, revision: 3, mapRevision: 1, now: t1)
        #expect(drained == .store(try split().storingPurge(keys: keys, readAt: 3)))
        #expect(run.step == .storing && run.mirrors.isEmpty)
        #expect(run.source(of: 2) == nil, "no copy from the source once the purge may start")
        #expect(!run.holds(Self.query) && !run.routesByNewMap, "queries go by the old map until the purge phase is stored")
    }

    @Test func aRefusedStoreIsTriedAgainThenQueriesGoByTheNewMap() throws {
        var run = SplitRun(split: try split(), now: t0)
        _ = run.tick(seen(fresh: true, drained: true), keys: keys, revision: 3, mapRevision: 1, now: t0)
        run.stored(false, running: ["q1"], now: t0)
        #expect(run.step == .storing, "a refused store is tried again")
        #expect(!run.routesByNewMap && run.routedByOldMap.isEmpty)
        let again = run.tick(seen(), keys: keys, revision: 5, mapRevision: 1, now: t0)
        #expect(again == .store(try split().storingPurge(keys: keys, readAt: 5)))
        run.stored(true, running: ["q1", "s2"], now: t0)
        #expect(run.step == .switching && run.split.phase == .purging)
        #expect(run.routesByNewMap && run.routedByOldMap == ["q1", "s2"])
        #expect(!run.holds(Self.query) && run.holds(Self.publish), "writes wait; queries are never held")
    }

    @Test func everyShardPurgesOnceTheOldMapsQueriesEndThenTheMapIsCommitted() throws {
        var run = SplitRun(split: try split(), now: t0)
        _ = run.tick(seen(fresh: true, drained: true), keys: keys, revision: 3, mapRevision: 1, now: t0)
        run.stored(true, running: ["q1"], now: t0)
        let running = run.tick(seen(queries: true), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(running == nil, "a query routed by the old map still runs")
        let purge = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(purge == .purge([0, 1, 2, 3]))
        for shard in 0..<4 { run.purgeSent("u\(shard)", shard: shard, worker: "w\(shard)") }
        let other = run.purgeAnswered("other", succeeded: true)
        #expect(other == .notAPurge)
        let failed = run.purgeAnswered("u1", succeeded: false)
        #expect(failed == .resend(shard: 1))
        run.purgeSent("u1b", shard: 1, worker: "w1")
        for id in ["u0", "u2", "u3"] {
            let a = run.purgeAnswered(id, succeeded: true)
            #expect(a == .counted)
        }
        let waiting = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(waiting == nil, "u1b is still out")
        #expect(run.step == .purging)
        let last = run.purgeAnswered("u1b", succeeded: true)
        #expect(last == .counted)
        let s = try split()
        let commit = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(commit == .commit(s.committing(keys: keys, readAt: 4, mapRevision: 1), s.after))
        let refused = run.committed(false)
        #expect(!refused, "refused: tried again")
        let retried = run.tick(seen(), keys: keys, revision: 5, mapRevision: 2, now: t0)
        #expect(retried == .commit(s.committing(keys: keys, readAt: 5, mapRevision: 2), s.after))
        #expect(run.routesByNewMap, "until the commit, queries carry the new map's slots")
        let done = run.committed(true)
        #expect(done)
        #expect(!run.holds(Self.query) && !run.routesByNewMap, "committed: the map itself routes")
    }

    @Test func aSplitLeftInItsPurgePhasePurgesEveryShardAgain() throws {
        var stored = try split()
        stored.phase = .purging
        let decoded = try #require(ShardSplit.decode(stored.encoded()))
        var run = SplitRun(split: decoded, now: t0)
        #expect(run.step == .switching && run.mirrors.isEmpty)
        #expect(run.source(of: 2) == nil, "the new shards are never copied again")
        #expect(run.holds(Self.publish) && !run.holds(Self.query))
        #expect(run.routesByNewMap && run.routedByOldMap.isEmpty, "no query of this coordinator went by the old map")
        let purge = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(purge == .purge([0, 1, 2, 3]))
    }

    @Test func aSplitLeftWhileCopyingStartsOverMirrored() throws {
        let decoded = try #require(ShardSplit.decode(try split().encoded()))
        let run = SplitRun(split: decoded, now: t0)
        #expect(run.step == .copying && run.mirrors == [0: [2], 1: [3]] && !run.holds(Self.publish))
    }

    @Test func aPurgeLostWithItsWorkerIsSentAgainOnceTheShardHasAnIndexer() throws {
        var run = try toPurge()
        for shard in [0, 2, 3] { _ = run.purgeAnswered("u\(shard)", succeeded: true) }
        // Shard 1's only replica is lost before it answers (kill -9).
        run.workerLost("w1")
        #expect(run.step == .purging, "shard 1 was marked by no replica")
        let again = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(again == .purge([1]))
        // No live indexer: the core sent nothing; the next tick asks again.
        let stillLacking = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(stillLacking == .purge([1]))
        run.purgeSent("u1c", shard: 1, worker: "w1-restarted")
        let waiting = run.tick(seen(), keys: keys, revision: 4, mapRevision: 1, now: t0)
        #expect(waiting == nil)
        _ = run.purgeAnswered("u1c", succeeded: true)
        #expect(run.step == .committing)
    }

    @Test func aLostReplicaNeedsNoAnswerWhenAnotherMarkedItsShard() throws {
        var run = try toPurge()
        run.purgeSent("u1-second", shard: 1, worker: "w1-second")
        for shard in 0..<4 { _ = run.purgeAnswered("u\(shard)", succeeded: true) }
        #expect(run.step == .purging, "the second replica of shard 1 has not answered")
        run.workerLost("w1-second")
        #expect(run.step == .committing)
    }

    @Test func aFullRunEndsCommitted() throws {
        var run = try toPurge()
        for shard in 0..<4 { _ = run.purgeAnswered("u\(shard)", succeeded: true) }
        guard case .commit(_, let map) = run.tick(seen(), keys: keys, revision: 6, mapRevision: 1, now: t0) else {
            Issue.record("expected the commit")
            return
        }
        #expect(map.shards == 4 && map.epoch == 2)
        let done = run.committed(true)
        #expect(done)
    }
}
