import Foundation
import LimelightClient
import Testing

@testable import LimelightCLI

/// `limelight shards status`: each shard's slots and each replica's state,
/// read from the coordinator's stats.
@Suite struct ShardStatusTests {
    let stats = """
        {"shardMap": {"slots": 2048, "shards": 2, "epoch": 1},
         "shards": [{"shard": 0, "queryWorkers": ["query-0"]}, {"shard": 1, "queryWorkers": []}],
         "replication": {"shards": [
           {"shard": 0, "replicas": [
             {"replica": "a", "sequence": 9, "fresh": true, "detached": false, "live": true},
             {"replica": "b", "sequence": 4, "fresh": false, "detached": false, "live": true, "catchingUpTo": 9},
             {"replica": "c", "sequence": 0, "fresh": false, "detached": true, "live": true, "copying": {"copy": "k1"}}]},
           {"shard": 1, "replicas": [
             {"replica": "a", "sequence": 3, "fresh": false, "detached": true, "live": true},
             {"replica": "b", "sequence": 2, "fresh": false, "detached": false, "live": true},
             {"replica": "d", "sequence": 3, "fresh": true, "detached": false, "live": false}]}]}}
        """

    @Test func aRowPerShardWithItsSlotsAndEachReplicasState() throws {
        let rows = ShardStatus.rows(stats: try JSONValue.parse(stats))
        #expect(rows.map(\.shard) == [0, 1])
        #expect(rows.allSatisfy { $0.slots == 1024 })
        #expect(rows[0].queryWorkers == 1 && rows[1].queryWorkers == 0)
        #expect(rows[0].replicas.map(\.state) == [.inSync, .catchingUp, .copying])
        #expect(rows[1].replicas.map(\.state) == [.detached, .behind, .away])
        #expect(rows[0].text == "shard 0: 1024 slots, 1 query workers, replicas: a in sync (9), b catching up (4), c copying (0)")
        let json = rows[1].json
        #expect(json["slots"]?.intValue == 1024)
        #expect(json["replicas"]?.arrayValue?.first?["state"]?.stringValue == "detached")
    }

    @Test func aClusterWithoutAMapHasNoSlots() throws {
        let rows = ShardStatus.rows(stats: try JSONValue.parse(#"{"shards": [{"shard": 0}]}"#))
        #expect(rows == [ShardStatus(shard: 0, slots: nil, replicas: [], queryWorkers: 0)])
        #expect(rows[0].text == "shard 0: no slots, 0 query workers, replicas: none")
    }
}
