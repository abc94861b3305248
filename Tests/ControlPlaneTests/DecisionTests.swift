import ControlPlane
import Foundation
import Testing
import WireProtocol

/// The election's, the in-sync set's and the shard map's decisions, without a store.
@Suite struct LeadershipTests {
    let keys = ClusterKeys(cluster: "t")
    let lease = Lease(id: 7, ttlSeconds: 3)

    func kv(_ key: String, _ value: Data, mod: Int) -> KeyValue {
        KeyValue(key: key, value: value, createRevision: mod, modRevision: mod, version: 1)
    }

    func leader(_ id: String = "a") -> Leadership { Leadership(id: id, clients: "tcp://\(id):7700", workers: "tcp://\(id):7701", keys: keys) }

    @Test func campaignsWithTheNextEpochWhenNoneIsActive() {
        var l = leader()
        let step = l.observe(RangeResult(revision: 9, values: [kv(keys.epoch, Data("4".utf8), mod: 5)]), lease: lease)
        guard case .campaign(let t, let epoch) = step else { Issue.record("expected a campaign, got \(step)"); return }
        #expect(epoch == 5)
        #expect(t.compares == [.absent(keys.active), .unchanged(keys.epoch, since: 5)])
        let record = ActiveCoordinator(id: "a", epoch: 5, clients: "tcp://a:7700", workers: "tcp://a:7701", lease: 7)
        #expect(t.success == [.put(keys.active, record.encoded(), lease: 7), .put(keys.epoch, Data("5".utf8))])
        #expect(l.servingEpoch(at: .now) == nil, "a campaign not yet answered does not serve")
    }

    @Test func aFirstCampaignComparesTheEpochAsAbsent() {
        var l = leader()
        guard case .campaign(let t, let epoch) = l.observe(RangeResult(revision: 1, values: []), lease: lease) else {
            Issue.record("expected a campaign")
            return
        }
        #expect(epoch == 1)
        #expect(t.compares.last == .unchanged(keys.epoch, since: 0))
    }

    @Test func servesAfterWinningUntilTheLeaseMayHaveLapsed() {
        var l = leader()
        let sent = ContinuousClock.now
        l.campaigned(TransactionResult(succeeded: true, revision: 10), epoch: 5, lease: lease, sentAt: sent)
        #expect(l.servingEpoch(at: sent.advanced(by: .seconds(2))) == 5)
        l.renewed(ttlSeconds: 3, sentAt: sent.advanced(by: .seconds(2)))
        #expect(l.servingEpoch(at: sent.advanced(by: .milliseconds(4900))) == 5)
        // Three seconds after the last renewal was *sent*: it may have lapsed.
        #expect(l.servingEpoch(at: sent.advanced(by: .seconds(5))) == nil)
        guard case .deposed(let epoch, _) = l.role else { Issue.record("expected deposed, got \(l.role)"); return }
        #expect(epoch == 5)
        // Deposed for good: a late renewal does not bring it back.
        l.renewed(ttlSeconds: 3, sentAt: sent.advanced(by: .seconds(6)))
        #expect(l.servingEpoch(at: sent.advanced(by: .seconds(6))) == nil)
    }

    @Test func aLostCampaignServesNothing() {
        var l = leader()
        l.campaigned(TransactionResult(succeeded: false, revision: 10), epoch: 5, lease: lease, sentAt: .now)
        #expect(l.servingEpoch(at: .now) == nil)
        #expect(l.role == .standby(active: nil))
    }

    @Test func standsByNamingTheActiveOne() {
        var l = leader("b")
        let other = ActiveCoordinator(id: "a", epoch: 3, clients: "tcp://a:7700", workers: "tcp://a:7701", lease: 1)
        let step = l.observe(
            RangeResult(revision: 4, values: [kv(keys.active, other.encoded(), mod: 4), kv(keys.epoch, Data("3".utf8), mod: 4)]), lease: lease)
        #expect(step == .standBy)
        #expect(l.knownActive == other)
    }

    @Test func recognisesItsOwnResentCampaign() {
        var l = leader()
        let mine = ActiveCoordinator(id: "a", epoch: 2, clients: "tcp://a:7700", workers: "tcp://a:7701", lease: 7)
        #expect(l.observe(RangeResult(revision: 4, values: [kv(keys.active, mine.encoded(), mod: 4)]), lease: lease) == .serve)
        #expect(l.role == .active(epoch: 2))
    }

