import Foundation

/// An online split of every shard, N → M shards (M a multiple of N), as the
/// control plane keeps it at ``ClusterKeys/shardSplit``, so that a
/// coordinator taking over in the middle resumes it from there.
///
/// New shard j (N ≤ j < M) takes its slots from shard `j mod N`. It starts
/// as a replica of that source that no query reads: a whole-shard copy, then
/// the catch-up from the log (the machinery that repairs a replica that was
/// away). When every target is fresh, writes pause, and once the sources
/// have nothing in flight the map changes in one transaction (the new map,
/// its epoch one higher, and this split in its purge phase); from then on
/// writes and queries are routed by the new map. Every shard then holds rows
/// of slots it no longer owns (a source: the slots its sibling took; a
/// target: the slots its source kept); they are purged in the background,
/// and until a shard reports its purge done its queries keep only the
/// domains it owns (``ShardMap/owns(shard:domain:)``), so nothing is counted
/// twice meanwhile.
///
/// A value: each method takes an event and returns what the coordinator
/// must do (``Action``), so the rules are unit-tested without processes
/// (`ShardSplitTests`); the coordinator carries the actions out.
package struct ShardSplit: Codable, Sendable, Equatable {
    package enum Phase: String, Codable, Sendable {
        /// Targets are copied from their sources, then caught up.
        case copying
        /// Every target is fresh: writes are paused until the map changes.
        case switching
        /// The new map is in force; rows a shard no longer owns are being purged.
        case purging
        /// Every shard is purged: the split is over.
        case done
    }

    package enum TargetState: String, Codable, Sendable {
        /// No indexer for the new shard has registered yet.
        case waiting
        /// Its copy of the source is under way.
        case copying
        /// The copy is installed; the log is catching it up.
        case catchingUp
        /// It has every change of its source that was committed.
        case fresh
    }

    package struct Target: Codable, Sendable, Equatable {
        /// The new shard's number.
        package var shard: Int
        /// The shard it takes its slots from.
        package var source: Int
        /// The replica (as its indexer registers it) that will hold it.
        package var replica: String?
        package var state: TargetState
    }

    /// The map before the split; the map after is `before.split(to: to)`.
    package var before: ShardMap
    package var to: Int
    package var phase: Phase
    package var targets: [Target]
    /// Shards whose rows of slots they no longer own are gone.
    package var purged: [Int]

    /// The map the split leads to.
    package var after: ShardMap { (try? before.split(to: to)) ?? before }

    /// The split of `map` to `n` shards; throws when `n` is not a multiple of
    /// today's count (or more than the slots allow).
    package init(splitting map: ShardMap, to n: Int) throws(ShardMap.Invalid) {
        _ = try map.split(to: n)
        before = map
        to = n
        phase = .copying
        targets = (map.shards..<n).map { Target(shard: $0, source: map.source(ofNewShard: $0), replica: nil, state: .waiting) }
        purged = []
    }

    /// What the coordinator must do.
    package enum Action: Sendable, Equatable {
        /// Copy shard `source` to `replica`, which will hold shard `shard`
        /// (as a replica of the source, read by no query, until the switch).
        case copy(source: Int, shard: Int, replica: String)
        /// Store the split as it is now (it changed in a way a successor
        /// must know), replacing the value read at `revision`.
        case store(Transaction)
        /// Hold new writes to the sources until the map changes (those in
        /// flight finish); then report ``drained(keys:readAt:mapRevision:)``.
        case pauseWrites
        /// Commit the new map and the split's purge phase, in one transaction.
        case commitMap(Transaction)
        /// Route by `map` from now on; new shard j continues its source's
        /// numbering from `sequences[j]`. Release the held writes.
        case route(ShardMap, sequences: [Int: Int])
        /// Release held writes without a switch (a target was lost while
        /// paused: the split goes back to copying it).
        case resumeWrites
        /// Delete from `shard` the rows of slots `map` gives to another shard.
        case purge(shard: Int, map: ShardMap)
        /// The split is over: remove its key.
        case finish(Transaction)
    }

    // MARK: Events

    /// The transaction that records a new split: only when none is under way.
    package func starting(keys: ClusterKeys, mapRevision: Int) -> Transaction {
        Transaction(if: [.absent(keys.shardSplit), .unchanged(keys.shardMap, since: mapRevision)], then: [.put(keys.shardSplit, encoded())])
    }

    /// An indexer registered to hold new shard `shard` as `replica`: in the
    /// copy phase it gets a copy of the source; a target that was copying or
    /// catching up when its indexer went is copied again.
    package mutating func targetRegistered(shard: Int, replica: String) -> [Action] {
        guard phase == .copying || phase == .switching, let i = targets.firstIndex(where: { $0.shard == shard }) else { return [] }
        guard targets[i].state != .fresh || targets[i].replica != replica else { return [] }
        targets[i].replica = replica
        targets[i].state = .copying
        var actions: [Action] = []
        if phase == .switching {
            phase = .copying
            actions.append(.resumeWrites)
        }
        return actions + [.copy(source: targets[i].source, shard: shard, replica: replica)]
    }

    /// The target's copy is installed: the log catches it up from there.
    package mutating func copyInstalled(shard: Int) {
        guard phase == .copying, let i = targets.firstIndex(where: { $0.shard == shard }), targets[i].state == .copying else { return }
        targets[i].state = .catchingUp
    }

    /// The target has every committed change of its source. When it is the
    /// last one, writes pause.
    package mutating func caughtUp(shard: Int) -> [Action] {
        guard phase == .copying, let i = targets.firstIndex(where: { $0.shard == shard }), targets[i].state == .catchingUp else { return [] }
        targets[i].state = .fresh
        guard targets.allSatisfy({ $0.state == .fresh }) else { return [] }
        phase = .switching
        return [.pauseWrites]
    }

    /// A target's indexer went away before the switch: it waits for one to
    /// register again, and writes resume if they were paused for it.
    package mutating func targetLost(shard: Int) -> [Action] {
        guard phase == .copying || phase == .switching, let i = targets.firstIndex(where: { $0.shard == shard }) else { return [] }
        targets[i].state = .waiting
        guard phase == .switching else { return [] }
        phase = .copying
        return [.resumeWrites]
    }

    /// Writes are paused and none is in flight: the transaction that makes
    /// the switch, if the map read at `mapRevision` and this split read at
    /// `revision` are unchanged (no other coordinator got there first).
    package func drained(keys: ClusterKeys, readAt revision: Int, mapRevision: Int) -> [Action] {
        guard phase == .switching else { return [] }
        var next = self
        next.phase = .purging
        return [
            .commitMap(
                Transaction(
                    if: [.unchanged(keys.shardSplit, since: revision), .unchanged(keys.shardMap, since: mapRevision)],
                    then: [.put(keys.shardMap, after.encoded()), .put(keys.shardSplit, next.encoded())]))
        ]
    }

    /// The answer to ``Action/commitMap(_:)``; `sequences` holds each
    /// source's last numbered change (every target has it, the writes being
    /// drained). Committed: route by the new map and purge every shard. Refused: another coordinator changed the
    /// control plane; this one reads it again (``resume(current:)``).
    package mutating func mapCommitted(_ succeeded: Bool, sequences: [Int: Int]) -> [Action] {
        guard phase == .switching, succeeded else { return [] }
        phase = .purging
        let map = after
        var continued: [Int: Int] = [:]
        for t in targets { continued[t.shard] = sequences[t.source] ?? 0 }
        return [.route(map, sequences: continued)] + (0..<to).map { .purge(shard: $0, map: map) }
    }

    /// Shard `shard` holds only rows of its own slots now.
    package mutating func purgeDone(shard: Int, keys: ClusterKeys, readAt revision: Int) -> [Action] {
        guard phase == .purging, !purged.contains(shard) else { return [] }
        purged = (purged + [shard]).sorted()
        guard purged.count == to else {
            return [.store(Transaction(if: [.unchanged(keys.shardSplit, since: revision)], then: [.put(keys.shardSplit, encoded())]))]
        }
        phase = .done
        return [.finish(Transaction(if: [.unchanged(keys.shardSplit, since: revision)], then: [.delete(keys.shardSplit)]))]
    }

    /// A coordinator (re)started, or one whose transaction was refused,
    /// found this split in the control plane beside the map `current`:
    /// what it does to carry it on. Before the switch, the new coordinator
    /// has none of the log the targets were catching up from, so every
    /// target not yet fresh waits for its indexer to register and is copied
    /// again, and a switch under way is taken back to copying (writes were
    /// paused by a coordinator that is gone). A map already at the split's
    /// epoch means the switch committed: route by it and purge what is not purged.
    package mutating func resume(current: ShardMap) -> [Action] {
        if current.epoch >= after.epoch, current.shards == to {
            if phase == .copying || phase == .switching { phase = .purging }
            guard phase == .purging else { return [] }
            return [.route(current, sequences: [:])] + (0..<to).filter { !purged.contains($0) }.map { .purge(shard: $0, map: current) }
        }
        // Even a fresh target counts only once it has registered with this
        // coordinator again and been caught up (or copied) by it.
        phase = .copying
        for i in targets.indices { targets[i].state = .waiting }
        return []
    }

    // MARK: Queries during the purge

    /// Whether answers of shard `shard` must be filtered by slot: it may
    /// still hold rows of slots it no longer owns.
    package func filtersQueries(of shard: Int) -> Bool { phase == .purging && !purged.contains(shard) }

    /// Each shard's state, for `limelight shards status`.
    package func describe(shard: Int) -> String? {
        if let t = targets.first(where: { $0.shard == shard }), phase == .copying || phase == .switching {
            return t.state == .catchingUp ? "catching up" : t.state.rawValue
        }
        if filtersQueries(of: shard) { return "purging" }
        return nil
    }

    package func encoded() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? e.encode(self)) ?? Data()
    }

    package static func decode(_ data: Data) -> ShardSplit? { try? JSONDecoder().decode(Self.self, from: data) }
}

extension ShardMap {
    /// Whether shard `shard` owns `domain` under this map: what a shard's
    /// answers are filtered by while it may hold rows it no longer owns.
    package func owns(shard: Int, domain: String) -> Bool { self.shard(ofDomain: domain) == shard }

    /// Whether an answer given for the map of `epoch` may be merged into a
    /// query planned with this map: only the same map's (a worker that
    /// answered for another map may have counted rows twice or missed some).
    package func accepts(answerEpoch epoch: Int) -> Bool { epoch == self.epoch }
}
