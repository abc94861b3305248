import ControlPlane
import Foundation
import Testing
import WireProtocol

/// The split's decisions (``ShardSplit``): copy → catch-up → switch → purge,
/// each event in each phase, and a coordinator resuming from the control plane.
@Suite struct ShardSplitTests {
    let keys = ClusterKeys(cluster: "t")

    func split(_ from: Int = 2, to: Int = 4) throws -> ShardSplit {
        try ShardSplit(splitting: ShardMap(shards: from, slotsPerShard: 8), to: to)
    }

    /// Drives a 2 → 4 split up to the pause: both targets copied and caught up.
    func paused() throws -> ShardSplit {
        var s = try split()
        _ = s.targetRegistered(shard: 2, replica: "r2")
        _ = s.targetRegistered(shard: 3, replica: "r3")
        s.copyInstalled(shard: 2)
        s.copyInstalled(shard: 3)
        _ = s.caughtUp(shard: 2)
        #expect(s.caughtUp(shard: 3) == [.pauseWrites])
        return s
    }

    @Test func startsWithATargetPerNewShardTakingFromItsSource() throws {
        let s = try split(2, to: 6)
        #expect(s.phase == .copying)
        #expect(s.targets.map(\.shard) == [2, 3, 4, 5])
        #expect(s.targets.map(\.source) == [0, 1, 0, 1])
        #expect(s.targets.allSatisfy { $0.state == .waiting && $0.replica == nil })
        #expect(s.after.shards == 6 && s.after.epoch == s.before.epoch + 1)
        #expect(throws: ShardMap.Invalid.self) { try split(2, to: 3) }
        #expect(throws: ShardMap.Invalid.self) { try split(2, to: 2) }
        let t = s.starting(keys: keys, mapRevision: 7)
        #expect(t.compares == [.absent(keys.shardSplit), .unchanged(keys.shardMap, since: 7)])
        #expect(t.success == [.put(keys.shardSplit, s.encoded())])
        #expect(ShardSplit.decode(s.encoded()) == s)
    }

    @Test func aRegisteredTargetIsCopiedFromItsSourceThenCaughtUp() throws {
        var s = try split()
        #expect(s.targetRegistered(shard: 3, replica: "r3") == [.copy(source: 1, shard: 3, replica: "r3")])
        #expect(s.targets[1].state == .copying)
        #expect(s.caughtUp(shard: 3) == [], "not caught up before its copy is installed")
        #expect(s.targets[1].state == .copying)
        s.copyInstalled(shard: 3)
        #expect(s.targets[1].state == .catchingUp)
        #expect(s.caughtUp(shard: 3) == [], "the other target is not fresh yet")
        #expect(s.phase == .copying)
        #expect(s.describe(shard: 3) == "fresh" && s.describe(shard: 2) == "waiting" && s.describe(shard: 0) == nil)
        #expect(s.targetRegistered(shard: 9, replica: "x") == [], "not a new shard of this split")
    }

    @Test func writesPauseWhenTheLastTargetIsFreshAndTheSwitchIsOneTransaction() throws {
        let s = try paused()
        #expect(s.phase == .switching)
        let actions = s.drained(keys: keys, readAt: 11, mapRevision: 5)
        guard case .commitMap(let t) = actions.first, actions.count == 1 else {
            Issue.record("expected one commitMap, got \(actions)")
            return
        }
        #expect(t.compares == [.unchanged(keys.shardSplit, since: 11), .unchanged(keys.shardMap, since: 5)])
        guard case .put(let mk, let mv, _) = t.success.first, case .put(let sk, let sv, _) = t.success.last, t.success.count == 2 else {
            Issue.record("expected two puts, got \(t.success)")
            return
        }
        #expect(mk == keys.shardMap && ShardMap.decode(mv) == s.after)
        #expect(sk == keys.shardSplit && ShardSplit.decode(sv)?.phase == .purging)
        #expect(try split().drained(keys: keys, readAt: 1, mapRevision: 1) == [], "no switch before every target is fresh")
    }

    @Test func aCommittedSwitchRoutesByTheNewMapAndPurgesEveryShard() throws {
        var s = try paused()
        let actions = s.mapCommitted(true, sequences: [0: 40, 1: 33])
        let map = s.after
        #expect(actions.first == .route(map, sequences: [2: 40, 3: 33]))
        #expect(Array(actions.dropFirst()) == (0..<4).map { .purge(shard: $0, map: map) })
        #expect(s.phase == .purging)
        #expect((0..<4).allSatisfy { s.filtersQueries(of: $0) })
        #expect(s.describe(shard: 1) == "purging")
        #expect(s.mapCommitted(true, sequences: [:]) == [], "a second answer changes nothing")
    }

    @Test func aRefusedSwitchDoesNotRoute() throws {
        var s = try paused()
        #expect(s.mapCommitted(false, sequences: [0: 1, 1: 1]) == [])
        #expect(s.phase == .switching)
    }

