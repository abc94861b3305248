import ControlPlane
import Foundation
import Logging
import WireProtocol

/// Replica changes' side in the core: what ``ReplicaRun`` observes, the
/// fences it asks for, and stopping a retired replica's workers.
extension CoordinatorCore {
    /// A split or a replica change is under way: the control plane is read more often.
    var changeUnderWay: Bool { splitRun != nil || replicaRun != nil || pendingSplitTo != nil || !splitNotTakenUp.isEmpty }

    /// Run by the service's control-plane loop with what the control plane
    /// holds (the change read at `revision`, the retired replicas at
    /// `retiredRevision`): moves the change on and says what to write.
    func replicaTick(_ stored: ReplicaChange?, revision: Int, retired stillRetired: RetiredReplicas?, retiredRevision: Int) -> ReplicaRun.Action? {
        retired = stillRetired ?? RetiredReplicas()
        controlPlaneReads.read()
        if controlPlaneReads.wantsRead { controlPlaneWork.signal() }
        defer { applyReplicaFences() }
        guard let stored else {
            // Completed, or a refusal the command has read and deleted.
            replicaRun = nil
            return nil
        }
        if replicaRun.map({ !$0.carriesOut(stored) }) ?? true {
            replicaRun = ReplicaRun(change: stored, now: .now)
            logger.notice("replica change", metadata: ["change": "\(stored.summary)", "change.phase": "\(stored.phase.rawValue)"])
        }
        guard var run = replicaRun else { return nil }
        let change = run.change
        let seen = ReplicaRun.Observed(
            addedInSync: change.add.map { name in change.shards.allSatisfy { replicaInSync(name, shard: $0, withQueryWorker: true) } } ?? true,
            shardsWithoutAnother: change.retire.map { name in change.shards.filter { !hasAnotherInSyncReplica(than: name, shard: $0) } } ?? [],
            retiredChangesBusy: change.retire.map(replicaChangesBusy) ?? false,
            retiredQueriesBusy: change.retire.map(replicaQueriesBusy) ?? false,
            othersCaughtUp: change.retire.map { name in change.shards.allSatisfy { othersCaughtUp(than: name, shard: $0) } } ?? true)
        let before = run.step
        let action = run.tick(seen, keys: splitKeys, revision: revision, retired: retired, retiredRevision: retiredRevision, now: .now)
        replicaRun = run
        if before != run.step {
            logger.notice("replica change moved on", metadata: ["change": "\(change.summary)", "change.step": "\(run.step)"])
        }
        return action
    }

    /// The answer to ``ReplicaRun/Action/store(_:)``.
    func replicaStored(_ succeeded: Bool) {
        replicaRun?.stored(succeeded)
        if succeeded, let run = replicaRun, run.step == .refused {
            logger.warning("replica change refused", metadata: ["change": "\(run.change.summary)", "reason": "\(run.change.reason ?? "")"])
        }
    }

    /// The answer to ``ReplicaRun/Action/complete(_:)``: a retired replica's
    /// workers are told to stop.
    func replicaCompleted(_ succeeded: Bool) {
        guard var run = replicaRun, run.completed(succeeded) else { return }
        replicaRun = run
        let change = run.change
        if let name = change.retire {
            retired.retire(name, shards: change.shards)
            for shard in change.shards {
                replication.applied[name]?.removeValue(forKey: shard)
                replication.detached[name]?.remove(shard)
            }
            if replication.applied[name]?.isEmpty == true { replication.applied.removeValue(forKey: name) }
            stopRetiredWorkers()
        }
        if let name = change.add { retired.restore(name, shards: change.shards) }
        count(.replicaChangesDone)
        let ms = Int(run.started.duration(to: .now) / .milliseconds(1))
        counters[CoordinatorCounter.replicaChangeMs.rawValue] = ms
        logger.notice("replica change done", metadata: ["change": "\(change.summary)", "change.ms": "\(ms)"])
        applyReplicaFences()
    }

    /// Sets the replication state's fences from the run and the retired replicas.
    func applyReplicaFences() {
        var unqueried: [String: Set<Int>] = [:]
        var fenced: [String: Set<Int>] = [:]
        for (name, shards) in retired.replicas {
            // A retired replica being added again takes its shards' changes.
            var shards = Set(shards)
            if let run = replicaRun, run.change.add == name { shards.subtract(run.change.shards) }
            unqueried[name, default: []].formUnion(shards)
            fenced[name, default: []].formUnion(shards)
        }
        if let run = replicaRun {
            if let name = run.queryExcluded { unqueried[name, default: []].formUnion(run.change.shards) }
            if let name = run.writeExcluded { fenced[name, default: []].formUnion(run.change.shards) }
        }
        // Replicas unknown until a read that began after their registration.
        for (name, shards) in controlPlaneReads.unqueried { unqueried[name, default: []].formUnion(shards) }
        replication.unqueried = unqueried
        replication.fenced = fenced
    }

