import Foundation

/// A change of a shard's replicas, online, as the control plane keeps it at
/// ``ClusterKeys/replicaChange``: written by `limelight shards add-replica`,
/// `retire` or `move`, carried out by the active coordinator (`ReplicaRun`
/// in the Coordinator module), and read again by a coordinator that takes
/// over in the middle.
///
/// An addition waits for the new replica (named as its workers register it)
/// to hold every change of each shard: copied from an in-sync replica and
/// caught up from the log, read by no query meanwhile. A retirement takes
/// the replica out of the shards' writes and queries, waits for what was
/// sent to it to be answered, then ends the change: the replica is recorded
/// in ``RetiredReplicas`` (its workers are refused from then on) in the
/// transaction that deletes this record. A move is an addition, then a
/// retirement. A retirement that would leave a shard without another
/// in-sync replica is refused: the coordinator stores ``Phase/refused``
/// with the reason, which the command prints before deleting the record.
package struct ReplicaChange: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable { case add, retire, move }

    package enum Phase: String, Codable, Sendable {
        /// The new replica is copied and caught up (no query reads it).
        case adding
        /// The old replica is out of writes and queries; what it was sent drains.
        case retiring
        /// The coordinator refused the change (``reason``); nothing was retired.
        case refused
    }

    package var kind: Kind
    /// The shards whose replicas change.
    package var shards: [Int]
    /// The replica added (``Kind/add``, ``Kind/move``), as its workers register it.
    package var add: String?
    /// The added replica's data folder on the host of `limelight up`, which
    /// starts its workers there; nil when the operator starts them.
    package var folder: String?
    /// The replica retired (``Kind/retire``, ``Kind/move``).
    package var retire: String?
    package var phase: Phase
    package var reason: String?

    package init(kind: Kind, shards: [Int], add: String? = nil, folder: String? = nil, retire: String? = nil) {
        self.kind = kind
        self.shards = shards.sorted()
        self.add = add
        self.folder = folder
        self.retire = retire
        phase = kind == .retire ? .retiring : .adding
    }

    /// One line for logs and the command's output.
    package var summary: String {
        let on = "shard\(shards.count == 1 ? "" : "s") \(shards.map(String.init).joined(separator: ","))"
        switch kind {
        case .add: return "adding replica \(add ?? "?") to \(on)"
        case .retire: return "retiring replica \(retire ?? "?") from \(on)"
        case .move: return "moving \(on) from replica \(retire ?? "?") to \(add ?? "?")"
        }
    }

    /// The transaction that records this change: only when no other replica
    /// change and no split is under way.
    package func starting(keys: ClusterKeys) -> Transaction {
        Transaction(if: [.absent(keys.replicaChange), .absent(keys.shardSplit)], then: [.put(keys.replicaChange, encoded())])
    }

    /// The transaction that stores this record (its phase moved on),
    /// replacing the one read at `revision`.
    package func storing(keys: ClusterKeys, readAt revision: Int) -> Transaction {
        Transaction(if: [.unchanged(keys.replicaChange, since: revision)], then: [.put(keys.replicaChange, encoded())])
    }

    /// The end of the change: the record deleted and the retired replicas
    /// (read at `retiredRevision`, 0: none yet) updated, in one transaction —
    /// an added replica is no longer retired from its shards, a retired one is.
    package func completing(keys: ClusterKeys, readAt revision: Int, retired: RetiredReplicas, retiredRevision: Int) -> Transaction {
        var next = retired
        if let add { next.restore(add, shards: shards) }
        if let retire, phase == .retiring { next.retire(retire, shards: shards) }
        return Transaction(
            if: [.unchanged(keys.replicaChange, since: revision), .unchanged(keys.retiredReplicas, since: retiredRevision)],
            then: [.delete(keys.replicaChange), .put(keys.retiredReplicas, next.encoded())])
    }

    package func encoded() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? e.encode(self)) ?? Data()
    }

    package static func decode(_ data: Data) -> ReplicaChange? { try? JSONDecoder().decode(Self.self, from: data) }
}

/// The replicas retired from shards, at ``ClusterKeys/retiredReplicas``:
/// a worker of a retired replica registering for one of those shards is
/// refused (it exits, naming the retirement), so a retired replica left
/// running never serves stale answers; adding it again lifts that.
package struct RetiredReplicas: Codable, Sendable, Equatable {
    /// Replica name → the shards it was retired from.
    package var replicas: [String: [Int]]

    package init(replicas: [String: [Int]] = [:]) { self.replicas = replicas }

    package func isRetired(_ replica: String, shard: Int) -> Bool { replicas[replica]?.contains(shard) ?? false }

    package mutating func retire(_ replica: String, shards: [Int]) {
        replicas[replica] = Array(Set((replicas[replica] ?? []) + shards)).sorted()
    }

    package mutating func restore(_ replica: String, shards: [Int]) {
        guard let had = replicas[replica] else { return }
        let left = had.filter { !shards.contains($0) }
        replicas[replica] = left.isEmpty ? nil : left
    }

    package func encoded() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? e.encode(self)) ?? Data()
    }

    package static func decode(_ data: Data) -> RetiredReplicas? { try? JSONDecoder().decode(Self.self, from: data) }
}
