import ControlPlane
import Foundation
import LimelightConcurrency
import Logging
import WireProtocol

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

    /// The map queries are routed by while a split's switch is under way
    /// (its new map, not committed yet); nil when they go by `shardMap`.
    var switchRouting: SwitchRouting? {
        guard let run = splitRun, run.routesByNewMap else { return nil }
        return SwitchRouting(run.split.after)
    }

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
    /// number, from which the new shard's numbering starts).
    func adoptSplit(_ split: ShardSplit) {
        guard splitRun == nil, split.before.shards == shardCount else { return }
        for t in split.targets where writeReplicas(shard: t.source).isEmpty { return }
        let run = SplitRun(split: split, now: .now)
        splitRun = run
        if run.step == .copying {
            for t in split.targets {
                // Numbers of the new shard mean the same changes as its
                // source's; an empty replica of it is copied (the log starts
                // after the source's last number), and so is one ahead of it.
                // A copy under way came from a replica of the new shard.
                for c in replication.copies.running.values where c.shard == t.shard {
                    abandonCopy(c.id, reason: "the split is taken up: the new shard is copied from its source")
                }
                let indexers = liveWorkers(.indexer, shard: t.shard).map(\.id)
                perform(replication.mirror(t.shard, from: replication.issued[t.source] ?? 0, indexers: indexers))
            }
        }
        logger.notice(
            "splitting shards",
            metadata: [
                "split.from": "\(split.before.shards)", "split.to": "\(split.to)", "split.phase": "\(split.phase.rawValue)",
                "map.epoch": "\(split.before.epoch)", "split.heldBefore": "\(splitNotTakenUp.count)",
            ])
        releaseNotTakenUp()
    }

    /// Run by the service's split loop with what the control plane holds
    /// (the split read at `splitRevision`, the map at `mapRevision`): moves
    /// the split on (``SplitRun/tick(_:keys:revision:mapRevision:now:)``),
    /// and says what to write when it must.
    ///
    /// `map` is the shard map the control plane holds, read at `epoch` (the
    /// one this coordinator serves with): a newer one than this coordinator
    /// routes by (a split another coordinator finished since this one
    /// started) is taken first, before any request of the epoch is handled.
    func splitTick(_ stored: ShardSplit?, map: ShardMap?, epoch: Int, splitRevision: Int, mapRevision: Int) -> SplitRun.Action? {
        if splitRun == nil, let map, map.epoch > (shardMap?.epoch ?? 0) {
            logger.notice(
                "routing by the control plane's newer shard map",
                metadata: ["map.epoch": "\(map.epoch)", "map.shards": "\(map.shards)", "map.was": "\(shardMap?.epoch ?? 0)"])
            shardMap = map
        }
        mapReadFor = epoch
        guard let stored else {
            // No split (any more): what waited for the map, or for a split to
            // be taken up, goes on.
            if splitRun == nil { pendingSplitTo = nil }
            releaseNotTakenUp()
            return nil
        }
        // The new shards' workers may register from now on, even while the
        // split waits for its sources' indexers.
        pendingSplitTo = stored.to
        // Tests only (``TestHold``): a split in the control plane, not taken up yet.
        if splitRun == nil, TestHold.holds("take-up") { return nil }
        if splitRun == nil { adoptSplit(stored) }
        guard var run = splitRun else { return nil }
        let wasCopying = run.step == .copying
        let seen = SplitRun.Observed(
            targetsFresh: run.split.targets.allSatisfy { targetFresh($0.shard) },
            targetsDrained: run.split.targets.allSatisfy { targetDrained($0.shard) },
            queriesRunning: run.routedByOldMap.contains { queries[$0] != nil || searches[$0] != nil })
        // Tests only (``TestHold``): every shard marked, the map not committed yet.
        if run.step == .committing, TestHold.holds("before-switch") { return nil }
        let action = run.tick(seen, keys: splitKeys, revision: splitRevision, mapRevision: mapRevision, now: .now)
        splitRun = run
        if wasCopying, run.step != .copying {
            logger.notice("every new shard is fresh: writes held until they have every change", metadata: ["split.to": "\(run.split.to)"])
        }
        if case .purge(let shards) = action {
            for shard in shards { sendPurge(shard: shard) }
            return nil
        }
        return action
    }

    var splitKeys: ClusterKeys { ClusterKeys(cluster: configuration.cluster) }

    /// Every live replica of a new shard has every change committed, and
    /// none is copying or catching up — all of them, not one: the write
    /// pause that follows lasts until every live replica has applied its
    /// last change, so one still catching up would hold writes for as long
    /// as its catch-up takes (seconds under a heavy publish), where a
    /// replica already fresh drains in milliseconds. And, when the source is
    /// read by query workers, one of those replicas has a live query worker:
    /// without one the switch would route queries to a shard nobody reads,
    /// each completing with the shard failed ("no live query worker") until
    /// its worker came; the split waits for it instead.
    func targetFresh(_ shard: Int) -> Bool {
        let source = splitRun?.split.targets.first { $0.shard == shard }?.source
        let queried = source.map { !liveWorkers(.query, shard: $0).isEmpty } ?? false
        let readers = Set(liveWorkers(.query, shard: shard).compactMap { replication.replicaOf[$0.id] })
        let live = liveWorkers(.indexer, shard: shard)
        let fresh = live.allSatisfy { w in
            let name = replicaName(w)
            return replication.applied[name]?[shard] != nil && isFresh(w, shard: shard)
                && replication.catchingUp[w.id]?[shard] == nil && !replication.copies.copying(replica: name, shard: shard)
        }
        return !live.isEmpty && fresh && (!queried || live.contains { readers.contains(replicaName($0)) })
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
        let keep = Body.KeepSlots(slots: map.slots, shards: map.shards, shard: shard)
        let replicas = writeReplicas(shard: shard)
        guard !replicas.isEmpty else {
            // Numbered for no replica, it would be committed by none: the
            // next tick sends it once an indexer of the shard is live.
            logger.debug("a shard to purge has no live indexer; its purge waits for one", metadata: ["shard": "\(shard)"])
            return
        }
        let change = sequenced(shard: shard, .delete(Body.Delete(shards: [shard], keepSlots: keep)))
        for w in replicas {
            let id = makeID("u")
            splitRun?.purgeSent(id, shard: shard, worker: w.id)
            track(id, worker: w.id, shard: shard, sequence: change.sequence)
            send(.worker(w.route), id, change.body)
        }
    }

    /// Follows an answer to a mirrored change or a purge. Returns false when
    /// `id` is neither.
    func splitReply(id: String, from worker: String, _ body: Body) -> Bool {
        guard splitRun != nil else { return false }
        if splitRun?.mirrorIDs.remove(id) != nil { return true }
        guard let shard = splitRun?.purges[id] else { return false }
        var succeeded = false
        if case .deleteAck(let a) = body {
            succeeded = true
            logger.info(
                "shard marked the slots it no longer owns; its indexer purges them in the background",
                metadata: ["shard": "\(shard)", "worker": "\(worker)", "moved": "\(a.deleted)"])
        }
        switch splitRun?.purgeAnswered(id, succeeded: succeeded) {
        case .notAPurge?, nil:
            return false
        case .counted?:
            return true
        case .resend(let shard)?:
            logger.warning("a purge failed; sending it again", metadata: ["shard": "\(shard)", "worker": "\(worker)", "answer": "\(body)"])
            sendPurge(shard: shard)
            return true
        }
    }

    /// The answer to ``SplitRun/Action/store(_:)``.
    /// The queries and searches running now are those routed by the old map.
    func splitStored(_ succeeded: Bool) {
        splitRun?.stored(succeeded, running: Set(queries.keys).union(searches.keys), now: .now)
        if splitRun?.routesByNewMap == true, succeeded {
            logger.notice(
                "queries go by the new shard map; the shards mark what they give away once the old map's queries end",
                metadata: ["split.to": "\(splitRun?.split.to ?? 0)", "split.oldMapQueries": "\(splitRun?.routedByOldMap.count ?? 0)"])
        }
    }

    /// The answer to ``SplitRun/Action/commit(_:_:)``: route by the new map and
    /// release what waited, in order.
    func splitCommitted(_ succeeded: Bool, map: ShardMap) {
        guard var run = splitRun, run.committed(succeeded) else { return }
        shardMap = map
        splitRun = nil
        pendingSplitTo = nil
        _ = TestHold.holds("after-switch")
        let now = ContinuousClock.now
        let writesMs = run.pausedAt.map { Int($0.duration(to: now) / .milliseconds(1)) } ?? 0
        let switchMs = run.switchedAt.map { Int($0.duration(to: now) / .milliseconds(1)) } ?? 0
        count(.splitsDone)
        counters[CoordinatorCounter.splitWritePauseMs.rawValue] = writesMs
        counters[CoordinatorCounter.splitSwitchMs.rawValue] = switchMs
        counters[CoordinatorCounter.splitMs.rawValue] = Int(run.started.duration(to: now) / .milliseconds(1))
        logger.notice(
            "shards split: routing by the new map",
            metadata: [
                "split.to": "\(map.shards)", "map.epoch": "\(map.epoch)", "split.writePauseMs": "\(writesMs)",
                "split.switchMs": "\(switchMs)", "split.held": "\(run.held.count)",
            ])
        for h in run.held { handleClient(route: h.route, envelope: h.envelope) }
    }

    /// Handles the requests held for the map or for a split to be taken up.
    func releaseNotTakenUp() {
        guard !splitNotTakenUp.isEmpty, !mapUnread, splitRun != nil || pendingSplitTo == nil else { return }
        let held = splitNotTakenUp
        splitNotTakenUp = []
        for h in held { handleClient(route: h.route, envelope: h.envelope) }
    }

    /// Whether this coordinator serves with an epoch for which it has not
    /// read the shard map (a standby that took over: the map may have changed
    /// since it started).
    var mapUnread: Bool {
        guard let epoch = election?.servingEpoch() else { return false }
        return mapReadFor != epoch
    }

    /// Holds a client request while the split pauses its kind; true when held.
    ///
    /// Also every change and read until the shard map is read for this
    /// coordinator's epoch, and while the control plane holds a split this
    /// coordinator has not taken up yet (its sources' indexers not all live,
    /// or the split loop not yet come round): a coordinator that took over a
    /// split in its purge phase must neither make a change that no new shard
    /// is sent (the purge would then delete it from the source, acknowledged),
    /// nor answer from sources whose moved rows its predecessor's marks hide.
    /// They are handled once the split is taken up (``adoptSplit(_:)``).
    func holdForSplit(route: [Data], envelope: Envelope) -> Bool {
        if splitRun == nil, pendingSplitTo != nil || mapUnread, SplitRun.heldUntilTakenUp(envelope.body) {
            guard splitNotTakenUp.count < HeldRequest.limit else {
                sendError(
                    .client(route), envelope.id,
                    WireError(
                        code: "busy",
                        message: "the coordinator waits to read the shard map or to take up a split, and holds too many requests already: retry"))
                return true
            }
            splitNotTakenUp.append(HeldRequest(route: route, envelope: envelope))
            controlPlaneWork.signal()
            return true
        }
        guard let run = splitRun, run.holds(envelope.body) else { return false }
        splitRun?.held.append(HeldRequest(route: route, envelope: envelope))
        return true
    }
}
