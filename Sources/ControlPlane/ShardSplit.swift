import Foundation

/// An online split of every shard, N → M shards (M a multiple of N), as the
/// control plane keeps it at ``ClusterKeys/shardSplit``: written by
/// `limelight shards split`, carried out by the active coordinator
/// (`SplitRun` in the Coordinator module), and read again by a coordinator
/// that takes over in the middle.
///
/// New shard j (N ≤ j < M) takes its slots from shard `j mod N`, its
/// source. The record changes twice: before the shards purge the rows of
/// the slots they no longer own (``Phase/purging``: from then on a new shard
/// may lack rows its source still has, so a successor must not copy it
/// again, only purge again), and when the new map is committed, which
/// deletes it in the same transaction.
package struct ShardSplit: Codable, Sendable, Equatable {
    package enum Phase: String, Codable, Sendable {
        /// The new shards are being copied from their sources and caught up.
        case copying
        /// The shards purge the rows of slots they no longer own; the map is next.
        case purging
    }

    package struct Target: Codable, Sendable, Equatable {
        /// The new shard's number.
        package var shard: Int
        /// The shard it takes its slots from.
        package var source: Int
    }

    /// The map before the split; the map after is ``after``.
    package var before: ShardMap
    package var to: Int
    package var phase: Phase
    package var targets: [Target]

    /// The map the split leads to: `to` shards, its epoch one higher.
    package var after: ShardMap { (try? before.split(to: to)) ?? before }

    /// The sources, each once.
    package var sources: [Int] { Array(Set(targets.map(\.source))).sorted() }

    /// The split of `map` to `n` shards; throws when `n` is not a multiple of
    /// today's count (or more than the slots allow).
    package init(splitting map: ShardMap, to n: Int) throws(ShardMap.Invalid) {
        _ = try map.split(to: n)
        before = map
        to = n
        phase = .copying
        targets = (map.shards..<n).map { Target(shard: $0, source: map.source(ofNewShard: $0)) }
    }

    /// The transaction that records this split: only when none is under way
    /// and the map is the one it was made from (read at `mapRevision`), and
    /// no replica change is under way.
    package func starting(keys: ClusterKeys, mapRevision: Int) -> Transaction {
        Transaction(
            if: [.absent(keys.shardSplit), .absent(keys.replicaChange), .unchanged(keys.shardMap, since: mapRevision)],
            then: [.put(keys.shardSplit, encoded())])
    }

    /// The transaction that records the purge phase, replacing the record
    /// read at `revision`.
    package func storingPurge(keys: ClusterKeys, readAt revision: Int) -> Transaction {
        var next = self
        next.phase = .purging
        return Transaction(if: [.unchanged(keys.shardSplit, since: revision)], then: [.put(keys.shardSplit, next.encoded())])
    }

    /// The switch: the new map and the end of the split in one transaction,
    /// if neither the record (read at `revision`) nor the map (read at
    /// `mapRevision`) changed meanwhile.
    package func committing(keys: ClusterKeys, readAt revision: Int, mapRevision: Int) -> Transaction {
        Transaction(
            if: [.unchanged(keys.shardSplit, since: revision), .unchanged(keys.shardMap, since: mapRevision)],
            then: [.put(keys.shardMap, after.encoded()), .delete(keys.shardSplit)])
    }

    package func encoded() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? e.encode(self)) ?? Data()
    }

    package static func decode(_ data: Data) -> ShardSplit? { try? JSONDecoder().decode(Self.self, from: data) }
}
