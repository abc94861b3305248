import ControlPlane
import Foundation
import Logging
import WireProtocol

/// A split this coordinator carries out: the one the control plane holds at
/// `shards/split` (a ``ShardSplit``, written by `limelight shards split`).
///
/// Each new shard j starts as a mirror of its source i = j mod N: every
/// change numbered for i is numbered for j too, with the same number (the
/// two sequences move in step from the moment the split is adopted), and
/// sent to j's indexers, which no query reads. A j replica registering
/// empty is further behind than the log reaches, so it is copied — from a
/// replica of i, its snapshot's number meaning the same changes on j — and
/// the log catches it up. When every new shard has a fresh replica, client
/// writes are held; once every new shard has applied its last change, each
/// new shard purges the rows of the slots its source keeps (nobody reads
/// it yet), the split is stored as purging, queries are held too (and those
/// running finish), each source purges the rows of the slots its sibling
/// took — one SQLite transaction each —, and the new map is committed,
/// deleting the split in the same transaction. The coordinator then routes
/// writes and queries by the new map and releases what it held, in order.
struct SplitRun: Sendable {
    enum Step: Sendable, Equatable {
        /// New shards are copied and caught up; their sources' changes are mirrored to them.
        case copying
        /// Writes are held until every new shard has applied its last change.
        case draining
        /// The new shards purge the slots their sources keep.
        case purgingTargets
        /// The purge phase is being stored, so that a successor does not copy again.
        case storing
        /// Queries are held until those running have finished.
        case holdingQueries
        /// The sources purge the slots their siblings took.
        case purgingSources
        /// The new map is being committed.
        case committing
    }

    var split: ShardSplit
    var step = Step.copying
    /// Source shard → the new shards that mirror it.
    var mirrors: [Int: [Int]]
    /// Mirrored changes awaiting their answer (answered to nobody).
    var mirrorIDs: Set<String> = []
    /// Purges awaiting their answer: message id → shard.
    var purges: [String: Int] = [:]
    /// Client requests held while writes or queries wait, in arrival order.
    var held: [HeldRequest] = []
    var holdsQueries = false
    var started = ContinuousClock.now
    var pausedAt: ContinuousClock.Instant?
    var queriesHeldAt: ContinuousClock.Instant?

    struct HeldRequest: Sendable {
        var route: [Data]
        var envelope: Envelope
    }

    init(split: ShardSplit) {
        self.split = split
        var mirrors: [Int: [Int]] = [:]
        for t in split.targets { mirrors[t.source, default: []].append(t.shard) }
        self.mirrors = mirrors
    }

    /// The shard new shard `shard` is copied from, while it is copied.
    func source(of shard: Int) -> Int? {
        guard step == .copying || step == .draining else { return nil }
        return split.targets.first { $0.shard == shard }?.source
    }

    /// Whether a client request waits now: changes while writes are paused,
    /// reads while queries are.
    func holds(_ body: Body) -> Bool {
        switch body {
        case .publish, .delete, .entityDonate, .entityDelete, .entityAssociate, .declare: step != .copying
        case .query, .search, .suggest, .spotlight, .continueSearch: holdsQueries
        default: false
        }
    }
}

/// What the service's split loop must write to the control plane.
enum SplitCommand: Sendable {
    /// Store the split's purge phase.
    case store(Transaction)
    /// Commit the new map (and delete the split).
    case commit(Transaction, ShardMap)
}

extension Body {
    /// The same change for new shard `shard` (a mirror of its source's).
    func forShard(_ shard: Int) -> Body {
        switch self {
        case .write(var w):
            w.shard = shard
            return .write(w)
        case .delete(var d):
            d.shards = [shard]
            return .delete(d)
        case .entityDelete(var d):
            d.shards = [shard]
            return .entityDelete(d)
        case .entityAssociate(var a):
            a.shards = [shard]
            return .entityAssociate(a)
        default: return self
        }
    }
}

extension CoordinatorCore {
    /// The shard count writes and queries are routed by: the map's.
    var shardCount: Int { shardMap?.shards ?? configuration.shards }

    /// The shards workers may register for: during a split, the new ones too.
    var admittedShardCount: Int { max(shardCount, splitRun?.split.to ?? 0, pendingSplitTo ?? 0) }

