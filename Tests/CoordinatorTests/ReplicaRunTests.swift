import ControlPlane
import Foundation
import Testing

@testable import Coordinator

/// A replica change's decisions (``ReplicaRun``), without processes: an
/// addition waits for the new replica to be in sync and keeps queries off it
/// until then; a retirement is refused for a shard's last in-sync replica,
/// fences the replica, waits for what it was sent, then completes; a move
/// does both; a coordinator taking over continues from the stored phase.
@Suite struct ReplicaRunTests {
    let keys = ClusterKeys(cluster: "t")
    let t0 = ContinuousClock.now
    let none = RetiredReplicas()

    func seen(
        inSync: Bool = false, lacking: [Int] = [], busy: Bool = false, querying: Bool = false, othersBehind: Bool = false
    )
        -> ReplicaRun.Observed
    {
        ReplicaRun.Observed(
            addedInSync: inSync, shardsWithoutAnother: lacking, retiredChangesBusy: busy, retiredQueriesBusy: querying,
            othersCaughtUp: !othersBehind)
    }

    @Test func anAdditionCompletesOnceTheNewReplicaIsInSyncAndIsQueriedOnlyThen() {
        let change = ReplicaChange(kind: .add, shards: [0, 1], add: "h:/new", folder: "/new")
        var run = ReplicaRun(change: change, now: t0)
        #expect(run.step == .adding)
        #expect(run.queryExcluded == "h:/new" && run.writeExcluded == nil)
        let a1 = run.tick(seen(), keys: keys, revision: 5, retired: none, retiredRevision: 0, now: t0)
        #expect(a1 == nil)
        #expect(run.queryExcluded == "h:/new")
        let action = run.tick(seen(inSync: true), keys: keys, revision: 5, retired: none, retiredRevision: 0, now: t0)
        #expect(action == .complete(change.completing(keys: keys, readAt: 5, retired: none, retiredRevision: 0)))
        #expect(run.queryExcluded == nil && run.writeExcluded == nil)
        // A refused transaction (the record changed) is tried again; then it is done.
        let done1 = run.completed(false)
        #expect(done1 == false)
        let a2 = run.tick(seen(inSync: true), keys: keys, revision: 6, retired: none, retiredRevision: 0, now: t0)
        #expect(a2 != nil)
        let done2 = run.completed(true)
        #expect(done2)
        #expect(run.step == .done && run.queryExcluded == nil)
    }

    @Test func retiringTheLastInSyncReplicaIsRefusedNamingTheShardAndFencesNothing() {
        let change = ReplicaChange(kind: .retire, shards: [0, 1, 2], retire: "h:/old")
        var run = ReplicaRun(change: change, now: t0)
        #expect(run.step == .checking)
        // A shard without another in-sync replica is given a moment (a replica restarting may be back).
        let a3 = run.tick(seen(lacking: [2]), keys: keys, revision: 9, retired: none, retiredRevision: 0, now: t0)
        #expect(a3 == nil)
        #expect(run.step == .checking && run.writeExcluded == nil)
        let later = t0.advanced(by: ReplicaRun.refuseAfter)
        guard case .store(let t)? = run.tick(seen(lacking: [2]), keys: keys, revision: 9, retired: none, retiredRevision: 0, now: later) else {
            Issue.record("expected the refusal to be stored")
            return
        }
        #expect(run.step == .refused && run.writeExcluded == nil && run.queryExcluded == nil)
        #expect(t.compares == [.unchanged(keys.replicaChange, since: 9)])
        guard case .put(_, let v, _)? = t.success.first, let stored = ReplicaChange.decode(v) else {
            Issue.record("expected a put of the record")
            return
        }
        #expect(stored.phase == .refused)
        #expect(stored.reason?.contains("shard 2 has no in-sync replica but h:/old") == true)
        run.stored(true)
        let a4 = run.tick(seen(lacking: [2]), keys: keys, revision: 10, retired: none, retiredRevision: 0, now: t0)
        #expect(a4 == nil)
    }

