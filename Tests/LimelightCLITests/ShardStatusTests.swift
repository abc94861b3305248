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

    /// The in-sync set the coordinator keeps in the control plane, per shard and per replica.
    @Test func theInSyncSetIsShownPerShardAndPerReplica() throws {
        let withSet = stats.replacingOccurrences(
            of: #"{"shard": 0, "replicas": ["#, with: #"{"shard": 0, "inSync": {"replicas": ["a"], "epoch": 2}, "replicas": ["#)
        let rows = ShardStatus.rows(stats: try JSONValue.parse(withSet))
        #expect(rows[0].inSync == ["a"] && rows[1].inSync == nil)
        #expect(rows[0].text.hasSuffix("c copying (0), in-sync set: a"))
        let json = rows[0].json
        #expect(json["inSyncSet"]?.arrayValue?.compactMap(\.stringValue) == ["a"])
        #expect(json["replicas"]?.arrayValue?.map { $0["inSyncSet"]?.boolValue } == [true, false, false])
        #expect(rows[1].json["inSyncSet"] == .null)
    }

    @Test func aClusterWithoutAMapHasNoSlots() throws {
        let rows = ShardStatus.rows(stats: try JSONValue.parse(#"{"shards": [{"shard": 0}]}"#))
        #expect(rows == [ShardStatus(shard: 0, slots: nil, replicas: [], queryWorkers: 0)])
        #expect(rows[0].text == "shard 0: no slots, 0 query workers, replicas: none")
    }
}
