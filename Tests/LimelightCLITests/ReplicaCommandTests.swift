import Foundation
import LimelightClient
import Testing

@testable import LimelightCLI

/// What `limelight shards add-replica`, `retire` and `move` decide before
/// they record a change: the replica a name or folder means, the shards
/// `--shards` names, the shards that would be left without an in-sync replica.
@Suite struct ReplicaCommandTests {
    @Test func aReplicaIsNamedByItsNameOrOnItsHostByItsDataFolder() {
        let here = replicaName(folder: "/srv/data/replica-1")
        let known = ["other:/srv/data", "\(ProcessInfo.processInfo.hostName):/srv/data", here]
        #expect(resolveReplica("other:/srv/data", known: known) == "other:/srv/data")
        #expect(resolveReplica("/srv/data/replica-1", known: known) == here)
        #expect(resolveReplica("/srv/data/replica-1/", known: known) == here)
        // This host's folder first; of other hosts', only one that is the only one.
        #expect(resolveReplica("/srv/data", known: known) == "\(ProcessInfo.processInfo.hostName):/srv/data")
        #expect(resolveReplica("/opt/d", known: ["x:/opt/d"]) == "x:/opt/d")
        #expect(resolveReplica("/opt/d", known: ["x:/opt/d", "y:/opt/d"]) == nil)
        #expect(resolveReplica("/srv/none", known: known) == nil)
    }

    @Test func shardsAreEveryShardOrTheOnesNamedWithinTheCluster() throws {
        var options = try ReplicaChangeOptions.parse([])
        #expect(try options.shardList(count: 3) == [0, 1, 2])
        options = try ReplicaChangeOptions.parse(["--shards", "2, 0,2"])
        #expect(try options.shardList(count: 3) == [0, 2])
        options = try ReplicaChangeOptions.parse(["--shards", "0,3"])
        #expect(throws: ReplicaCommandError.self) { try options.shardList(count: 3) }
    }

    @Test func aShardLacksAnotherReplicaWhenNoOtherIsInSync() throws {
        let stats = try JSONValue.parse(
            """
            {"shards": [{"shard": 0}, {"shard": 1}],
             "replication": {"shards": [
               {"shard": 0, "replicas": [
                 {"replica": "a", "sequence": 9, "fresh": true, "live": true},
                 {"replica": "b", "sequence": 9, "fresh": true, "live": true}]},
               {"shard": 1, "replicas": [
                 {"replica": "a", "sequence": 3, "fresh": true, "live": true},
                 {"replica": "b", "sequence": 2, "fresh": false, "live": true, "catchingUpTo": 3}]}]}}
            """)
        let rows = ShardStatus.rows(stats: stats)
        #expect(ReplicaChangeRun.lacking(rows, retiring: "a", shards: [0, 1]) == [1])
        #expect(ReplicaChangeRun.lacking(rows, retiring: "a", shards: [0]) == [])
        #expect(ReplicaChangeRun.lacking(rows, retiring: "b", shards: [0, 1]) == [])
    }
}