    @Test func aRetirementFencesTheReplicaWaitsForWhatItWasSentThenRecordsItRetired() {
        let change = ReplicaChange(kind: .retire, shards: [0], retire: "h:/old")
        var run = ReplicaRun(change: change, now: t0)
        let a5 = run.tick(seen(), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(a5 == nil)
        // Fenced from writes; still read while it is fresh.
        #expect(run.step == .draining && run.writeExcluded == "h:/old" && run.queryExcluded == nil)
        let a6 = run.tick(seen(busy: true), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(a6 == nil)
        // Queries move off it only once another replica has every committed change.
        let behind = run.tick(seen(othersBehind: true), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(behind == nil && run.step == .draining && run.queryExcluded == nil)
        let querying = run.tick(seen(querying: true), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(querying == nil && run.step == .unquerying && run.queryExcluded == "h:/old")
        let action = run.tick(seen(), keys: keys, revision: 3, retired: none, retiredRevision: 7, now: t0)
        guard case .complete(let t)? = action else {
            Issue.record("expected the completion, got \(String(describing: action))")
            return
        }
        #expect(t.compares == [.unchanged(keys.replicaChange, since: 3), .unchanged(keys.retiredReplicas, since: 7)])
        guard case .put(let k, let v, _)? = t.success.last, t.success.first == .delete(keys.replicaChange) else {
            Issue.record("expected the record deleted and the retired replicas put, got \(t.success)")
            return
        }
        #expect(k == keys.retiredReplicas && RetiredReplicas.decode(v)?.isRetired("h:/old", shard: 0) == true)
        let done3 = run.completed(true)
        #expect(done3)
        #expect(run.writeExcluded == "h:/old")
    }

    @Test func aShardThatLosesItsOtherReplicaWhileDrainingLiftsTheFenceChecksAgainAndRefusesOnlyAfterAMoment() {
        var run = ReplicaRun(change: ReplicaChange(kind: .retire, shards: [0], retire: "h:/old"), now: t0)
        _ = run.tick(seen(), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(run.step == .draining)
        let a7 = run.tick(seen(lacking: [0]), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(a7 == nil)
        #expect(run.step == .checking && run.writeExcluded == nil)
        // Back in time: fenced again.
        let a8 = run.tick(seen(), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(a8 == nil)
        #expect(run.step == .draining && run.writeExcluded == "h:/old")
        let a9 = run.tick(seen(lacking: [0]), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(a9 == nil)
        let a10 = run.tick(seen(lacking: [0]), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: t0)
        #expect(a10 == nil)
        let later = t0.advanced(by: .seconds(5))
        guard case .store? = run.tick(seen(lacking: [0]), keys: keys, revision: 3, retired: none, retiredRevision: 0, now: later) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(run.step == .refused)
    }

    @Test func aMoveAddsThenRetires() {
        let change = ReplicaChange(kind: .move, shards: [0, 1], add: "h:/new", folder: "/new", retire: "h:/old")
        var run = ReplicaRun(change: change, now: t0)
        #expect(run.queryExcluded == "h:/new" && run.writeExcluded == nil)
        let a11 = run.tick(seen(), keys: keys, revision: 2, retired: none, retiredRevision: 0, now: t0)
        #expect(a11 == nil)
        // In sync: the retirement's check runs at once, and the old replica is fenced from writes.
        let a12 = run.tick(seen(inSync: true), keys: keys, revision: 2, retired: none, retiredRevision: 0, now: t0)
        #expect(a12 == nil)
        #expect(run.step == .draining && run.queryExcluded == nil && run.writeExcluded == "h:/old")
        let retiredBefore = RetiredReplicas(replicas: ["h:/new": [0, 1, 3]])
        guard case .complete(let t)? = run.tick(seen(inSync: true), keys: keys, revision: 2, retired: retiredBefore, retiredRevision: 4, now: t0),
            case .put(_, let v, _)? = t.success.last, let after = RetiredReplicas.decode(v)
        else {
            Issue.record("expected the completion")
            return
        }
        // The added replica is no longer retired from the shards it joined; the old one is.
        #expect(after.replicas == ["h:/new": [3], "h:/old": [0, 1]])
    }

    @Test func aSuccessorContinuesFromTheStoredPhase() {
        var stored = ReplicaChange(kind: .move, shards: [0], add: "h:/new", retire: "h:/old")
        stored.phase = .retiring
        let run = ReplicaRun(change: stored, now: t0)
        #expect(run.step == .checking && run.queryExcluded == nil)
        stored.phase = .refused
        var refused = ReplicaRun(change: stored, now: t0)
        #expect(refused.step == .refused)
        let a13 = refused.tick(seen(), keys: keys, revision: 1, retired: none, retiredRevision: 0, now: t0)
        #expect(a13 == nil)
        #expect(run.carriesOut(stored) && !run.carriesOut(ReplicaChange(kind: .retire, shards: [0], retire: "h:/old")))
    }
}

/// The fences a replica change sets in the replication state.
@Suite struct ReplicaFenceTests {
    @Test func anUnqueriedReplicaIsNotFreshAndAFencedOneIsNotRepaired() {
        var r = ReplicationState()
        r.replicaOf["q1"] = "h:/new"
        r.replicaOf["i1"] = "h:/new"
        r.applied["h:/new"] = [0: 5]
        r.committed[0] = 5
        r.issued[0] = 5
        #expect(r.isFresh("q1", shard: 0))
        r.unqueried["h:/new"] = [0]
        #expect(!r.isFresh("q1", shard: 0))
        #expect(r.isFresh("q1", shard: 1))
        // Behind with nothing on its way: the sweep catches it up, unless it is fenced.
        r.committed[0] = 7
        r.issued[0] = 7
        r.logStart[0] = 1
        #expect(r.repairs(indexers: [(id: "i1", shards: [0])]) == [.catchUp(worker: "i1", shard: 0, after: 5)])
        r.fenced["h:/new"] = [0]
        #expect(r.repairs(indexers: [(id: "i1", shards: [0])]).isEmpty)
    }

    @Test func whileAReplicaIsKeptFromQueriesTheReadOnesAreFreshWhenAllTheyLackIsOnItsWay() {
        var r = ReplicationState()
        r.replicaOf["q0"] = "h:/old"
        r.replicaOf["i0"] = "h:/old"
        r.replicaOf["i1"] = "h:/new"
        r.applied["h:/old"] = [0: 5]
        r.applied["h:/new"] = [0: 6]
        r.committed[0] = 6
        r.issued[0] = 6
        r.track("w6-old", worker: "i0", shard: 0, sequence: 6)
        // No replica kept from queries: one change behind is stale, as always.
        #expect(!r.isFresh("q0", shard: 0))
        r.unqueried["h:/new"] = [0]
        #expect(r.isFresh("q0", shard: 0))
        // A change it lacks that is not on its way to it, or only as a catch-up's: stale.
        r.committed[0] = 7
        r.track("c7-old", worker: "i0", shard: 0, sequence: 7, catchUp: true)
        #expect(!r.isFresh("q0", shard: 0))
        r.track("c7-old", worker: "i0", shard: 0, sequence: 7)
        #expect(r.isFresh("q0", shard: 0))
        r.catchingUp["i0"] = [0: 7]
        #expect(!r.isFresh("q0", shard: 0))
    }
}
