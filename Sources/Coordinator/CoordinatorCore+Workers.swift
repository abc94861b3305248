import Foundation
import Items
import Logging
import Planner
import QueryPlan
import WireProtocol

/// Worker messages: registration, heartbeats, acknowledgements and results, and losing a worker.
extension CoordinatorCore {
    // MARK: - Worker messages

    func handleWorker(route: [Data], payload: Data) {
        // The one message of every query's path, read without decoding its
        // items (RawShardBatch); anything else, or a batch that does not
        // read so, takes the ordinary decode below.
        if let raw = RawShardBatch.read(payload, maxBytes: configuration.maxFrameBytes),
            let wid = registry.heard(route: route, at: .now)
        {
            shardBatch(key: raw.id, from: wid, raw)
            return
        }
        // A search's answer, its hits' items kept as bytes until the page is
        // chosen (RawShardSearchResult).
        if let (id, result) = RawShardSearchResult.read(payload, maxBytes: configuration.maxFrameBytes),
            let wid = registry.heard(route: route, at: .now)
        {
            shardSearchAnswered(key: id, from: wid, result)
            return
        }
        let envelope: Envelope
        do { envelope = try Envelope.decode(payload, maxBytes: configuration.maxFrameBytes) } catch {
            logger.notice("rejected a worker frame", metadata: ["error": "\(error)"])
            sendError(.worker(route), error.id ?? "", error.wire)
            return
        }
        handleWorker(route: route, envelope: envelope)
    }

    func handleWorker(route: [Data], envelope: Envelope) {
        if case .register(let r) = envelope.body {
            register(route: route, id: envelope.id, r)
            return
        }
        guard let wid = registry.heard(route: route, at: .now) else {
            // A worker we have forgotten (we restarted, or declared it dead): ask it to register again.
            sendError(.worker(route), envelope.id, WireError(code: "unregistered", message: "register before sending \(envelope.type.rawValue)"))
            return
        }
        // An answer may move a split or a replica change on.
        if changeUnderWay { controlPlaneWork.signal() }
        if copyReply(id: envelope.id, from: wid, envelope.body) { return }
        if sequencedReply(id: envelope.id, from: wid, envelope.body) { return }
        if splitReply(id: envelope.id, from: wid, envelope.body) { return }
        switch envelope.body {
        case .heartbeat(let h):
            if let election, election.servingEpoch() == nil {
                // Deposed (its lease lapsed, or a successor fenced it off): its
                // workers move on now rather than when the process has ended.
                count(.notActive)
                sendError(.worker(route), envelope.id, notActive(.worker(route), election))
                return
            }
            if let status = h.status { registry.report(status, of: wid) }
            send(.worker(route), envelope.id, .heartbeat(Body.Heartbeat()))
        case .writeAck(let a): writeAcked(writeID: envelope.id, ack: a, error: nil)
        case .deleteAck(let a): deleteAcked(workerMessageID: envelope.id, deleted: a.deleted, error: nil)
        case .entityAck(let a): deleteAcked(workerMessageID: envelope.id, deleted: a.count, error: nil)
        case .declareAck: declareAcked(workerMessageID: envelope.id, error: nil)
        case .shardBatch(let b): shardBatch(key: envelope.id, from: wid, b)
        case .shardDone(let d) where searches[envelope.id] != nil:
            searchShardFailed(key: envelope.id, from: wid, shard: d.shard, reason: d.error?.message ?? "the shard answered no search result")
        case .shardDone(let d): shardDone(key: envelope.id, from: wid, d)
        case .shardSearchResult(let r): shardSearchAnswered(key: envelope.id, from: wid, r)
        case .error(let e):
            if e.code == "stale_epoch" { fencedOff(by: wid, e) }
            if searches[envelope.id] != nil {
                searchShardFailed(key: envelope.id, from: wid, shard: nil, reason: e.message)
            } else if let kind = writes.kind(ofMessage: envelope.id) {
                switch kind {
                case .write: perform(writes.writeFailed(envelope.id, e))
                case .delete: perform(writes.deleteAnswered(envelope.id, deleted: nil, error: e))
                case .declare: perform(writes.declareAnswered(envelope.id, error: e))
                }
            } else if let rq = queries[envelope.id], let shard = rq.scatter.shard(runBy: wid) {
                shardDone(key: envelope.id, from: wid, Body.ShardDone(shard: shard, count: 0, error: e))
            } else {
                logger.notice("worker reported an error", metadata: ["worker": "\(wid)", "error": "\(e)"])
            }
        default:
            sendError(
                .worker(route), envelope.id,
                WireError(code: "unexpected_type", message: "'\(envelope.type.rawValue)' is not a message a worker sends"))
        }
    }

    /// Answers a registration that a control-plane change not read yet may
    /// make acceptable with `not_active` (`message`: register again), and
    /// wakes the loop that reads, until a read that began after the worker
    /// was first asked (``ControlPlaneReads/refuseAfterRead(worker:)``); false
    /// once it is to be judged on what was read, or without a control plane.
    func askedToRegisterAfterRead(_ r: Body.Register, route: [Data], id: String, _ message: String) -> Bool {
        guard keepsInSync, !controlPlaneReads.refuseAfterRead(worker: r.worker) else { return false }
        controlPlaneWork.signal()
        sendError(.worker(route), id, WireError(code: "not_active", message: message))
        return true
    }