    /// Numbers a change of `shard` and, while a split mirrors the shard,
    /// the same change for each of its new shards (sent to their indexers
    /// here; nobody awaits their answers).
    func sequenced(shard: Int, _ body: Body) -> (sequence: Int, body: Body) {
        let change = replication.number(body, shard: shard, logLimit: configuration.catchUpLogItems, epoch: activeEpoch)
        for j in splitRun?.mirrors[shard] ?? [] {
            let mirrored = replication.number(body.forShard(j), shard: j, logLimit: configuration.catchUpLogItems, epoch: activeEpoch)
            for w in writeReplicas(shard: j) {
                let id = makeID("m")
                splitRun?.mirrorIDs.insert(id)
                track(id, worker: w.id, shard: j, sequence: mirrored.sequence)
                send(.worker(w.route), id, mirrored.body)
            }
        }
        return change
    }

    /// Takes up the split the control plane holds, once every source has a
    /// live indexer (its registration tells this coordinator the source's
    /// number, which the new shard's numbering starts from).
    func adoptSplit(_ split: ShardSplit) {
        guard splitRun == nil, split.before.shards == shardCount else { return }
        for t in split.targets where writeReplicas(shard: t.source).isEmpty { return }
        var run = SplitRun(split: split)
        if split.phase == .purging {
            // A predecessor purged the new shards already: finish the sources.
            run.mirrors = [:]
            run.step = .holdingQueries
            run.holdsQueries = true
            run.pausedAt = .now
            run.queriesHeldAt = .now
        } else {
            for t in split.targets {
                let issued = replication.issued[t.source] ?? 0
                replication.issued[t.shard] = issued
                replication.committed[t.shard] = issued
                replication.base[t.shard] = issued
                replication.log.removeValue(forKey: t.shard)
                replication.logWeight.removeValue(forKey: t.shard)
                replication.logStart[t.shard] = issued + 1
            }
        }
        splitRun = run
        logger.notice(
            "splitting shards",
            metadata: [
                "split.from": "\(split.before.shards)", "split.to": "\(split.to)", "split.phase": "\(split.phase.rawValue)",
                "map.epoch": "\(split.before.epoch)",
            ])
    }

    /// Run by the service's split loop with what the control plane holds:
    /// moves the split on, and says what to write when it must.
    func splitTick(_ stored: ShardSplit?, splitRevision: Int, mapRevision: Int) -> SplitCommand? {
        guard let stored else { return nil }
        if splitRun == nil { adoptSplit(stored) }
        guard var run = splitRun else { return nil }
        switch run.step {
        case .copying:
            guard run.split.targets.allSatisfy({ targetFresh($0.shard) }) else { return nil }
            run.step = .draining
            run.pausedAt = .now
            splitRun = run
            logger.notice("every new shard is fresh: writes held until they have every change", metadata: ["split.to": "\(run.split.to)"])
            return splitTick(stored, splitRevision: splitRevision, mapRevision: mapRevision)
        case .draining:
            guard run.split.targets.allSatisfy({ targetDrained($0.shard) }) else { return nil }
            run.mirrors = [:]
            run.step = .purgingTargets
            splitRun = run
            for t in run.split.targets { sendPurge(shard: t.shard) }
            return nil
        case .purgingTargets, .purgingSources:
            return nil
        case .storing:
            var next = run.split
            next.phase = .purging
            return .store(
                Transaction(if: [.unchanged(splitKeys.shardSplit, since: splitRevision)], then: [.put(splitKeys.shardSplit, next.encoded())]))
        case .holdingQueries:
            guard queries.isEmpty, searches.isEmpty else { return nil }
            run.step = .purgingSources
            splitRun = run
            for source in Set(run.split.targets.map(\.source)).sorted() { sendPurge(shard: source) }
            return nil
        case .committing:
            let map = run.split.after
            return .commit(
                Transaction(
                    if: [.unchanged(splitKeys.shardSplit, since: splitRevision), .unchanged(splitKeys.shardMap, since: mapRevision)],
                    then: [.put(splitKeys.shardMap, map.encoded()), .delete(splitKeys.shardSplit)]), map)
        }
    }

    var splitKeys: ClusterKeys { ClusterKeys(cluster: configuration.cluster) }

    /// A new shard has a live replica with every change committed, that is
    /// not copying or catching up.
    func targetFresh(_ shard: Int) -> Bool {
        liveWorkers(.indexer, shard: shard).contains { w in
            let name = replicaName(w)
            return replication.applied[name]?[shard] != nil && isFresh(w, shard: shard)
                && replication.catchingUp[w.id]?[shard] == nil && !replication.copies.copying(replica: name, shard: shard)
        }
    }

