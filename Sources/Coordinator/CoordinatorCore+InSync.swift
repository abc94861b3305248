import ControlPlane
import Foundation
import Items
import WireProtocol

/// An answer to a client that waits for the control plane to hold the
/// in-sync requests of its changes (``WriteTracker/InSyncWait``).
struct HeldAnswer: Sendable {
    enum Answer: Sendable {
        case publish(client: [Data], requestID: String, ack: Body.PublishAck, started: ContinuousClock.Instant)
        case delete(WriteTracker.PendingDelete)
    }
    var wait: WriteTracker.InSyncWait
    var answer: Answer
}

/// The in-sync replica sets on the write path (``InSyncReplicas``), in a
/// cluster with a control plane: a change is made only when a member of its
/// shard's set takes it; its answer waits until the members it did not go
/// to are out of the set in the control plane; a replica that caught up is
/// put back; and a coordinator that takes over numbers a shard's changes only
/// once a member of its set has registered. The transactions themselves are
/// made by the service's loop (`CoordinatorService.followInSync`).
extension CoordinatorCore {
    /// Whether this coordinator keeps in-sync sets: it has a control plane.
    var keepsInSync: Bool { election != nil }

    /// With in-sync sets, what a coordinator that has numbered no change of
    /// `shard` yet waits for: the sets (until read), then a member of the
    /// shard's set, with no time limit — only a member is sure to hold every
    /// acknowledged change. Empty: it waits for nothing; nil: the shard has
    /// no set (the older rule of `awaitedReplicas` applies).
    func awaitedMembers(shard: Int) -> [String]? {
        guard keepsInSync else { return nil }
        guard inSync.loaded else { return ["(the in-sync sets, not read from the control plane yet)"] }
        let members = inSync.members(shard)
        guard !members.isEmpty else { return nil }
        guard replication.base[shard] == nil else { return [] }
        if members.contains(where: { replication.applied[$0]?[shard] != nil }) { return [] }
        return members.sorted().map { "\($0) (in sync)" }
    }

    /// The shards of a registering indexer whose in-sync set does not name its replica.
    func notInSync(_ r: Body.Register) -> Set<Int> {
        guard keepsInSync, r.role == .indexer else { return [] }
        let name = r.replica ?? r.worker
        return Set(
            r.shards.filter { shard in
                let members = inSync.members(shard)
                return !members.isEmpty && !members.contains(name)
            })
    }

    /// Whether a change of `shard` sent to `replicas` may be made: false when
    /// the shard has an in-sync set and none of its members is among them.
    func inSyncCovers(shard: Int, replicas: [WorkerRecord]) -> Bool {
        guard keepsInSync else { return true }
        if inSync.covers(shard, replicas: Set(replicas.map(replicaName))) { return true }
        count(.inSyncNoMember)
        return false
    }

    /// Why a change of `shard` was refused by ``inSyncCovers(shard:replicas:)``.
    func noMemberReason(shard: Int) -> String {
        "no live indexer of shard \(shard) is in its in-sync set (\(inSync.members(shard).sorted().joined(separator: ", "))), "
            + "so the change could not be acknowledged"
    }

    /// Change `sequence` of `shard` went to `replicas`: the in-sync request
    /// its answer waits for, if some member missed it.
    func inSyncSent(shard: Int, sequence: Int, to replicas: [WorkerRecord]) -> Int? {
        guard keepsInSync else { return nil }
        let before = inSync.shard(shard).out
        guard let ticket = inSync.sent(shard, sequence: sequence, to: Set(replicas.map(replicaName))) else { return nil }
        let leaving = inSync.shard(shard).out.subtracting(before)
        if !leaving.isEmpty {
            inSyncWork.signal()
            logger.notice(
                "in-sync replicas missed a change: taking them out of the set before it is acknowledged",
                metadata: ["shard": "\(shard)", "replicas": "\(leaving.sorted().joined(separator: ","))", "sequence": "\(sequence)"])
        }
        return ticket
    }

    // MARK: Answers

    /// Sends an answer now, or holds it until the control plane holds what it waits for.
    func answerWhenInSync(_ held: HeldAnswer) {
        if held.wait.tickets.isEmpty || held.wait.tickets.allSatisfy({ inSync.isWritten($0.key, $0.value) }) {
            deliver(held)
            return
        }
        count(.inSyncHeld)
        heldAnswers.append(held)
    }

    /// Sends the held answers whose requests are written (or failed: then
    /// their changes on those shards are reported not stored).
    func releaseHeldAnswers() {
        var still: [HeldAnswer] = []
        for var h in heldAnswers {
            var done = true
            for (shard, ticket) in h.wait.tickets {
                if inSync.isWritten(shard, ticket) { continue }
                if inSync.isFailed(shard, ticket) {
                    fail(&h, shard: shard)
                    continue
                }
                done = false
            }
            if done { deliver(h) } else { still.append(h) }
        }
        heldAnswers = still
    }

