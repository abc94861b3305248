import Foundation

/// Where each piece of the cluster's state lives in the control plane: every
/// key under one prefix per cluster (`/limelight/<cluster>/`), so that
/// several clusters may share an etcd. See docs/architecture.md, "Control
/// plane and failover".
package struct ClusterKeys: Sendable, Equatable {
    package let root: String

    package init(cluster: String = "default") { root = "/limelight/\(cluster)/" }

    /// The highest coordinator epoch granted (an integer); raised by CAS on takeover.
    package var epoch: String { root + "coordinator/epoch" }
    /// The active coordinator (an ``ActiveCoordinator``), under its lease.
    package var active: String { root + "coordinator/active" }
    /// Everything of the coordinators' election: what a standby polls.
    package var coordinatorPrefix: String { root + "coordinator/" }
    /// The shard map (a ``ShardMap``).
    package var shardMap: String { root + "shards/map" }
    /// The split under way, if any (a ``ShardSplit``).
    package var shardSplit: String { root + "shards/split" }
    /// The replica change under way, if any (a ``ReplicaChange``).
    package var replicaChange: String { root + "shards/replica-change" }
    /// The replicas retired from shards (``RetiredReplicas``): their workers are refused.
    package var retiredReplicas: String { root + "shards/retired" }
    /// A shard's in-sync replicas (an ``InSyncSet``).
    package func inSync(shard: Int) -> String { root + "shards/\(shard)/in-sync" }
    /// The cluster's API keys, one per key id (a ``SharedKey``'s form).
    package var apiKeys: String { root + "api-keys/" }
    package func apiKey(id: String) -> String { apiKeys + id }
}

/// Who serves as the active coordinator, kept under its lease at
/// ``ClusterKeys/active``: a standby names it in `not_active` answers.
package struct ActiveCoordinator: Codable, Sendable, Equatable {
    package var id: String
    package var epoch: Int
    /// Where its clients connect.
    package var clients: String
    /// Where its workers connect.
    package var workers: String
    package var lease: Int64
    /// Where its process runs: a coordinator on the same host may take over
    /// at once when that process is gone, rather than wait for the lease.
    package var host: String?
    package var pid: Int?

    package init(id: String, epoch: Int, clients: String, workers: String, lease: Int64, host: String? = nil, pid: Int? = nil) {
        self.id = id
        self.epoch = epoch
        self.clients = clients
        self.workers = workers
        self.lease = lease
        self.host = host
        self.pid = pid
    }

    package func encoded() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? e.encode(self)) ?? Data()
    }

    package static func decode(_ data: Data) -> ActiveCoordinator? { try? JSONDecoder().decode(Self.self, from: data) }
}