    /// Every live replica of the new shard has applied its last numbered change.
    func targetDrained(_ shard: Int) -> Bool {
        let issued = replication.issued[shard] ?? 0
        let live = liveWorkers(.indexer, shard: shard)
        return !live.isEmpty && live.allSatisfy { (replication.applied[replicaName($0)]?[shard] ?? -1) >= issued }
    }

    /// Sends `shard`'s purge, a numbered change, to each of its live replicas.
    func sendPurge(shard: Int) {
        guard let run = splitRun else { return }
        let map = run.split.after
        let change = sequenced(
            shard: shard, .delete(Body.Delete(shards: [shard], keepSlots: Body.KeepSlots(slots: map.slots, shards: map.shards, shard: shard))))
        let replicas = writeReplicas(shard: shard)
        if replicas.isEmpty { logger.warning("a shard to purge has no live indexer; the purge waits for one", metadata: ["shard": "\(shard)"]) }
        for w in replicas {
            let id = makeID("u")
            splitRun?.purges[id] = shard
            track(id, worker: w.id, shard: shard, sequence: change.sequence)
            send(.worker(w.route), id, change.body)
        }
    }

    /// Follows an answer to a mirrored change or a purge. Returns false when
    /// `id` is neither.
    func splitReply(id: String, from worker: String, _ body: Body) -> Bool {
        guard var run = splitRun else { return false }
        if run.mirrorIDs.remove(id) != nil {
            splitRun = run
            return true
        }
        guard let shard = run.purges.removeValue(forKey: id) else { return false }
        switch body {
        case .deleteAck(let a):
            logger.info(
                "shard purged of the slots it no longer owns", metadata: ["shard": "\(shard)", "worker": "\(worker)", "purged": "\(a.deleted)"])
        default:
            // Sent again on the next registration of the worker (the log has it).
            logger.warning("a purge failed", metadata: ["shard": "\(shard)", "worker": "\(worker)", "answer": "\(body.type.rawValue)"])
        }
        splitRun = run
        guard run.purges.isEmpty else { return true }
        switch run.step {
        case .purgingTargets:
            splitRun?.step = .storing
        case .purgingSources:
            splitRun?.step = .committing
        default: break
        }
        return true
    }

    /// The answer to ``SplitCommand/store(_:)``: the new shards are purged;
    /// queries wait from now until the sources are.
    func splitStored(_ succeeded: Bool) {
        guard succeeded, splitRun?.step == .storing else { return }
        splitRun?.step = .holdingQueries
        splitRun?.holdsQueries = true
        splitRun?.queriesHeldAt = .now
    }

    /// The answer to ``SplitCommand/commit(_:_:)``: route by the new map and
    /// release what waited. A refused commit is tried again at the next tick.
    func splitCommitted(_ succeeded: Bool, map: ShardMap) {
        guard succeeded, let run = splitRun, run.step == .committing else { return }
        shardMap = map
        splitRun = nil
        pendingSplitTo = nil
        let now = ContinuousClock.now
        let writesMs = run.pausedAt.map { Int($0.duration(to: now) / .milliseconds(1)) } ?? 0
        let queriesMs = run.queriesHeldAt.map { Int($0.duration(to: now) / .milliseconds(1)) } ?? 0
        count(.splitsDone)
        counters[CoordinatorCounter.splitWritePauseMs.rawValue] = writesMs
        counters[CoordinatorCounter.splitQueryPauseMs.rawValue] = queriesMs
        counters[CoordinatorCounter.splitMs.rawValue] = Int(run.started.duration(to: now) / .milliseconds(1))
        logger.notice(
            "shards split: routing by the new map",
            metadata: [
                "split.to": "\(map.shards)", "map.epoch": "\(map.epoch)", "split.writePauseMs": "\(writesMs)",
                "split.queryPauseMs": "\(queriesMs)", "split.held": "\(run.held.count)",
            ])
        for h in run.held { handleClient(route: h.route, envelope: h.envelope) }
    }

    /// Holds a client request while the split pauses its kind; true when held.
    func holdForSplit(route: [Data], envelope: Envelope) -> Bool {
        guard let run = splitRun, run.holds(envelope.body) else { return false }
        splitRun?.held.append(SplitRun.HeldRequest(route: route, envelope: envelope))
        return true
    }
}