    @Test func eachShardFiltersUntilItsPurgeIsDoneThenTheSplitEnds() throws {
        var s = try paused()
        _ = s.mapCommitted(true, sequences: [:])
        var stored = s.purgeDone(shard: 2, keys: keys, readAt: 20)
        guard case .store(let t) = stored.first else {
            Issue.record("expected the split stored, got \(stored)")
            return
        }
        #expect(t.compares == [.unchanged(keys.shardSplit, since: 20)])
        #expect(!s.filtersQueries(of: 2) && s.filtersQueries(of: 0))
        #expect(s.purgeDone(shard: 2, keys: keys, readAt: 21) == [], "a purge reported twice counts once")
        _ = s.purgeDone(shard: 0, keys: keys, readAt: 21)
        _ = s.purgeDone(shard: 1, keys: keys, readAt: 22)
        stored = s.purgeDone(shard: 3, keys: keys, readAt: 23)
        #expect(stored == [.finish(Transaction(if: [.unchanged(keys.shardSplit, since: 23)], then: [.delete(keys.shardSplit)]))])
        #expect(s.phase == .done)
        #expect(!(0..<4).contains { s.filtersQueries(of: $0) })
    }

    @Test func aTargetLostWhilePausedResumesWritesAndIsCopiedAgain() throws {
        var s = try paused()
        #expect(s.targetLost(shard: 3) == [.resumeWrites])
        #expect(s.phase == .copying && s.targets[1].state == .waiting)
        #expect(s.drained(keys: keys, readAt: 1, mapRevision: 1) == [])
        #expect(s.targetRegistered(shard: 3, replica: "r3b") == [.copy(source: 1, shard: 3, replica: "r3b")])
        s.copyInstalled(shard: 3)
        #expect(s.caughtUp(shard: 3) == [.pauseWrites])
    }

    @Test func aTargetLostWhileCopyingWaitsForItsIndexer() throws {
        var s = try split()
        _ = s.targetRegistered(shard: 2, replica: "r2")
        #expect(s.targetLost(shard: 2) == [])
        #expect(s.targets[0].state == .waiting)
        s.copyInstalled(shard: 2)
        #expect(s.targets[0].state == .waiting, "a copy that finishes for a lost target does not count")
    }

    @Test func aTargetRegisteringAgainDuringTheSwitchIsCopiedAgain() throws {
        var s = try paused()
        #expect(s.targetRegistered(shard: 2, replica: "r2") == [], "the same replica, fresh: nothing to do")
        #expect(s.targetRegistered(shard: 2, replica: "r2-new") == [.resumeWrites, .copy(source: 0, shard: 2, replica: "r2-new")])
        #expect(s.phase == .copying)
    }

    @Test func lateEventsAfterTheSwitchChangeNothing() throws {
        var s = try paused()
        _ = s.mapCommitted(true, sequences: [:])
        #expect(s.targetLost(shard: 2) == [])
        #expect(s.targetRegistered(shard: 2, replica: "other") == [])
        #expect(s.caughtUp(shard: 2) == [])
        #expect(s.phase == .purging)
    }

    @Test func aCoordinatorRestartedBeforeTheSwitchCopiesEveryTargetAgain() throws {
        var s = try paused()
        let stored = try #require(ShardSplit.decode(s.encoded()))
        s = stored
        #expect(s.resume(current: s.before) == [])
        #expect(s.phase == .copying)
        #expect(s.targets.allSatisfy { $0.state == .waiting })
        #expect(s.targetRegistered(shard: 2, replica: "r2") == [.copy(source: 0, shard: 2, replica: "r2")])
    }

    @Test func aCoordinatorRestartedAfterTheCommitRoutesByTheNewMapAndPurgesWhatIsLeft() throws {
        // The switch committed the map and the split's purge phase together;
        // a successor reads both.
        var s = try paused()
        _ = s.mapCommitted(true, sequences: [:])
        _ = s.purgeDone(shard: 1, keys: keys, readAt: 3)
        var resumed = try #require(ShardSplit.decode(s.encoded()))
        let map = resumed.after
        #expect(
            resumed.resume(current: map) == [
                .route(map, sequences: [:]), .purge(shard: 0, map: map), .purge(shard: 2, map: map), .purge(shard: 3, map: map),
            ])
        #expect(resumed.phase == .purging)
    }

    @Test func aSwitchingSplitFoundBesideTheNewMapCommitted() throws {
        // The coordinator died after its commit but before it stored anything
        // else: the map's epoch says the switch happened.
        var s = try paused()
        let map = s.after
        let actions = s.resume(current: map)
        #expect(actions.first == .route(map, sequences: [:]))
        #expect(actions.count == 5)
        #expect(s.phase == .purging)
    }

    @Test func answersAreFilteredBySlotAndByMapEpoch() throws {
        let before = try ShardMap(shards: 2, slotsPerShard: 8)
        let after = try before.split(to: 4)
        for i in 0..<500 {
            let domain = "org.example.d\(i)"
            let source = before.shard(ofDomain: domain)
            // Exactly one of a source and its sibling owns each of the source's domains.
            #expect(after.owns(shard: source, domain: domain) != after.owns(shard: source + 2, domain: domain))
            #expect(before.owns(shard: source, domain: domain))
        }
        #expect(after.accepts(answerEpoch: after.epoch))
        #expect(!after.accepts(answerEpoch: before.epoch))
    }
}