    @Test func stepsDownWhenTheRecordNamesAnother() {
        var l = leader()
        l.campaigned(TransactionResult(succeeded: true, revision: 10), epoch: 5, lease: lease, sentAt: .now)
        let other = ActiveCoordinator(id: "b", epoch: 6, clients: "x", workers: "y", lease: 9)
        let step = l.observe(RangeResult(revision: 12, values: [kv(keys.active, other.encoded(), mod: 12)]), lease: lease)
        guard case .stepDown = step else { Issue.record("expected to step down, got \(step)"); return }
        #expect(l.servingEpoch(at: .now) == nil)
    }

    @Test func aLapsedLeaseDeposes() {
        var l = leader()
        l.campaigned(TransactionResult(succeeded: true, revision: 10), epoch: 5, lease: lease, sentAt: .now)
        l.renewed(ttlSeconds: 0, sentAt: .now)
        #expect(l.servingEpoch(at: .now) == nil)
    }
}

@Suite struct FenceAndSetTests {
    @Test func aReplicaLeavesTheInSyncSetOnlyWhileAnotherRemains() {
        let set = InSyncSet(replicas: ["r2", "r1"], epoch: 1)
        #expect(set.replicas == ["r1", "r2"])
        #expect(set.removing("r2", epoch: 2) == .write(InSyncSet(replicas: ["r1"], epoch: 2)))
        #expect(set.removing("r9", epoch: 2) == .notMember)
        #expect(InSyncSet(replicas: ["r1"], epoch: 1).removing("r1", epoch: 2) == .lastMember)
        #expect(set.adding("r1", epoch: 2) == nil)
        #expect(InSyncSet(replicas: ["r1"], epoch: 1).adding("r2", epoch: 3) == InSyncSet(replicas: ["r1", "r2"], epoch: 3))
        let t = set.replacing(key: "k", readAt: 8)
        #expect(t.compares == [.unchanged("k", since: 8)])
        #expect(InSyncSet.decode(set.encoded()) == set)
    }

    @Test func slotsKeepEveryDomainOnItsShard() throws {
        let map = try ShardMap(shards: 8)
        #expect(map.slots == 8192)
        for i in 0..<2000 {
            let domain = "com.example.d\(i)"
            #expect(map.shard(ofDomain: domain) == Sharding.shard(forDomain: domain, shardCount: 8))
        }
    }

    @Test func aSplitMovesOnlyToTheNewShards() throws {
        let map = try ShardMap(shards: 4, replicas: [["a"], ["b"], ["c"], ["d"]])
        let split = try map.split(to: 8)
        #expect(split.shards == 8 && split.slots == map.slots && split.epoch == map.epoch + 1)
        #expect(split.replicas == [["a"], ["b"], ["c"], ["d"], [], [], [], []])
        for slot in 0..<map.slots {
            let before = map.shard(ofSlot: slot), after = split.shard(ofSlot: slot)
            #expect(after == before || after == before + 4, "slot \(slot) went from \(before) to \(after)")
            #expect(map.source(ofNewShard: after) == before)
        }
        #expect(Array(map.slots(of: 1).prefix(3)) == [1, 5, 9])
        #expect(throws: ShardMap.Invalid.self) { try map.split(to: 6) }
        #expect(throws: ShardMap.Invalid.self) { try ShardMap(shards: 4, slotsPerShard: 2).split(to: 16) }
        #expect(ShardMap.decode(split.encoded()) == split)
    }

    @Test func compareSemantics() {
        let kv = KeyValue(key: "k", value: Data("v".utf8), createRevision: 2, modRevision: 5, version: 3)
        #expect(Compare.absent("k").holds(for: nil))
        #expect(!Compare.absent("k").holds(for: kv))
        #expect(Compare.unchanged("k", since: 5).holds(for: kv))
        #expect(!Compare.unchanged("k", since: 4).holds(for: kv))
        #expect(Compare.unchanged("k", since: 0).holds(for: nil))
        #expect(Compare("k", .value(Data("v".utf8))).holds(for: kv))
        #expect(Compare("k", .version(2), .greater).holds(for: kv))
    }
}

@Suite struct ShardMapBootstrapTests {
    let key = ClusterKeys(cluster: "t").shardMap