    func register(route: [Data], id: String, _ r: Body.Register) {
        guard admitWhileActive(.worker(route), id) else { return }
        if keepsInSync, r.role == .indexer, !inSync.loaded {
            // Until the sets are read, a replica out of them could set a
            // shard's numbering; the worker registers again at its next beat.
            count(.notActive)
            sendError(
                .worker(route), id,
                WireError(code: "not_active", message: "this coordinator has just taken over and is reading the in-sync replica sets; register again")
            )
            return
        }
        guard admitRegistration(route: route, id: id, r) else { return }
        if let refusal = retiredRefusal(r) {
            // It may be being added again in a change not read yet.
            if askedToRegisterAfterRead(
                r, route: route, id: id,
                "replica \(r.replica ?? r.worker) was retired; this coordinator reads the control plane for a change adding it again: register again")
            {
                return
            }
            count(.workersRefused)
            logger.warning("refused a retired replica's worker", metadata: ["worker": "\(r.worker)", "error": "\(refusal.message)"])
            sendError(.worker(route), id, refusal)
            return
        }
        let beyond = r.shards.filter { $0 >= admittedShardCount }
        // A new shard's worker, started as soon as a split was recorded, may
        // register before this coordinator has read the split.
        if !beyond.isEmpty,
            askedToRegisterAfterRead(
                r, route: route, id: id,
                "shards \(beyond.map(String.init).joined(separator: ",")) are not in this cluster's map; this coordinator reads the control plane for a split adding them: register again"
            )
        {
            return
        }
        switch registry.admit(r, route: route, shardCount: admittedShardCount) {
        case .refuse(let error):
            sendError(.worker(route), id, error)
            return
        case .register(let replaced):
            if let replaced { forget(replaced.worker, reason: replaced.reason) }
        }
        registry.register(
            WorkerRecord(
                id: r.worker, role: r.role, shards: r.shards, route: route, lastSeen: .now,
                host: r.host, pid: r.pid, registeredAt: Date()))
        logger.info(
            "worker registered",
            metadata: [
                "worker": "\(r.worker)", "worker.role": "\(r.role.rawValue)",
                "shards": "\(r.shards.map(String.init).joined(separator: ","))",
            ])
        send(
            .worker(route), id,
            .registered(Body.Registered(shardCount: admittedShardCount, heartbeatMs: configuration.heartbeatMs, epoch: activeEpoch)))
        awaitControlPlaneIfUnknown(r)
        replicaRegistered(r)
    }

    /// Declares silent workers dead, and routes their work elsewhere.
    func sweep() {
        for id in registry.silent(at: .now, limit: .milliseconds(configuration.livenessMs)) {
            forget(id, reason: "no heartbeat for \(configuration.livenessMs) ms")
        }
        dropLaggingReplicas()
        repairReplicas()
        rates.sample(counters)
        checkWorkerAbsence()
    }

    /// Takes for lost each replica that has left a write unanswered
    /// `--replica-lag-ms` after another replica of its shard committed it
    /// (``WriteTracker/laggards(at:limit:)``).
    func dropLaggingReplicas() {
        guard let ms = configuration.replicaLagMs, ms > 0 else { return }
        var seen: Set<String> = []
        for (worker, shard) in writes.laggards(at: .now, limit: .milliseconds(ms)) where seen.insert(worker).inserted {
            count(.replicasLagging)
            forget(worker, reason: "it left a write of shard \(shard) unanswered \(ms) ms after another replica committed it")
        }
    }

    func workerUnreachable(route: [Data]) {
        guard let wid = registry.byRoute[route] else { return }
        forget(wid, reason: "its connection is gone")
    }

    func forget(_ workerID: String, reason: String) {
        guard let w = registry.forget(workerID, reason: reason, at: Date()) else { return }
        if changeUnderWay { controlPlaneWork.signal() }
        splitRun?.workerLost(w.id)
        replicaLost(w.id)
        count(.workersLost)
        logger.warning("worker lost", metadata: ["worker": "\(w.id)", "worker.role": "\(w.role.rawValue)", "reason": "\(reason)"])
        // Its writes, deletes and declarations fail (see ``WriteTracker/workerLost(_:)``).
        perform(writes.workerLost(w.id))
        searchesLost(worker: w.id)
        // Queries: a shard of which nothing reached the client starts over
        // elsewhere; one the client has part of fails (``ShardScatter/lost(_:)``).
        // Every shard's merge is settled before any retry, so that a query
        // that ends in the middle releases no merge still waiting for a shard.
        for (key, shards) in inFlight.queriesLost(w.id) {
            inFlight.update(key) { rq in
                for s in shards {
                    if s.outcome == .retry { rq.merger?.reset(shard: s.shard) } else { rq.merger?.finish(shard: s.shard) }
                }
            }
            for s in shards where s.outcome == .retry { dispatch(key, shard: s.shard) }
            releaseMerged(key)
            finishQueryIfDone(key)
            flushHeldBatch(key)
        }
    }
}