    /// The replica's indexer of `shard` is live and holds every committed
    /// change (not detached, copying or catching up) — or is being sent
    /// each one it lacks, as a replica under a steady write load always is
    /// for the last few; with `withQueryWorker`, a query worker of it is live too.
    func replicaInSync(_ name: String, shard: Int, withQueryWorker: Bool) -> Bool {
        guard let w = liveWorkers(.indexer, shard: shard).first(where: { replicaName($0) == name }),
            let have = replication.applied[name]?[shard],
            !(replication.detached[name]?.contains(shard) ?? false), replication.catchingUp[w.id]?[shard] == nil,
            !replication.copies.copying(replica: name, shard: shard)
        else { return false }
        let committed = replication.committed[shard] ?? 0
        if have < committed {
            guard committed - have <= 4096 else { return false }
            // Only changes a client waits for: one sent while it was being
            // caught up may be acknowledged without it.
            let sent = Set(replication.inFlight.values.filter { $0.worker == w.id && $0.shard == shard && $0.clientWaits }.map(\.sequence))
            guard (have + 1...committed).allSatisfy(sent.contains) else { return false }
        }
        // With in-sync sets, a member of the shard's set as the control plane
        // holds it: writes sent to it alone (the retired replica fenced) are
        // refused until it is one.
        if keepsInSync, !inSync.holds(shard, replica: name) { return false }
        return !withQueryWorker || liveWorkers(.query, shard: shard).contains { replication.replicaOf[$0.id] == name }
    }

    /// Another replica than `name` is in sync on `shard` and not fenced, and
    /// some query worker not of `name` may read the shard.
    func hasAnotherInSyncReplica(than name: String, shard: Int) -> Bool {
        let others = Set(liveWorkers(.indexer, shard: shard).map(replicaName)).subtracting([name])
        let inSync = others.contains { other in
            !(replication.fenced[other]?.contains(shard) ?? false) && replicaInSync(other, shard: shard, withQueryWorker: false)
        }
        let queryable = liveWorkers(.query, shard: shard).contains { w in
            replication.replicaOf[w.id] != name && !(replication.unqueried[replication.replicaOf[w.id] ?? ""]?.contains(shard) ?? false)
        }
        return inSync && queryable
    }

    /// Changes or copies sent to a worker of replica `name` are unanswered.
    func replicaChangesBusy(_ name: String) -> Bool {
        let ids = Set(workers.values.filter { replicaName($0) == name }.map(\.id))
        guard !ids.isEmpty else { return false }
        if replication.inFlight.values.contains(where: { ids.contains($0.worker) }) { return true }
        return replication.copies.running.values.contains { ids.contains($0.source) || ids.contains($0.target) }
    }

    /// Query or search parts sent to a query worker of replica `name` are unanswered.
    func replicaQueriesBusy(_ name: String) -> Bool {
        let ids = Set(workers.values.filter { replicaName($0) == name }.map(\.id))
        guard !ids.isEmpty else { return false }
        if queries.values.contains(where: { $0.scatter.workers.contains(where: ids.contains) }) { return true }
        return ids.contains { !inFlight.searchesRunning(on: $0).isEmpty }
    }

    /// Some replica of `shard` other than `name`, not fenced, has applied
    /// every committed change: its query workers are fresh.
    func othersCaughtUp(than name: String, shard: Int) -> Bool {
        let committed = replication.committed[shard] ?? 0
        return liveWorkers(.indexer, shard: shard).contains { w in
            let other = replicaName(w)
            return other != name && !(replication.fenced[other]?.contains(shard) ?? false)
                && !(replication.detached[other]?.contains(shard) ?? false) && (replication.applied[other]?[shard] ?? -1) >= committed
        }
    }

    /// Forgets the live workers every shard of which their replica was
    /// retired from, and asks them to register again: the registration is
    /// refused (``retiredRefusal(_:)``) and the worker exits, saying why.
    func stopRetiredWorkers() {
        for w in workers.values where w.shards.allSatisfy({ retired.isRetired(replicaName(w), shard: $0) }) {
            let route = w.route
            logger.notice("stopping a retired replica's worker", metadata: ["worker": "\(w.id)", "replica": "\(replicaName(w))"])
            forget(w.id, reason: "its replica was retired")
            sendError(.worker(route), makeID("r"), WireError(code: "unregistered", message: "register again: the replica was retired"))
        }
    }

    /// Why a registration is refused: its replica was retired from one of its shards.
    /// A worker registered: with a control plane, one whose replica this
    /// coordinator does not know keeps the replica from queries until the
    /// control plane has been read (``ControlPlaneReads``), and wakes the
    /// loop that reads it.
    func awaitControlPlaneIfUnknown(_ r: Body.Register) {
        controlPlaneReads.admitted(worker: r.worker)
        guard keepsInSync else { return }
        let name = r.replica ?? r.worker
        let known =
            replication.applied[name] != nil || r.shards.contains { inSync.members($0).contains(name) }
            || replicaRun.map { $0.change.add == name || $0.change.retire == name } ?? false
        guard controlPlaneReads.registered(name, shards: r.shards, knownOtherwise: known) else { return }
        replication.unqueried[name, default: []].formUnion(r.shards)
        controlPlaneWork.signal()
        logger.info(
            "a worker of a replica this coordinator does not know: no query reads it until the control plane is read",
            metadata: ["worker": "\(r.worker)", "replica": "\(name)"])
    }

    func retiredRefusal(_ r: Body.Register) -> WireError? {
        let name = r.replica ?? r.worker
        let readding = replicaRun.map { $0.change.add == name ? Set($0.change.shards) : [] } ?? []
        guard let shard = r.shards.first(where: { retired.isRetired(name, shard: $0) && !readding.contains($0) }) else { return nil }
        return WireError(
            code: "retired",
            message:
                "replica \(name) was retired from shard \(shard) (limelight shards retire); add it again with limelight shards add-replica, or start it with another --data"
        )
    }
}