    @Test func theFirstCoordinatorCreatesTheMap() throws {
        guard case .create(let map, let t) = ShardMap.bootstrap(existing: nil, shards: 4, key: key) else {
            Issue.record("expected a creation")
            return
        }
        #expect(map == (try ShardMap(shards: 4)))
        #expect(t.compares == [.absent(key)])
        #expect(t.success == [.put(key, map.encoded())])
    }

    @Test func aMatchingCountAgreesAndAnotherIsRefusedNamingBoth() throws {
        let map = try ShardMap(shards: 4)
        let kv = KeyValue(key: key, value: map.encoded(), createRevision: 3, modRevision: 3, version: 1)
        #expect(ShardMap.bootstrap(existing: kv, shards: 4, key: key) == .agrees(map))
        guard case .conflict(let message) = ShardMap.bootstrap(existing: kv, shards: 8, key: key) else {
            Issue.record("expected a conflict")
            return
        }
        #expect(message.contains("4 shards") && message.contains("--shards 8"))
        let garbage = KeyValue(key: key, value: Data("not json".utf8), createRevision: 3, modRevision: 3, version: 1)
        guard case .conflict(let why) = ShardMap.bootstrap(existing: garbage, shards: 4, key: key) else {
            Issue.record("expected a conflict")
            return
        }
        #expect(why.contains("cannot be read"))
    }
}

@Suite struct FencedTests {
    @Test func aStaleEpochAnswerDeposesAnActiveCoordinatorOnly() {
        var l = Leadership(id: "a", clients: "c", workers: "w", keys: ClusterKeys(cluster: "t"))
        let early = l.fenced("too early", follows: 4)
        #expect(!early, "a standby is not deposed")
        l.campaigned(TransactionResult(succeeded: true, revision: 2), epoch: 3, lease: Lease(id: 1, ttlSeconds: 3), sentAt: .now)
        #expect(l.servingEpoch(at: .now) == 3)
        let own = l.fenced("indexer ix refused a predecessor's change", follows: 3)
        #expect(!own, "a refusal of an older coordinator's change, reaching its successor, does not depose it")
        let older = l.fenced("indexer ix refused a change", follows: 2)
        #expect(!older)
        #expect(l.servingEpoch(at: .now) == 3)
        let fenced = l.fenced("indexer ix refused a change", follows: 4)
        #expect(fenced)
        #expect(l.servingEpoch(at: .now) == nil)
        #expect(l.role == .deposed(epoch: 3, reason: "indexer ix refused a change"))
    }

    @Test func aRefusalNamingNoEpochIsTakenAsASuccessors() {
        var l = Leadership(id: "a", clients: "c", workers: "w", keys: ClusterKeys(cluster: "t"))
        l.campaigned(TransactionResult(succeeded: true, revision: 2), epoch: 3, lease: Lease(id: 1, ttlSeconds: 3), sentAt: .now)
        let fenced = l.fenced("an older indexer refused a change", follows: nil)
        #expect(fenced)
    }
}

@Suite struct GoneProcessTests {
    let keys = ClusterKeys(cluster: "t")

    @Test func aGoneProcessOnThisHostIsReplacedAtOnce() {
        var l = Leadership(id: "b", clients: "c", workers: "w", keys: keys)
        l.host = "h"
        l.pid = 2
        let old = ActiveCoordinator(id: "a", epoch: 4, clients: "x", workers: "y", lease: 1, host: "h", pid: 1)
        let state = RangeResult(
            revision: 9,
            values: [
                KeyValue(key: keys.active, value: old.encoded(), createRevision: 7, modRevision: 7, version: 1),
                KeyValue(key: keys.epoch, value: Data("4".utf8), createRevision: 2, modRevision: 7, version: 4),
            ])
        // Alive: stand by.
        var waiting = l
        #expect(waiting.observe(state, lease: Lease(id: 5, ttlSeconds: 10), isGone: { _ in false }) == .standBy)
        // Gone: campaign against exactly that record.
        guard case .campaign(let t, let epoch) = l.observe(state, lease: Lease(id: 5, ttlSeconds: 10), isGone: { $0.pid == 1 }) else {
            Issue.record("expected a takeover")
            return
        }
        #expect(epoch == 5)
        #expect(t.compares == [.unchanged(keys.active, since: 7), .unchanged(keys.epoch, since: 7)])
        let mine = ActiveCoordinator(id: "b", epoch: 5, clients: "c", workers: "w", lease: 5, host: "h", pid: 2)
        #expect(t.success.first == .put(keys.active, mine.encoded(), lease: 5))
    }
}