    /// Marks `shard`'s part of a held answer as not made.
    private func fail(_ h: inout HeldAnswer, shard: Int) {
        h.wait.tickets.removeValue(forKey: shard)
        let error = WireError(code: "shard_unavailable", message: "shard \(shard)'s in-sync set could not be changed; resend")
        switch h.answer {
        case .publish(let client, let requestID, var ack, let started):
            let items = Set(h.wait.items[shard] ?? [])
            for (k, r) in ack.results.enumerated() where items.contains(r.index) {
                ack.results[k] = ItemResult(index: r.index, uniqueIdentifier: r.uniqueIdentifier, status: .rejected, error: error)
            }
            h.answer = .publish(client: client, requestID: requestID, ack: ack, started: started)
        case .delete(var pending):
            pending.failed.append(ShardFailure(shard: shard, reason: error.message))
            h.answer = .delete(pending)
        }
    }

    private func deliver(_ h: HeldAnswer) {
        switch h.answer {
        case .publish(let client, let requestID, let ack, let started):
            metrics.publishDuration.record(duration: started.duration(to: .now))
            count(.publishStored, by: ack.stored)
            count(.publishRejected, by: ack.rejected)
            send(.client(client), requestID, .publishAck(ack))
            startWaitingWrites()
        case .delete(let pending):
            finishDelete(pending)
        }
    }

    // MARK: Rejoining

    /// Run by the sweep: each live replica that has every committed change
    /// of a shard, with nothing under way to it, is put back in the shard's
    /// set (once it has every change it missed).
    func reviewInSync() {
        guard keepsInSync, inSync.loaded else { return }
        for w in workers.values where w.role == .indexer {
            let name = replicaName(w)
            for shard in w.shards where shard < admittedShardCount {
                guard awaitedReplicas(shard: shard).isEmpty,
                    let have = replication.applied[name]?[shard], have >= (replication.committed[shard] ?? 0),
                    replication.lineage[shard]?.contains(name) ?? false,
                    // Not `isFresh`: a replica being added is kept from
                    // queries, not from the set, which a move's retirement waits for.
                    !(replication.detached[name]?.contains(shard) ?? false), replication.catchingUp[w.id]?[shard] == nil,
                    !replication.unawaitedInFlight(worker: w.id, shard: shard),
                    !replication.copies.copying(replica: name, shard: shard)
                else { continue }
                if inSync.caughtUp(shard, replica: name, applied: have) {
                    inSyncWork.signal()
                    logger.info(
                        "replica has every change: putting it back in the in-sync set", metadata: ["shard": "\(shard)", "replica": "\(name)"])
                }
            }
        }
    }

    // MARK: The control plane's side (CoordinatorService.followInSync)

    var inSyncLoaded: Bool { inSync.loaded }

    /// The sets the control plane holds, read once this coordinator serves with `epoch`.
    func loadInSync(_ sets: [Int: (set: InSyncSet?, revision: Int)], epoch: Int) {
        inSync.load(sets, epoch: epoch)
        logger.info(
            "read the in-sync replica sets",
            metadata: [
                "coordinator.epoch": "\(epoch)",
                "insync":
                    "\(sets.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value.set?.replicas.joined(separator: "+") ?? "-")" }.joined(separator: " "))",
            ])
    }

    /// The transactions to make now; a request that cannot be written fails
    /// the answers that waited for it.
    func inSyncSteps() -> [InSyncReplicas.Step] {
        guard keepsInSync else { return [] }
        reviewInSync()
        let steps = inSync.next(keys: ClusterKeys(cluster: configuration.cluster))
        if steps.contains(where: { if case .failed = $0 { true } else { false } }) { releaseHeldAnswers() }
        return steps.filter { if case .write = $0 { true } else { false } }
    }

    /// How a transaction went; a written one releases the answers that waited for it.
    func inSyncWrote(shard: Int, set: InSyncSet, succeeded: Bool, revision: Int) {
        let before = Set(inSync.shard(shard).stored?.replicas ?? [])
        inSync.wrote(shard, succeeded: succeeded, revision: revision)
        guard succeeded else { return }
        let after = Set(set.replicas)
        count(.inSyncRemoved, by: before.subtracting(after).count)
        count(.inSyncRejoined, by: after.subtracting(before).count)
        logger.notice(
            "in-sync set written",
            metadata: ["shard": "\(shard)", "insync": "\(set.replicas.joined(separator: ","))", "insync.epoch": "\(set.epoch)"])
        releaseHeldAnswers()
    }

    func inSyncReread(shard: Int, stored: InSyncSet?, revision: Int) {
        inSync.reread(shard, stored: stored, revision: revision)
    }

    /// The `inSync` object of a shard in the stats: the set as the control
    /// plane holds it (as this coordinator last read or wrote it).
    func inSyncJSON(shard: Int) -> JSONValue? {
        guard keepsInSync, inSync.loaded else { return nil }
        let s = inSync.shard(shard)
        guard let set = s.stored else { return .object(["replicas": .array([]), "epoch": .null, "pending": .bool(inSync.pending(shard))]) }
        return .object([
            "replicas": .array(set.replicas.map { .string($0) }), "epoch": .number(Double(set.epoch)),
            "revision": .number(Double(s.revision)), "pending": .bool(inSync.pending(shard)),
        ])
    }
}
