import ControlPlane
import Foundation
import ShardStore
import Testing
import WireProtocol

/// The split's record (``ShardSplit``): its new shards and their sources,
/// and the transactions that start it, store its purge phase and switch the map.
@Suite struct ShardSplitTests {
    let keys = ClusterKeys(cluster: "t")

    @Test func aNewShardPerSourceSlotGroupAndTheMapAfter() throws {
        let s = try ShardSplit(splitting: ShardMap(shards: 2, slotsPerShard: 6), to: 6)
        #expect(s.phase == .copying)
        #expect(s.targets.map(\.shard) == [2, 3, 4, 5])
        #expect(s.targets.map(\.source) == [0, 1, 0, 1])
        #expect(s.sources == [0, 1])
        #expect(s.after.shards == 6 && s.after.slots == 12 && s.after.epoch == s.before.epoch + 1)
        #expect(throws: ShardMap.Invalid.self) { try ShardSplit(splitting: ShardMap(shards: 2), to: 3) }
        #expect(throws: ShardMap.Invalid.self) { try ShardSplit(splitting: ShardMap(shards: 2), to: 2) }
        #expect(ShardSplit.decode(s.encoded()) == s)
    }

    @Test func startingNeedsNoSplitNorReplicaChangeUnderWayAndTheSameMap() throws {
        let s = try ShardSplit(splitting: ShardMap(shards: 2), to: 4)
        let t = s.starting(keys: keys, mapRevision: 7)
        #expect(t.compares == [.absent(keys.shardSplit), .absent(keys.replicaChange), .unchanged(keys.shardMap, since: 7)])
        #expect(t.success == [.put(keys.shardSplit, s.encoded())])
    }

    @Test func thePurgePhaseReplacesTheRecordReadAndTheSwitchDeletesIt() throws {
        let s = try ShardSplit(splitting: ShardMap(shards: 2), to: 4)
        let store = s.storingPurge(keys: keys, readAt: 11)
        #expect(store.compares == [.unchanged(keys.shardSplit, since: 11)])
        guard case .put(let k, let v, _) = store.success.first, store.success.count == 1 else {
            Issue.record("expected one put, got \(store.success)")
            return
        }
        #expect(k == keys.shardSplit && ShardSplit.decode(v)?.phase == .purging && ShardSplit.decode(v)?.targets == s.targets)
        let commit = s.committing(keys: keys, readAt: 12, mapRevision: 5)
        #expect(commit.compares == [.unchanged(keys.shardSplit, since: 12), .unchanged(keys.shardMap, since: 5)])
        #expect(commit.success == [.put(keys.shardMap, s.after.encoded()), .delete(keys.shardSplit)])
    }

    @Test func eachDomainIsKeptByExactlyOneOfASourceAndItsSibling() throws {
        let before = try ShardMap(shards: 2, slotsPerShard: 8)
        let after = try before.split(to: 4)
        for i in 0..<500 {
            let domain = "org.example.d\(i)"
            let source = before.shard(ofDomain: domain)
            let keptBySource = SlotFilter(slots: after.slots, shards: 4, shard: source).keeps(domain: domain)
            let keptBySibling = SlotFilter(slots: after.slots, shards: 4, shard: source + 2).keeps(domain: domain)
            #expect(keptBySource != keptBySibling, "\(domain)")
            #expect(keptBySource == (after.shard(ofDomain: domain) == source))
        }
    }

    @Test func aMapSplitFromTheFlagsCountAgrees() throws {
        let key = keys.shardMap
        func existing(_ m: ShardMap) -> KeyValue { KeyValue(key: key, value: m.encoded(), createRevision: 1, modRevision: 3, version: 2) }
        let split = try ShardMap(shards: 2).split(to: 4)
        #expect(ShardMap.bootstrap(existing: existing(split), shards: 2, key: key) == .agrees(split))
        #expect(ShardMap.bootstrap(existing: existing(split), shards: 4, key: key) == .agrees(split))
        guard case .conflict = ShardMap.bootstrap(existing: existing(split), shards: 3, key: key) else {
            Issue.record("a count the map was not made from conflicts")
            return
        }
        // Made with 4 shards (4,096 slots): not a split of 2.
        guard case .conflict = ShardMap.bootstrap(existing: existing(try ShardMap(shards: 4)), shards: 2, key: key) else {
            Issue.record("a map made with 4 shards conflicts with --shards 2")
            return
        }
    }
}
