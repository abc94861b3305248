import ControlPlane
import Foundation
import Testing

/// A replica change's record and the retired replicas, as the control plane keeps them.
@Suite struct ReplicaChangeTests {
    let keys = ClusterKeys(cluster: "t")

    @Test func startingNeedsNoOtherChangeNorSplitUnderWay() {
        let c = ReplicaChange(kind: .move, shards: [1, 0], add: "h:/b", folder: "/b", retire: "h:/a")
        #expect(c.shards == [0, 1] && c.phase == .adding)
        #expect(ReplicaChange(kind: .retire, shards: [0], retire: "h:/a").phase == .retiring)
        let t = c.starting(keys: keys)
        #expect(t.compares == [.absent(keys.replicaChange), .absent(keys.shardSplit)])
        #expect(t.success == [.put(keys.replicaChange, c.encoded())])
        #expect(ReplicaChange.decode(c.encoded()) == c)
        #expect(c.summary == "moving shards 0,1 from replica h:/a to h:/b")
    }

    @Test func retiredReplicasAreRecordedPerShardAndAddingOneAgainLiftsIt() {
        var r = RetiredReplicas()
        r.retire("h:/a", shards: [2, 0])
        r.retire("h:/a", shards: [0, 1])
        #expect(r.replicas["h:/a"] == [0, 1, 2])
        #expect(r.isRetired("h:/a", shard: 1) && !r.isRetired("h:/a", shard: 3) && !r.isRetired("h:/b", shard: 1))
        r.restore("h:/a", shards: [0, 1])
        #expect(r.replicas["h:/a"] == [2])
        r.restore("h:/a", shards: [2])
        #expect(r.replicas["h:/a"] == nil)
        #expect(RetiredReplicas.decode(r.encoded()) == r)
    }

    @Test func anAdditionThatCompletesDoesNotRetireAnything() {
        let c = ReplicaChange(kind: .add, shards: [0], add: "h:/b")
        let t = c.completing(keys: keys, readAt: 4, retired: RetiredReplicas(replicas: ["h:/b": [0]]), retiredRevision: 2)
        #expect(t.success == [.delete(keys.replicaChange), .put(keys.retiredReplicas, RetiredReplicas().encoded())])
    }
}
